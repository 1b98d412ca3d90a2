package judge

import (
	"fmt"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// smallPeerWindow: a peer window below this never grew past what the
// kernel advertises on a fresh connection with the default tcp_rmem
// (about 64 KiB), so autotuning was off: the server's application set
// SO_RCVBUF (nginx's listen ... rcvbuf=, or a setsockopt in its code),
// which pins the buffer; a larger window is its tcp_rmem's maximum or a
// larger SO_RCVBUF.
const smallPeerWindow = 64 << 10

// judgeUpload explains an upload to a URL from this host's sending
// socket: flows.Judge over the steady half (the second half of the time
// the socket moved data, as test judges a direction), then the host and
// the setting behind the verdict. The server's receive window is seen
// here as the peer's advertised window, so no capture is needed to name
// it; the server's settings themselves are not seen.
func judgeUpload(raw *URLRaw, rateBps float64) *testdoc.URLDoc {
	d := urlJudging{&testdoc.URLDoc{Schema: testdoc.URLSchema, Started: raw.Started, Direction: testdoc.URLUpload, URL: raw.URL, Remote: raw.Remote, Status: raw.Status,
		Method: raw.Method, BodyBytes: raw.BodySize, Bytes: raw.Bytes, Complete: raw.Complete, DurationS: raw.Duration.Seconds(),
		ConnectS: raw.Connect.Seconds(), Client: raw.Client, Samples: []testdoc.URLSample{}, SendSamples: []results.Sample{},
		Notes: append([]string(nil), raw.Notes...)}}
	for _, s := range raw.Sent {
		d.SendSamples = append(d.SendSamples, flows.ResultSample(s.T, testdoc.HostClient, s.Sock))
	}
	if raw.Duration > 0 {
		d.ThroughputBps = float64(raw.Bytes) * 8 / raw.Duration.Seconds()
	}
	d.SteadyBps, d.LoadedRTT = d.ThroughputBps, raw.Connect.Seconds()
	if n := len(raw.Sent); n > 0 {
		d.Retrans = raw.Sent[n-1].Sock.Retrans
	}
	half := sendingHalf(raw.Sent)
	var rtt time.Duration
	if len(half) >= 2 {
		f := uploadFlow(half, rateBps)
		d.Flow = &f
		d.SteadyBps = f.ThroughputBps
		rtts := make([]time.Duration, 0, len(half))
		for _, s := range half {
			rtts = append(rtts, s.Sock.RTT)
			d.PeerWindowBytes = max(d.PeerWindowBytes, s.Sock.SndWnd)
		}
		rtt = median(rtts)
		d.LoadedRTT = rtt.Seconds()
	}
	if d.LoadedRTT > 0 {
		d.Rounds = d.DurationS / d.LoadedRTT
	}
	d.InFlightBytes = d.SteadyBps / 8 * d.LoadedRTT
	d.SendCeilingBytes = sendCeiling(raw, rtt)
	d.Limit = d.uploadLimit(rtt)
	if l := d.Limit.Host; l != testdoc.HostTest && l != "unknown" && diagnose.WireAtPathRate(d.SteadyBps, rateBps) {
		// At the path's rate nothing on either end held it back,
		// whatever the window did.
		d.Limit = d.rateLimit(rateBps)
	}
	d.Headline = fmt.Sprintf("upload of %s in %s (%s steady), RTT %s: limited by %s", units.FormatBytes(float64(d.Bytes)), secs(d.DurationS),
		units.FormatRate(d.SteadyBps), units.FormatDuration(rtt.Round(100*time.Microsecond)), d.Limit.Text)
	d.planFor(rtt, rateBps)
	d.Fix = d.uploadFix(rtt, rateBps)
	return d.URLDoc
}

// uploadFlow is flows.Judge of the sending socket between the first and
// the last sample of the steady half, with the loss track of the samples
// in between (which names random loss, a shallow buffer or bufferbloat)
// and their median smoothed RTT as the RTT under load.
func uploadFlow(half []flows.Sample, rateBps float64) flows.Flow {
	first, last := half[0], half[len(half)-1]
	tr := flows.NewLossTrack(first.Sock)
	rtts := make([]time.Duration, 0, len(half))
	for _, s := range half {
		rtts = append(rtts, s.Sock.RTT)
		if s.T > first.T {
			tr.Add(s.Sock)
		}
	}
	dt := time.Duration((last.T - first.T) * float64(time.Second))
	return flows.Judge(first.Sock, last.Sock, dt, flows.Options{RateBps: rateBps, HighRTT: median(rtts),
		Tracks: map[string]*flows.LossTrack{last.Sock.Key(): tr}})
}

// sendCeiling is what this host's tcp_wmem lets one flow keep in flight
// (the path model's sender side), 0 when unknown.
func sendCeiling(raw *URLRaw, rtt time.Duration) int64 {
	if raw.Client == nil || rtt <= 0 {
		return 0
	}
	in := raw.Client.ModelInput()
	// The server's side is not seen: a receive buffer that limits nothing.
	in.Rmem, in.CoreRmemMax = pathmodel.Triple{Min: 4096, Default: 131072, Max: pathmodel.MaxBuffer}, pathmodel.MaxBuffer
	in.InitCwnd, in.InitRwnd, in.TCPMemPages, in.RAMBytes = 0, 0, [3]int64{}, 0
	in.RTT, in.RateBps = rtt, unknownRate
	r, err := pathmodel.Compute(in)
	if err != nil {
		return 0
	}
	return int64(r.Sender.WindowBytes)
}

// uploadLimit names what held the upload back, from the sender's
// verdict: the server's receive window (its size as advertised), this
// host's tcp_wmem, the path (its loss by the Mathis bound), the test's
// length, or this host's sending application.
func (d urlJudging) uploadLimit(rtt time.Duration) testdoc.Limit {
	if d.Flow == nil || rtt <= 0 {
		return testdoc.Limit{Host: testdoc.HostTest, Text: fmt.Sprintf("the upload's length: %s moved in fewer than three 100 ms samples, too short to judge; a larger --size or a longer --duration measures the path",
			units.FormatBytes(float64(d.Bytes)))}
	}
	f := *d.Flow
	if l, ok := shortPath(testdoc.Direction{Name: wire.PhaseUpload, Sender: testdoc.HostClient, Receiver: testdoc.HostServer, Flow: f, ThroughputBps: f.ThroughputBps}, rtt); ok {
		return l
	}
	at := units.FormatDuration(rtt.Round(100 * time.Microsecond))
	switch f.Verdict.Verdict {
	case diagnose.RwndLimited, diagnose.ZeroWindow:
		return d.serverWindow(f, rtt)
	case diagnose.SndbufLimited:
		wmem := ""
		if d.Client != nil {
			wmem = d.Client.Sysctls["net.ipv4.tcp_wmem"]
		}
		return testdoc.Limit{Host: testdoc.HostClient, Setting: "net.ipv4.tcp_wmem", Value: wmem,
			// The flight measured, not the model's: on the emulated path
			// the model put twice the flight a 64 KiB tcp_wmem held.
			Text: fmt.Sprintf("this host's send buffer: net.ipv4.tcp_wmem max %s held the flight at %s: %s at %s",
				maxIEC(wmem), units.FormatBytes(d.InFlightBytes), units.FormatRate(d.SteadyBps), at)}
	case diagnose.Bottleneck:
		return testdoc.Limit{Host: testdoc.HostPath, Text: "the path: the congestion window filled the bottleneck (" + strings.TrimSuffix(f.Verdict.Summary, ".") + ")"}
	case diagnose.LossLimited:
		l := testdoc.Limit{Host: testdoc.HostPath, Text: "the path: packet loss holds the congestion window down (" + d.mathis(f, rtt) + ")"}
		if f.Cause != nil {
			l.Setting, l.Text = f.Cause.Name, "the path: "+f.Cause.Text
		}
		return l
	case diagnose.SlowStart:
		return testdoc.Limit{Host: testdoc.HostTest, Text: "the upload's length: the flow was still in slow start; a larger --size or a longer --duration measures the path"}
	case diagnose.AppLimited:
		return testdoc.Limit{Host: testdoc.HostClient, Text: "this host's sending: longhaul's writes left the socket with nothing to send most of the time (CPU, TLS, or reading --body)"}
	}
	return testdoc.Limit{Host: "unknown", Text: "unknown: " + f.Verdict.Summary}
}

// serverWindow names the server's advertised window as the limit, with
// its size: a window pinned small is the application's SO_RCVBUF; an
// unscaled one (64 KB at most) is window scaling, off on this host (its
// setting) or on the server or stripped on the way.
func (d urlJudging) serverWindow(f flows.Flow, rtt time.Duration) testdoc.Limit {
	wnd := float64(d.PeerWindowBytes)
	at := units.FormatDuration(rtt.Round(100 * time.Microsecond))
	holds := fmt.Sprintf("the server's receive window (%s), which holds this upload at %s (one window per %s round trip)",
		units.FormatBytes(wnd), units.FormatRate(d.SteadyBps), at)
	if unscaled(f) {
		if d.Client != nil && windowScaling(d.Client) == 0 {
			return testdoc.Limit{Host: testdoc.HostClient, Setting: "net.ipv4.tcp_window_scaling", Value: "0",
				Text: holds + ": this host's net.ipv4.tcp_window_scaling is 0, so no window can exceed 64 KB"}
		}
		return testdoc.Limit{Host: testdoc.HostServer, Setting: "net.ipv4.tcp_window_scaling",
			Text: holds + ": the connection has no window scaling (off on the server, or stripped by a middlebox), so no window can exceed 64 KB"}
	}
	if wnd < smallPeerWindow {
		return testdoc.Limit{Host: testdoc.HostServer, Setting: "SO_RCVBUF",
			Text: holds + ": its application sets a small SO_RCVBUF (e.g. nginx listen ... rcvbuf=), which also stops receive autotuning"}
	}
	return testdoc.Limit{Host: testdoc.HostServer, Setting: "net.ipv4.tcp_rmem",
		Text: holds + ": the server's net.ipv4.tcp_rmem maximum (or an SO_RCVBUF its application sets) allows no larger window"}
}

// mathis says how much the upload lost over the steady half and the
// Mathis bound (MSS x 1.22 / (RTT x sqrt(p))) that loss puts on a Reno
// or CUBIC flow at this RTT.
func (d urlJudging) mathis(f flows.Flow, rtt time.Duration) string {
	segs := f.BytesSent / diagnose.TypicalMSS
	if segs <= 0 || f.Retrans <= 0 {
		return strings.TrimSuffix(f.Verdict.Summary, ".")
	}
	p := float64(f.Retrans) / float64(segs)
	bound := pathmodel.MathisBps(diagnose.TypicalMSS, rtt, p)
	return fmt.Sprintf("%d segments retransmitted of about %d in the steady half, %.2g%%: at %s the Mathis bound is %s",
		f.Retrans, segs, 100*p, units.FormatDuration(rtt.Round(100*time.Microsecond)), units.FormatRate(bound))
}

// uploadFix is what to change: this host's plan (or how to get one) when
// its send buffer limits, the server's setting when its window does, the
// path cause's fix, or nothing on the hosts.
func (d urlJudging) uploadFix(rtt time.Duration, rateBps float64) []string {
	l := d.Limit
	need := "twice the path's BDP (RTT x rate)"
	if rateBps > 0 && rtt > 0 {
		need = fmt.Sprintf("twice the BDP, %s at %s x %s", units.FormatBytes(2*pathmodel.Goodput(rateBps)/8*rtt.Seconds()),
			units.FormatDuration(rtt.Round(time.Millisecond)), units.FormatRate(rateBps))
	}
	switch {
	case l.Host == testdoc.HostServer && l.Setting == "SO_RCVBUF":
		return []string{"fix for the upload: on the server, remove its application's SO_RCVBUF (nginx: rcvbuf= on the listen line) so that autotuning grows the window, or set it to at least " + need + "; nothing to change on this host"}
	case l.Host == testdoc.HostServer && l.Setting == "net.ipv4.tcp_rmem":
		return []string{"fix for the upload: on the server, raise net.ipv4.tcp_rmem's maximum (and any SO_RCVBUF its application sets) to at least " + need + "; nothing to change on this host"}
	case l.Host == testdoc.HostServer:
		return []string{"fix for the upload: on the server, set net.ipv4.tcp_window_scaling=1, or find the middlebox that strips the option"}
	case l.Host == testdoc.HostPath && d.Flow != nil && d.Flow.Cause != nil:
		return []string{"fix for the path (" + d.Flow.Cause.Name + "): " + strings.Join(d.Flow.Cause.Fix, "; ")}
	case l.Host == testdoc.HostPath:
		return []string{"fix for the upload: nothing to change on the hosts"}
	case l.Setting == "net.ipv4.tcp_window_scaling":
		return []string{"fix for the upload: on this host, sysctl -w net.ipv4.tcp_window_scaling=1"}
	}
	return d.fixLines()
}
