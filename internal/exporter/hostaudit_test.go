package exporter

import (
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/audit"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// TestHostFromPeerPaths: a host whose tcp_wmem max is 4 MiB (the
// fixture's Ubuntu 20.04 defaults) is only "info" to the audit with no
// path, which LonghaulAuditCritical never sees; against a peer group's
// 170 ms, 1 Gbit/s path the same setting is critical, labelled with the
// group, while a short path adds nothing and the findings the path does
// not change are not repeated per group.
func TestHostFromPeerPaths(t *testing.T) {
	snap, err := snapshot.Gather(snapshot.Options{Root: "../../testdata/hosts/ubuntu-2004"})
	if err != nil {
		t.Fatal(err)
	}
	find := func(h Host, id, peer string) (audit.Severity, bool) {
		for _, f := range h.Findings {
			if f.ID == id && f.Peer == peer {
				return f.Severity, true
			}
		}
		return "", false
	}
	base := HostFrom(snap, nil)
	if s, ok := find(base, "tcp-wmem-max", ""); !ok || s == audit.Crit {
		t.Fatalf("no path: tcp-wmem-max %q (found %v), want below crit", s, ok)
	}
	h := HostFrom(snap, []PeerPath{{Group: "sin", RTT: 170 * time.Millisecond, RateBps: 1e9}, {Group: "lan", RTT: time.Millisecond, RateBps: 1e9}})
	if s, ok := find(h, "tcp-wmem-max", "sin"); !ok || s != audit.Crit {
		t.Errorf("sin (170 ms, 1 Gbit/s): tcp-wmem-max %q (found %v), want crit", s, ok)
	}
	if s, ok := find(h, "tcp-wmem-max", ""); !ok || s == audit.Crit {
		t.Errorf("the path-less finding changed: %q (found %v)", s, ok)
	}
	for _, f := range h.Findings {
		if f.Peer == "lan" && f.Severity == audit.Crit {
			t.Errorf("lan (1 ms): %s is crit", f.ID)
		}
	}
	n := map[string]int{}
	for _, f := range h.Findings {
		n[f.Peer]++
	}
	if n[""] != len(base.Findings) || n["sin"] == 0 || n["sin"] >= n[""] {
		t.Errorf("findings per peer %v (%d without a path): a path's findings are those it adds or changes", n, len(base.Findings))
	}
}
