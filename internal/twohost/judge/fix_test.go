package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Each direction's fix is the plan's item for the setting that limited
// it, with the plan's number, never a size of the verdict's own (which
// was 10 Gbit/s at the flow's RTT without a rate).
func TestDirectionFixIsThePlans(t *testing.T) {
	small, big := "4096 16384 131072", "4096 131072 33554432"
	rtt := 50 * time.Millisecond
	tests := []struct {
		name      string
		client    string
		phase     PhaseRaw
		opt       JudgeOptions
		want      string
		forbidden string
	}{
		{
			name: "client receive buffer, planned", client: small,
			phase: phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 13e6, RTT: rtt, Flight: 84000, RwndShare: 0.95, Ssthresh: 1 << 20}),
			opt:   JudgeOptions{RateBps: 100e6},
			want:  "the client's plan: net.ipv4.tcp_rmem: 4096 16384 131072 -> ",
		},
		{
			name: "window-bound at the path's rate", client: big,
			phase: phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 94e6, RTT: 60 * time.Millisecond, Flight: 700000, RwndShare: 0.7, Ssthresh: 600000}),
			opt:   JudgeOptions{RateBps: 100e6},
			want:  "nothing to change on the hosts", forbidden: "tcp_rmem",
		},
		{
			name: "no rate, no plan: no size", client: small,
			phase: phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 13e6, RTT: rtt, Flight: 84000, RwndShare: 0.95, Ssthresh: 1 << 20}),
			want:  "raise net.ipv4.tcp_rmem's maximum on the client; no plan sizes it", forbidden: "Gbit/s",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Judge(rawWith(host(tc.client, big), host(big, big), tc.phase), tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			fix := d.Directions[0].Flow.Fix
			if !strings.HasPrefix(fix, tc.want) || (tc.forbidden != "" && strings.Contains(fix, tc.forbidden)) {
				t.Errorf("fix %q, want it to start %q without %q", fix, tc.want, tc.forbidden)
			}
			if d.Plans != nil {
				for _, it := range d.Plans.Client.Items {
					if it.Key == "net.ipv4.tcp_rmem" && !strings.HasSuffix(fix, it.New) {
						t.Errorf("fix %q does not end with the plan's %s", fix, it.New)
					}
				}
			}
			if len(d.Fix) == 0 || d.Fix[0] != "fix for the download: "+fix {
				t.Errorf("document fix lines %q do not start with the direction's fix", d.Fix)
			}
		})
	}
}

func TestSecs(t *testing.T) {
	for in, want := range map[float64]string{0.1000449: "100 ms", 0.000031: "31 µs", 0: "0 s", 0.0012345: "1.2 ms", 2.5: "2.5 s"} {
		if got := secs(in); got != want {
			t.Errorf("secs(%g) = %q, want %q", in, got, want)
		}
	}
}
