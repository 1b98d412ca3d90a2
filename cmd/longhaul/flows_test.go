package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestIntegrationFlows runs iperf3 over an emulated 50 ms / 100 Mbit/s
// path and, in the middle of the transfer, longhaul flows in the client's
// namespace: the live verdict must name the limit each case builds.
func TestIntegrationFlows(t *testing.T) {
	bin, prefix := emulateEnv(t, "iperf3")
	cases := []struct {
		name      string
		path      []string // extra emulate flags
		iperf     string   // extra iperf3 client flags
		direction string
		verdict   string // "" for a receiving socket
		minShare  float64
	}{
		{
			// 256 KiB of receive buffer holds the window near 170 kB: a
			// quarter of the BDP.
			name:      "rwnd-limited",
			path:      []string{"--server-sysctl", "net.ipv4.tcp_rmem=4096 131072 262144"},
			direction: "send", verdict: "rwnd-limited", minShare: 0.8,
		},
		{
			// The application paces itself at 5 Mbit/s.
			name: "app-limited", iperf: "-b 5M",
			direction: "send", verdict: "app-limited", minShare: 0.5,
		},
		{
			// iperf3 -R: the client receives; the sender has the verdict.
			name: "receiving", iperf: "-R",
			direction: "receive",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := fmt.Sprintf("iperf3 -c 198.18.0.2 -t 5 %s >/dev/null & sleep 2.5; %s flows --json --port 5201; wait", tc.iperf, bin)
			args := append([]string{"emulate", "--prefix", prefix, "--rtt", "50ms", "--rate", "100Mbit/s", "--cc", "cubic"}, tc.path...)
			args = append(args, "--server", "iperf3 -s -1", "--", "sh", "-c", script)
			out, _ := runEmulated(t, bin, args...)
			var doc struct {
				Schema string `json:"schema"`
				Flows  []struct {
					Remote        string             `json:"remote"`
					Direction     string             `json:"direction"`
					Verdict       string             `json:"verdict"`
					Share         float64            `json:"share"`
					ThroughputBps float64            `json:"throughput_bps"`
					RTT           float64            `json:"rtt_s"`
					Shares        map[string]float64 `json:"shares"`
					Fix           string             `json:"fix"`
				} `json:"flows"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("flows --json: %v\n%s", err, out)
			}
			// The data connection; iperf3's control connection is idle.
			if doc.Schema != "longhaul.flows/v1" || len(doc.Flows) != 1 {
				t.Fatalf("want one flow in a longhaul.flows/v1 document:\n%s", out)
			}
			f := doc.Flows[0]
			t.Logf("%s: %s %s (%.0f%%) %.1f Mbit/s rtt %.1f ms %v", tc.name, f.Direction, f.Verdict, 100*f.Share, f.ThroughputBps/1e6, 1e3*f.RTT, f.Shares)
			if f.Remote != "198.18.0.2:5201" || f.Direction != tc.direction {
				t.Fatalf("flow to %s, direction %s; want 198.18.0.2:5201, %s", f.Remote, f.Direction, tc.direction)
			}
			if f.ThroughputBps <= 0 || f.RTT < 0.049 {
				t.Errorf("throughput %.0f bit/s, rtt %.4f s: want data moving over a >= 50 ms path", f.ThroughputBps, f.RTT)
			}
			if tc.verdict != "" && (f.Verdict != tc.verdict || f.Share < tc.minShare) {
				t.Errorf("verdict %s (%.0f%%), want %s (>= %.0f%%)", f.Verdict, 100*f.Share, tc.verdict, 100*tc.minShare)
			}
			if tc.verdict == "rwnd-limited" && !strings.Contains(f.Fix, "tcp_rmem") {
				t.Errorf("fix does not name tcp_rmem: %s", f.Fix)
			}
		})
	}
}
