package judge

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// sendSock is a sending socket's samples for an upload: rate bits/s for
// secs seconds at rtt, flight bytes in flight against the server's
// window wnd, with the shares of each 100 ms the kernel counted rwnd-
// and sndbuf-limited and busy; lossEvery > 0 retransmits lossSegs
// segments (at least 1) that often (in samples), in recovery.
type sendSock struct {
	rate                           float64
	rtt                            time.Duration
	flight, wnd, ssthresh          int64
	rwndShare, sndShare, busyShare float64
	lossEvery, lossSegs            int
	unscaled                       bool
	wmem                           string // this host's tcp_wmem ("": 4 MiB max)
}

func (st sendSock) raw(secs float64) *URLRaw {
	k := flows.Sock{Local: netip.MustParseAddrPort("198.18.0.1:40000"), Remote: netip.MustParseAddrPort("198.18.0.2:80"),
		State: "ESTABLISHED", MSS: 1448, Cwnd: max(2*st.flight, 14480), Ssthresh: st.ssthresh, SndWnd: st.wnd, WindowScale: !st.unscaled,
		RTT: st.rtt, MinRTT: st.rtt}
	wmem, segs := st.wmem, int64(max(st.lossSegs, 1))
	if wmem == "" {
		wmem = "4096 16384 4194304"
	}
	busy := st.busyShare
	if busy == 0 {
		busy = 1
	}
	raw := &URLRaw{Direction: testdoc.URLUpload, URL: "http://198.18.0.2/upload", Remote: "198.18.0.2:80", Status: "200 OK", Method: "POST",
		Connect: st.rtt, Duration: time.Duration(secs * float64(time.Second)), Bytes: int64(st.rate * secs / 8), Complete: true,
		Client: host("4096 131072 6291456", wmem)}
	raw.BodySize = raw.Bytes
	dt := 100 * time.Millisecond
	for i := 0; float64(i)*dt.Seconds() <= secs+1e-9; i++ {
		k.Inflight = st.flight
		if i > 0 {
			k.BytesAcked += int64(st.rate * dt.Seconds() / 8)
			k.Busy += time.Duration(busy * float64(dt))
			k.RwndLimited += time.Duration(st.rwndShare * float64(dt))
			k.SndbufLimited += time.Duration(st.sndShare * float64(dt))
			k.DataSegsOut += int64(st.rate*dt.Seconds()/8) / 1448
			k.CAState = 0
			if st.lossEvery > 0 && i%st.lossEvery == 0 {
				k.Retrans += segs
				k.BytesRetrans += segs * 1448
				k.CAState = 3
			}
		}
		raw.Sent = append(raw.Sent, flows.Sample{T: float64(i) * dt.Seconds(), Sock: k})
	}
	return raw
}

