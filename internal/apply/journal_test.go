package apply

import (
	"bytes"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/rtnl"
)

// oldJournalBody is a journal as longhaul wrote it while apply had its own
// route type (apply.RouteState): the route objects carry family, dst,
// gateway, dev, table, initcwnd and initrwnd only.
const oldJournalBody = `{
  "schema": "longhaul.journal/v1",
  "id": "0007",
  "created": "2026-03-14T15:09:26Z",
  "state": "applied",
  "root": "/",
  "kernel": "6.12.0",
  "plan_digest": "sha256:0123",
  "summary": "200ms 1Gbit/s",
  "persist": false,
  "sysctls": [],
  "routes": [
    {
      "existed": true,
      "before": {
        "family": "inet",
        "dst": "default",
        "gateway": "10.0.0.1",
        "dev": "eth0",
        "table": 254
      },
      "after": {
        "family": "inet",
        "dst": "default",
        "gateway": "10.0.0.1",
        "dev": "eth0",
        "table": 254,
        "initcwnd": 20
      }
    },
    {
      "existed": false,
      "before": {
        "family": "inet6",
        "dst": "2001:db8::/32",
        "table": 254
      },
      "after": {
        "family": "inet6",
        "dst": "2001:db8::/32",
        "gateway": "fe80::1",
        "dev": "eth0",
        "table": 254,
        "initcwnd": 20,
        "initrwnd": 20
      }
    }
  ],
  "files": []
}
`

func TestDecodeJournalOfRouteStateEra(t *testing.T) {
	body := []byte(oldJournalBody)
	j, err := decodeJournal(append(body, []byte(trailer+sumHex(body)+"\n")...))
	if err != nil {
		t.Fatal(err)
	}
	want := []RouteStep{
		{
			Existed: true,
			Before:  rtnl.Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254},
			After:   rtnl.Route{Family: "inet", Dst: "default", Gateway: "10.0.0.1", Dev: "eth0", Table: 254, InitCwnd: 20},
		},
		{
			Before: rtnl.Route{Family: "inet6", Dst: "2001:db8::/32", Table: 254},
			After:  rtnl.Route{Family: "inet6", Dst: "2001:db8::/32", Gateway: "fe80::1", Dev: "eth0", Table: 254, InitCwnd: 20, InitRwnd: 20},
		},
	}
	if diff := cmp.Diff(want, j.Routes); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
}

// TestJournalRouteFields checks that a journal apply writes names a
// route's fields as journals always did, so that older binaries, which
// refuse unknown fields, can still roll it back.
func TestJournalRouteFields(t *testing.T) {
	r := journaled(rtnl.Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.1", Dev: "eth0", Table: 254,
		Protocol: "static", InitCwnd: 20, InitRwnd: 20, MTU: 1400, AdvMSS: 1360, Congctl: "bbr"})
	j := &Journal{Schema: JournalSchema, ID: "0001", Created: time.Unix(0, 0).UTC(), State: StateApplying,
		Routes: []RouteStep{{Existed: true, Before: r, After: r}}}
	b, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeJournal(b)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(j.Routes, back.Routes); diff != "" {
		t.Errorf("routes after a round trip (-want +got):\n%s", diff)
	}
	var raw struct {
		Routes []struct {
			After map[string]any `json:"after"`
		} `json:"routes"`
	}
	if err := json.Unmarshal(b[:bytes.LastIndex(b, []byte(trailer))], &raw); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k := range raw.Routes[0].After {
		got = append(got, k)
	}
	sort.Strings(got)
	want := []string{"dev", "dst", "family", "gateway", "initcwnd", "initrwnd", "table"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("route fields in the journal (-want +got):\n%s", diff)
	}
}
