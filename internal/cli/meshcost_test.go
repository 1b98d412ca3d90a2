package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// mesh-cost prints the estimate's figures, as text and as JSON.
func TestMeshCost(t *testing.T) {
	out, _, err := run(t, "mesh-cost", "--sites", "30", "--path", "50ms/100Mbit/s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"A full mesh of 30 sites: 870 probes every 5 min.",
		"3 phases of 2 s (40 round trips), about 13.15 s",
		"a probe                             63.89 MB",
		"The busiest target is probed 29 times every 5 min: 6.4 min of probes, 127% of the interval.",
		"cannot all run without overlap",
		"shortest interval that fits: 6.4 min; at most half busy, room for probes that collide to queue: 13 min",
		"Bytes a day: 533.6 GB to the busiest target",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("mesh-cost lacks %q:\n%s", want, out)
		}
	}
	js, _, err := run(t, "mesh-cost", "--sites", "30", "--topology", "hub", "--hubs", "2", "--interval", "15m", "--path", "50ms/100Mbit/s", "--json")
	var doc struct {
		Schema string  `json:"schema"`
		Paths  int     `json:"probes_per_interval"`
		Fits   bool    `json:"fits"`
		Probe  float64 `json:"probe_bytes"`
	}
	if err != nil || json.Unmarshal([]byte(js), &doc) != nil || doc.Schema != "longhaul.mesh-cost/v1" || doc.Paths != 58 || !doc.Fits || doc.Probe < 63e6 || doc.Probe > 64e6 {
		t.Errorf("--json: %v %+v\n%s", err, doc, js)
	}
}

func TestMeshCostBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--path", "50ms/1Gbit/s"}, "--sites N --path RTT/RATE"},
		{[]string{"--sites", "30"}, "--sites N --path RTT/RATE"},
		{[]string{"--sites", "30", "--path", "50ms"}, "write RTT/RATE"},
		{[]string{"--sites", "30", "--path", "fast/1Gbit/s"}, "write RTT/RATE"},
		{[]string{"--sites", "30", "--path", "50ms/1Gb"}, "write RTT/RATE"},
		{[]string{"--sites", "30", "--path", "20s/1Gbit/s"}, "--path: the RTT"},
		{[]string{"--sites", "1", "--path", "50ms/1Gbit/s"}, "--sites must be 2..10000"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--interval", "1s"}, "--interval"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--topology", "ring"}, "--topology must be"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--topology", "hub"}, "--hubs 1..29"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--peers", "3"}, "--peers is for --topology partial"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--probe-rounds", "0"}, "--probe-rounds"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--probe-phase", "1s"}, "--probe-phase"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "--probe-max-bytes", "-5MB"}, "--probe-max-bytes"},
		{[]string{"--sites", "30", "--path", "1s/1Gbit/s"}, "raise the scrape timeout"},
		{[]string{"--sites", "30", "--path", "50ms/1Gbit/s", "x"}, "takes no arguments"},
	} {
		_, _, err := run(t, append([]string{"mesh-cost"}, tc.args...)...)
		var stderr bytes.Buffer
		if code := ExitCode(err, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want 2 and one line naming %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
