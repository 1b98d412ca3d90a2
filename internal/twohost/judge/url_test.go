package judge

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// urlDownload is a receiver's samples: rate bits/s for secs seconds at rtt,
// advertising window bytes, with ooo segments out of order in all.
func urlDownload(rate float64, rtt time.Duration, window int64, secs float64, ooo int64) *URLRaw {
	raw := &URLRaw{URL: "http://198.18.0.2/big", Remote: "198.18.0.2:80", Status: "200 OK", Connect: rtt,
		Duration: time.Duration(secs * float64(time.Second)), Bytes: int64(rate * secs / 8)}
	for t := 0.0; t <= secs+1e-9; t += 0.1 {
		raw.Samples = append(raw.Samples, testdoc.URLSample{T: t, BytesReceived: int64(rate * t / 8), RcvWnd: window,
			RcvRTT: rtt.Seconds(), RTT: rtt.Seconds(), MinRTT: rtt.Seconds(), OutOfOrder: int64(float64(ooo) * t / secs)})
	}
	return raw
}

// The receiver's view names this host's tcp_rmem when the data in
// flight fills a window at what tcp_rmem allows, autotuning when the
// window filled but had not reached it, the far end or the path when the
// window was open, loss only when the out-of-order arrivals could hold
// the rate, and the transfer's length when it was over in a few round
// trips.
func TestJudgeURL(t *testing.T) {
	small := host("4096 131072 1048576", "4096 16384 4194304") // window ceiling ~ 512 KiB..1 MiB
	big := host("4096 131072 134217728", "4096 16384 4194304")
	rtt := 200 * time.Millisecond
	for _, tc := range []struct {
		name    string
		raw     *URLRaw
		client  string
		rate    float64
		host    string
		setting string
		inText  string
		plan    bool
	}{
		{"client tcp_rmem", urlDownload(0.98*(1<<20)*8/0.2, rtt, 1<<20, 20, 0), "small", 1e9, testdoc.HostClient, "net.ipv4.tcp_rmem", "tcp_rmem max 1 MiB", true},
		{"client tcp_rmem, no rate", urlDownload(0.98*(1<<20)*8/0.2, rtt, 1<<20, 20, 0), "small", 0, testdoc.HostClient, "net.ipv4.tcp_rmem", "tcp_rmem max 1 MiB", false},
		{"autotuning short of tcp_rmem", urlDownload(0.9*(8<<20)*8/0.2, rtt, 8<<20, 20, 0), "big", 0, testdoc.HostClient, "", "autotuning had grown it", false},
		{"window open", urlDownload(50e6, rtt, 64<<20, 20, 0), "big", 0, testdoc.HostServerOrPath, "", "send side", false},
		{"window open, a few out of order", urlDownload(50e6, rtt, 64<<20, 20, 3), "big", 0, testdoc.HostServerOrPath, "", "send side", false},
		{"window open, loss", urlDownload(5e6, rtt, 64<<20, 20, 500), "big", 0, testdoc.HostServerOrPath, "", "out of order", false},
		{"short", urlDownload(1e6, rtt, 64<<10, 1, 0), "big", 0, testdoc.HostTest, "", "round trips", false},
		// At the rate given as the path's: reached, not a limit of the
		// server or the path, whether the window was open or full.
		{"at --rate, window open", urlDownload(94e6, 50*time.Millisecond, 64<<20, 20, 0), "big", 100e6, testdoc.HostPath, "", "reached", false},
		{"at --rate, window full", urlDownload(94e6, 50*time.Millisecond, 600_000, 20, 0), "small", 100e6, testdoc.HostPath, "", "nothing to fix", false},
		{"below --rate", urlDownload(50e6, rtt, 64<<20, 20, 0), "big", 100e6, testdoc.HostServerOrPath, "", "send side", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.raw.Client = big
			if tc.client == "small" {
				tc.raw.Client = small
			}
			d, err := JudgeURL(tc.raw, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			if d.Limit.Host != tc.host || d.Limit.Setting != tc.setting || !strings.Contains(d.Limit.Text, tc.inText) {
				t.Errorf("limit %+v; want host %s, setting %q, text with %q (in flight %.0f of window %d, ceiling %d, rounds %.0f)",
					d.Limit, tc.host, tc.setting, tc.inText, d.InFlightBytes, d.MaxWindowBytes, d.WindowCeilingBytes, d.Rounds)
			}
			if (d.Plan != nil) != tc.plan {
				t.Errorf("plan %v; want one: %v", d.Plan != nil, tc.plan)
			}
			if d.Plan != nil && !raises(*d.Plan, "net.ipv4.tcp_rmem") {
				t.Errorf("the plan does not raise tcp_rmem: %+v", d.Plan.Items)
			}
			if tc.setting != "" && tc.rate == 0 && !strings.Contains(d.PlanHint, "--rtt 200ms") {
				t.Errorf("plan hint %q; want the plan command for 200ms", d.PlanHint)
			}
			var b bytes.Buffer
			testdoc.WriteURLText(&b, d)
			if !strings.Contains(b.String(), d.Limit.Text) {
				t.Errorf("text does not say the limit:\n%s", b.String())
			}
		})
	}
}

func raises(p plan.Plan, key string) bool {
	for _, it := range p.Items {
		if it.Key == key {
			return true
		}
	}
	return false
}
