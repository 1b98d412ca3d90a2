package judge

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/iperf3"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// recv is a download's receive side as this host samples it: rate bits/s
// at rtt with the window it advertised.
func recvSamples(rate float64, rtt time.Duration, wnd int64, secs float64) []testdoc.URLSample {
	var out []testdoc.URLSample
	var got int64
	for i := 0; float64(i)*0.1 <= secs; i++ {
		out = append(out, testdoc.URLSample{T: float64(i) * 0.1, BytesReceived: got, RcvWnd: wnd, RcvSpace: wnd, RcvRTT: rtt.Seconds(), RTT: rtt.Seconds(), MinRTT: rtt.Seconds()})
		got += int64(rate * 0.1 / 8)
	}
	return out
}

// serverStream is one stream as an iperf3 server reports it, sending:
// per-second intervals with its cwnd, RTT (-1: plain -s) and
// retransmissions.
func serverStream(bytes int64, cwnd int64, rtt time.Duration, retransPerSec int64, secs int) iperf3.Stream {
	s := iperf3.Stream{ID: 1, Local: "198.18.0.1:40000", Remote: "198.18.0.2:5201", Bytes: bytes, ServerBytes: bytes, ServerRetransmits: retransPerSec * int64(secs)}
	for i := range secs {
		s.Intervals = append(s.Intervals, iperf3.Interval{Start: time.Duration(i) * time.Second, End: time.Duration(i+1) * time.Second,
			Bytes: bytes / int64(secs), Sender: true, Retransmits: retransPerSec, SndCwnd: cwnd, SndWnd: -1, RTT: rtt, RTTVar: -1})
	}
	return s
}

func iperfDownPhase(rcv []testdoc.URLSample, s iperf3.Stream, asJSON bool) IperfPhase {
	r := &iperf3.Result{Reverse: true, Elapsed: 5 * time.Second, Streams: []iperf3.Stream{s}, ServerOutputJSON: asJSON}
	if !asJSON {
		r.ServerOutputText = "[  5] ..."
	}
	return IperfPhase{Name: wire.PhaseDownload, Result: r, Recv: rcv, Connect: 50 * time.Millisecond}
}

func iperfUpPhase(st stream, peerWnd int64) IperfPhase {
	ss := st.Samples(5)
	if peerWnd > 0 {
		for i := range ss {
			ss[i].Sock.SndWnd = peerWnd
		}
	}
	return IperfPhase{Name: wire.PhaseUpload, Result: &iperf3.Result{Elapsed: 5 * time.Second, Streams: []iperf3.Stream{{ID: 1, ServerRetransmits: -1}}},
		Samples: ss, Connect: 50 * time.Millisecond}
}

// The judge glue against hand-made samples: each case's limit by host,
// setting and the words that name it.
func TestJudgeIperf3(t *testing.T) {
	rtt := 50 * time.Millisecond
	small, big := "4096 131072 262144", "4096 131072 33554432"
	window := int64(262144)
	windowRate := float64(window) * 8 / rtt.Seconds()
	cases := []struct {
		name    string
		client  [2]string // rmem, wmem
		phase   IperfPhase
		rate    float64
		dir     string
		host    string
		setting string
		words   []string
	}{
		{"upload held by the server's window", [2]string{big, big}, iperfUpPhase(stream{Port: 1, Rate: 28e6, RTT: rtt, Flight: 180000, RwndShare: 0.9}, 180000), 0, wire.PhaseUpload, testdoc.HostServer, "net.ipv4.tcp_rmem", []string{"the iperf3 server's receive window (180 kB)"}},
		{"upload held by this host's tcp_wmem", [2]string{big, "4096 16384 262144"}, iperfUpPhase(stream{Port: 1, Rate: 30e6, RTT: rtt, Flight: 190000, SndShare: 0.9}, 0), 0, wire.PhaseUpload, testdoc.HostClient, "net.ipv4.tcp_wmem", []string{"send buffer"}},
		{"download held by this host's tcp_rmem", [2]string{small, big}, iperfDownPhase(recvSamples(0.95*windowRate, rtt, window, 5), serverStream(int64(0.95*windowRate*5/8), 300000, rtt, 0, 5), true), 100e6, wire.PhaseDownload, testdoc.HostClient, "net.ipv4.tcp_rmem", []string{"this host's receive buffer"}},
		{"download held by the path's loss", [2]string{big, big}, iperfDownPhase(recvSamples(8e6, rtt, 4<<20, 5), serverStream(5e6, 60000, rtt, 60, 5), true), 0, wire.PhaseDownload, testdoc.HostPath, "", []string{"packet loss", "retransmitted 300 segments"}},
		{"download held by the server's sending side", [2]string{big, big}, iperfDownPhase(recvSamples(10e6, rtt, 4<<20, 5), serverStream(6e6, 64000, rtt, 0, 5), true), 0, wire.PhaseDownload, testdoc.HostServer, "", []string{"congestion window stayed at 64 kB", "not seen from here"}},
		{"download from a plain server", [2]string{big, big}, iperfDownPhase(recvSamples(10e6, rtt, 4<<20, 5), serverStream(6e6, -1, -1, 0, 5), false), 0, wire.PhaseDownload, testdoc.HostServerOrPath, "", []string{"it retransmitted 0 segments"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := &IperfRaw{Server: "iperf3://198.18.0.2:5201", PhaseLength: 5 * time.Second, Client: host(c.client[0], c.client[1]), Phases: []IperfPhase{c.phase}}
			d, err := JudgeIperf3(raw, c.rate)
			if err != nil {
				t.Fatal(err)
			}
			if d.Schema != testdoc.Schema || len(d.Directions) != 1 || d.Directions[0].Name != c.dir {
				t.Fatalf("schema %s, directions %+v", d.Schema, d.Directions)
			}
			l := d.Directions[0].Limit
			if l.Host != c.host || l.Setting != c.setting {
				t.Fatalf("limit %+v; want host %s setting %q", l, c.host, c.setting)
			}
			for _, w := range c.words {
				if !strings.Contains(l.Text, w) {
					t.Errorf("limit %q does not say %q", l.Text, w)
				}
			}
			if c.host == testdoc.HostClient && c.rate > 0 && (d.Plans == nil || !strings.Contains(strings.Join(d.Fix, "\n"), "this host's plan")) {
				t.Errorf("no plan for this host: fix %q, notes %q", d.Fix, d.Notes)
			}
			var text strings.Builder
			testdoc.WriteText(&text, d)
			if strings.Contains(text.String(), "(0% of the steady half)") {
				t.Errorf("the text gives a share the judge did not measure:\n%s", text.String())
			}
			plain := strings.Contains(strings.Join(d.Notes, "\n"), "plain iperf3 -s")
			if want := c.dir == wire.PhaseDownload && !c.phase.Result.ServerOutputJSON; plain != want {
				t.Errorf("notes %q: plain server said %v, want %v", d.Notes, plain, want)
			}
		})
	}
}