// The upload's judge names, from the sending socket alone: the server's
// receive window with its size (a small one its application's
// SO_RCVBUF, a large one its tcp_rmem, an unscaled one window scaling,
// this host's when its setting is off), this host's tcp_wmem (a plan
// with --rate, the plan command without), the path (loss with the
// Mathis bound), the test's length, this host's sending, and the path's
// rate reached.
func TestJudgeURLUpload(t *testing.T) {
	rtt := 35 * time.Millisecond
	for _, tc := range []struct {
		name      string
		raw       *URLRaw
		rate      float64
		host, set string
		inText    []string
		verdict   string
		plan      bool
		fix       string
	}{
		{"server SO_RCVBUF", sendSock{rate: 2896 * 8 / 0.035, rtt: rtt, flight: 2896, wnd: 2896, ssthresh: 1 << 20, rwndShare: 1}.raw(7),
			0, testdoc.HostServer, "SO_RCVBUF", []string{"the server's receive window (2.896 kB)", "at 661.9 kbit/s", "SO_RCVBUF", "rcvbuf="}, diagnose.RwndLimited, false, "fix for the upload: on the server"},
		{"server tcp_rmem", sendSock{rate: 3e6 * 8 / 0.035, rtt: rtt, flight: 3e6, wnd: 3e6, ssthresh: 1 << 30, rwndShare: 1}.raw(8),
			1e9, testdoc.HostServer, "net.ipv4.tcp_rmem", []string{"(3 MB)", "tcp_rmem maximum"}, diagnose.RwndLimited, false, "twice the BDP, 8.238 MB"},
		{"no window scaling", sendSock{rate: 65535 * 8 / 0.035, rtt: rtt, flight: 65535, wnd: 65535, ssthresh: 1 << 30, rwndShare: 1, unscaled: true}.raw(8),
			0, testdoc.HostServer, "net.ipv4.tcp_window_scaling", []string{"no window scaling"}, diagnose.RwndLimited, false, "tcp_window_scaling=1"},
		{"client tcp_wmem", sendSock{rate: 15e6, rtt: rtt, flight: 60000, wnd: 3e6, ssthresh: 1 << 20, sndShare: 0.95, wmem: "4096 16384 65536"}.raw(8),
			100e6, testdoc.HostClient, "net.ipv4.tcp_wmem", []string{"this host's send buffer: net.ipv4.tcp_wmem max 64 KiB held the flight at 65.62 kB: 15 Mbit/s"}, diagnose.SndbufLimited, true, "this host's plan"},
		{"client tcp_wmem, no rate", sendSock{rate: 15e6, rtt: rtt, flight: 60000, wnd: 3e6, ssthresh: 1 << 20, sndShare: 0.95, wmem: "4096 16384 65536"}.raw(8),
			0, testdoc.HostClient, "net.ipv4.tcp_wmem", []string{"tcp_wmem"}, diagnose.SndbufLimited, false, "--role server"},
		{"the path", sendSock{rate: 94e6, rtt: rtt, flight: 420000, wnd: 5e6, ssthresh: 300000}.raw(8),
			0, testdoc.HostPath, "", []string{"filled the bottleneck"}, diagnose.Bottleneck, false, "nothing to change"},
		// Loss: named from how the socket lost over the steady half
		// (flows' loss track), or by its rate and the Mathis bound when
		// the half is too short to tell.
		{"random loss", sendSock{rate: 5e6, rtt: rtt, flight: 20000, wnd: 5e6, ssthresh: 20000, lossEvery: 1}.raw(8),
			0, testdoc.HostPath, diagnose.CauseRandomLoss, []string{"Mathis bound"}, diagnose.LossLimited, false, "fix for the path (random-loss)"},
		{"shallow buffer", sendSock{rate: 5e6, rtt: rtt, flight: 20000, wnd: 5e6, ssthresh: 20000, lossEvery: 2, lossSegs: 10}.raw(8),
			0, testdoc.HostPath, diagnose.CauseShallowBuffer, []string{"shallow buffer"}, diagnose.LossLimited, false, "fix for the path (shallow-buffer)"},
		{"loss, short", sendSock{rate: 5e6, rtt: rtt, flight: 20000, wnd: 5e6, ssthresh: 20000, lossEvery: 1}.raw(1.2),
			0, testdoc.HostPath, "", []string{"packet loss", "retransmitted", "Mathis bound is"}, diagnose.LossLimited, false, "nothing to change"},
		{"slow start", sendSock{rate: 20e6, rtt: rtt, flight: 80000, wnd: 5e6}.raw(1),
			0, testdoc.HostTest, "", []string{"slow start"}, diagnose.SlowStart, false, ""},
		{"app", sendSock{rate: 1e6, rtt: rtt, flight: 3000, wnd: 5e6, ssthresh: 1 << 20, busyShare: 0.1}.raw(8),
			0, testdoc.HostClient, "", []string{"longhaul's writes"}, diagnose.AppLimited, false, ""},
		{"at --rate", sendSock{rate: 94e6, rtt: rtt, flight: 420000, wnd: 5e6, ssthresh: 300000}.raw(8),
			100e6, testdoc.HostPath, "", []string{"the upload ran at 94 Mbit/s"}, diagnose.Bottleneck, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := JudgeURL(tc.raw, tc.rate)
			if err != nil {
				t.Fatal(err)
			}
			if d.Direction != testdoc.URLUpload || d.Flow == nil || d.Flow.Verdict.Verdict != tc.verdict {
				t.Fatalf("direction %q, flow %+v; want an upload judged %s", d.Direction, d.Flow, tc.verdict)
			}
			if d.Limit.Host != tc.host || d.Limit.Setting != tc.set {
				t.Errorf("limit %+v; want host %s, setting %q", d.Limit, tc.host, tc.set)
			}
			for _, s := range tc.inText {
				if !strings.Contains(d.Limit.Text, s) {
					t.Errorf("limit %q lacks %q", d.Limit.Text, s)
				}
			}
			if (d.Plan != nil) != tc.plan || (d.Plan != nil && !raises(*d.Plan, "net.ipv4.tcp_wmem")) {
				t.Errorf("plan %+v; want one raising tcp_wmem: %v", d.Plan, tc.plan)
			}
			if fix := strings.Join(d.Fix, "\n"); !strings.Contains(fix, tc.fix) {
				t.Errorf("fix %q lacks %q", fix, tc.fix)
			}
			var b bytes.Buffer
			testdoc.WriteURLText(&b, d)
			if !strings.Contains(b.String(), d.Limit.Text) || !strings.Contains(b.String(), "--upload") {
				t.Errorf("text does not say the limit:\n%s", b.String())
			}
		})
	}
}

