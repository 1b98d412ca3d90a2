package tcpflow

import (
	"math"
	"slices"
	"testing"
	"time"

	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

// The upload seed: the server advertises 2,920 bytes, the RTT is 35 ms,
// the client uploads 605 kB. Captured at either end, the verdict is the
// same and the RTT is the path's.
func TestSeedSmallRcvbufUpload(t *testing.T) {
	for _, vantage := range []string{"sender", "receiver", "middle"} {
		t.Run(vantage, func(t *testing.T) {
			c := newConv()
			c.Win = [2]uint16{64240, 2920}
			hsV := map[string]string{"sender": "client", "receiver": "server", "middle": "middle"}[vantage]
			handshake(c, ct.Opts{}.MSS(1460).SACKOK().WScale(7), ct.Opts{}.MSS(1412).SACKOK().WScale(0), 35*time.Millisecond, hsV)
			if vantage == "middle" {
				// Half the RTT on each side of the capture.
				for sent := 0; sent < 605_000; sent += 2824 {
					c.Data(client, 1412)
					c.Data(client, 1412)
					c.Advance(17500 * time.Microsecond)
					c.AckAll(server)
					c.Advance(17500 * time.Microsecond)
				}
			} else {
				windowed(c, client, 605_000, 2920, 1412, 35*time.Millisecond, vantage)
			}
			an := analyze(t, c, Options{})
			f := an.Flows[0]
			if f.Verdict.Verdict != diagnose.RwndLimited || f.Share < 0.9 {
				t.Errorf("verdict %s share %.2f, want rwnd-limited >= 0.9 (shares %v)", f.Verdict.Verdict, f.Share, f.Shares)
			}
			if f.RwndBytes != 2920 || !near(f.RTTSeconds, 0.035, 0.1) {
				t.Errorf("rwnd %d rtt %.4f, want 2920 and 35 ms", f.RwndBytes, f.RTTSeconds)
			}
			if !near(f.CeilingBps, 2920*8/0.035, 0.1) {
				t.Errorf("ceiling %.0f, want ~%.0f", f.CeilingBps, 2920*8/0.035)
			}
			if f.Sender != "198.18.0.1:50000" || f.Bytes < 605_000 {
				t.Errorf("sender %s bytes %d", f.Sender, f.Bytes)
			}
			wantVantage := map[string]string{"sender": "vantage-client", "receiver": "vantage-server", "middle": "vantage-middle"}[vantage]
			for _, fl := range []string{wantVantage, diagnose.FlagMSSClamped} {
				if !slices.Contains(f.Flags, fl) {
					t.Errorf("flags %v lack %s", f.Flags, fl)
				}
			}
			t.Logf("%s\n%s", f.Summary, f.Fix)
		})
	}
}

func TestRTTBucket(t *testing.T) {
	for _, ns := range []int64{1, 999, 1000, 1001, 1090, 1500, 20_346_598, 62_757_488, 1e9, 1e12, 1 << 62} {
		us := float64(ns) / 1e3
		want := 0
		if us > 1 {
			want = min(int(math.Log2(us)*8), nHist-1)
		}
		if got := rttBucket(ns); got != want {
			t.Errorf("rttBucket(%d) = %d, want %d", ns, got, want)
		}
	}
}

// A TSO sender's capture holds its retransmissions as super-packets: one
// frame of three segments resent after a timeout counts three
// retransmitted segments (as the stack's tcpi_total_retrans does), not
// one.
func TestRetransCountsSegmentsOfSuperPackets(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 40*time.Millisecond, "client")
	c.Win[server] = 500
	windowed(c, client, 200_000, 64_000, 1448, 40*time.Millisecond, "sender")
	una := c.Rcvd[server]
	c.Data(client, 3*1448)
	c.Advance(300 * time.Millisecond)
	c.Resend(client, una, 3*1448)
	c.Advance(40 * time.Millisecond)
	c.AckAll(server)
	d := analyze(t, c, Options{}).Flows[0].Directions[0]
	if d.Retrans.Total != 3 || d.Retrans.RTO != 3 {
		t.Errorf("retransmissions %+v; want 3 segments, all after a timeout", d.Retrans)
	}
}