// This host's tcp_window_scaling=0 is its own setting, not the server's.
func TestJudgeURLUploadScalingOffHere(t *testing.T) {
	raw := sendSock{rate: 65535 * 8 / 0.035, rtt: 35 * time.Millisecond, flight: 65535, wnd: 65535, ssthresh: 1 << 30, rwndShare: 1, unscaled: true}.raw(8)
	raw.Client.Sysctls["net.ipv4.tcp_window_scaling"] = "0"
	d, _ := JudgeURL(raw, 0)
	if d.Limit.Host != testdoc.HostClient || d.Limit.Setting != "net.ipv4.tcp_window_scaling" || d.Limit.Value != "0" {
		t.Errorf("limit %+v; want this host's tcp_window_scaling", d.Limit)
	}
}

// Too few samples to judge names the test's length; the document says
// upload, keeps its samples and an empty download series, and reads
// back as JSON.
func TestJudgeURLUploadShortAndDocument(t *testing.T) {
	raw := sendSock{rate: 1e6, rtt: 35 * time.Millisecond, flight: 3000, wnd: 5e6}.raw(0.15)
	d, _ := JudgeURL(raw, 0)
	if d.Limit.Host != testdoc.HostTest || d.Flow != nil || !strings.Contains(d.Limit.Text, "too short") {
		t.Errorf("limit %+v, flow %v; want the test's length", d.Limit, d.Flow)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"direction":"upload"`, `"method":"POST"`, `"send_samples":[{`, `"samples":[]`, `"schema":"` + testdoc.URLSchema + `"`} {
		if !bytes.Contains(b, []byte(s)) {
			t.Errorf("document lacks %s:\n%s", s, b)
		}
	}
	down, _ := JudgeURL(urlDownload(10e6, 50*time.Millisecond, 1<<20, 10, 0), 0)
	if down.Direction != testdoc.URLDownload || down.SendSamples != nil {
		t.Errorf("download: direction %q, %d send samples", down.Direction, len(down.SendSamples))
	}
	if got := units.FormatBytes(2896); !strings.Contains("(2.896 kB)", got) {
		t.Errorf("FormatBytes(2896) = %s", got)
	}
}
