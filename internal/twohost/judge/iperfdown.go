package judge

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/iperf3"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// serverEvidence is what an iperf3 server said of its sending in a
// download: from its results, its retransmissions; from its output, per
// interval, its cwnd (and with -J its RTT). Unknown values are -1.
type serverEvidence struct {
	json      bool
	intervals int
	bytes     int64
	retrans   int64         // over the whole test
	steadyRe  int64         // over the second half of its intervals
	cwnd      int64         // median over the second half, bytes
	rtt       time.Duration // median over the second half
}

// evidenceOf reads one stream's server-side evidence.
func evidenceOf(r *iperf3.Result, s iperf3.Stream) serverEvidence {
	e := serverEvidence{json: r.ServerOutputJSON, bytes: s.ServerBytes, retrans: s.ServerRetransmits, steadyRe: -1, cwnd: -1, rtt: -1}
	var ivs []iperf3.Interval
	for _, iv := range s.Intervals {
		if iv.Sender && !iv.Omitted {
			ivs = append(ivs, iv)
		}
	}
	e.intervals = len(ivs)
	var cwnds []int64
	var rtts []time.Duration
	for _, iv := range ivs[len(ivs)/2:] {
		if iv.Retransmits >= 0 {
			e.steadyRe = max(e.steadyRe, 0) + iv.Retransmits
		}
		if iv.SndCwnd > 0 {
			cwnds = append(cwnds, iv.SndCwnd)
		}
		if iv.RTT > 0 {
			rtts = append(rtts, iv.RTT)
		}
	}
	if len(cwnds) > 0 {
		slices.Sort(cwnds)
		e.cwnd = cwnds[len(cwnds)/2]
	}
	if len(rtts) > 0 {
		e.rtt = median(rtts)
	}
	if e.retrans < 0 && e.steadyRe >= 0 {
		e.retrans = 0
		for _, iv := range ivs {
			e.retrans += max(iv.Retransmits, 0)
		}
	}
	return e
}

// known says what the server's evidence shows, for the limit's text.
func (e serverEvidence) known() string {
	var k []string
	if e.retrans >= 0 {
		k = append(k, fmt.Sprintf("it retransmitted %d segments", e.retrans))
	}
	if e.cwnd > 0 {
		k = append(k, "its cwnd was "+units.FormatBytes(float64(e.cwnd)))
	}
	if e.rtt > 0 {
		k = append(k, "its RTT "+units.FormatDuration(e.rtt.Round(100*time.Microsecond)))
	}
	if len(k) == 0 {
		return "the server sent nothing of its sending"
	}
	return "the server said " + strings.Join(k, ", ")
}

// iperfDownload judges the download: this host's receiving socket by
// test URL's rules (JudgeURL), then, where those leave the far end or the
// path, the server's own evidence.
func (d *judging) iperfDownload(p IperfPhase, rtt time.Duration, rateBps float64) testdoc.Direction {
	s0 := p.Result.Streams[0]
	u, _ := JudgeURL(&URLRaw{URL: d.Server, Remote: s0.Remote, Started: d.Started, Connect: p.Connect, Duration: p.Result.Elapsed,
		Bytes: s0.Bytes, Samples: p.Recv, Client: d.Hosts.Client}, rateBps)
	e := evidenceOf(p.Result, s0)
	dir := testdoc.Direction{Name: wire.PhaseDownload, Sender: testdoc.HostServer, Receiver: testdoc.HostClient, ThroughputBps: u.SteadyBps, RTTS: u.LoadedRTT}
	if e.rtt > 0 {
		dir.RTTS = e.rtt.Seconds()
	}
	j := diagnose.JudgeReceiver(urlJudging{u}.view(secsDur(u.LoadedRTT), rateBps, e.report(rtt)))
	dir.Limit = downloadLimit(u, e, j.Held, rtt)
	verdict := j.Verdict.Verdict
	var last testdoc.URLSample
	if n := len(p.Recv); n > 0 {
		last = p.Recv[n-1]
	}
	dir.Flow = flows.Flow{Local: s0.Local, Remote: s0.Remote, State: "established", Direction: flows.DirReceive, Interval: u.DurationS,
		BytesReceived: s0.Bytes, ThroughputBps: u.SteadyBps, RTT: dir.RTTS, MinRTT: last.MinRTT, CwndBytes: max(e.cwnd, 0),
		SndWndBytes: u.MaxWindowBytes, RcvSpaceBytes: last.RcvSpace, InflightBytes: int64(u.InFlightBytes), Retrans: max(e.retrans, 0),
		Verdict: j.Verdict}
	if verdict == diagnose.SlowStart {
		dir.Flow.Fix = "test longer (--duration): the flow had not left slow start"
	} else if dir.Limit.Host == testdoc.HostServerOrPath || dir.Limit.Host == testdoc.HostServer {
		dir.Flow.Fix = "run longhaul serve on the server and longhaul test against it: it names the server's setting or the path's cause"
	} else if verdict == diagnose.LossLimited {
		dir.Flow.Fix = "the network: find the link that drops packets (interface errors, a policer, a congested hop); a sender with bbr holds its rate through random loss"
	}
	if d.Hosts.Client != nil && rtt > 0 {
		dir.Model = testdoc.Model{ReceiverWindowBytes: float64(u.WindowCeilingBytes), ReceiverCeilingBps: pathmodel.WindowCeiling(float64(u.WindowCeilingBytes), rtt),
			ReceiverSettings: "net.ipv4.tcp_rmem " + d.Hosts.Client.Sysctls["net.ipv4.tcp_rmem"], SenderSettings: "not known (iperf3 server)",
			Note: fmt.Sprintf("the iperf3 server's settings are not known; this host's receive buffer allows %s at %s",
				units.FormatRate(pathmodel.WindowCeiling(float64(u.WindowCeilingBytes), rtt)), units.FormatDuration(rtt.Round(100*time.Microsecond)))}
	} else {
		dir.Model = testdoc.Model{Note: "no model: this host's snapshot or the RTT is missing"}
	}
	if l, ok := shortPath(dir, rtt); ok && dir.Limit.Host != testdoc.HostClient {
		dir.Limit = l
	}
	dir.Headline = d.headline(dir)
	return dir
}

// report is what the iperf3 server said of its sending, for
// diagnose.JudgeReceiver (minRTT: the path's least RTT, as this end
// measured it).
func (e serverEvidence) report(minRTT time.Duration) *diagnose.SenderReport {
	return &diagnose.SenderReport{Retrans: e.retrans, Bytes: e.bytes, Cwnd: e.cwnd, RTT: max(e.rtt, 0), MinRTT: minRTT, Known: e.known()}
}

// downloadLimit names the host where the receiver's judgement (held)
// placed the download's limit: test URL's limit, unless the server's
// evidence told the far end or the path apart.
func downloadLimit(u *testdoc.URLDoc, e serverEvidence, held string, minRTT time.Duration) testdoc.Limit {
	open := fmt.Sprintf("this host's window was open (%s in flight of a %s window)", units.FormatBytes(u.InFlightBytes), units.FormatBytes(float64(u.MaxWindowBytes)))
	loaded := secsDur(u.LoadedRTT)
	if e.rtt > 0 {
		loaded = e.rtt
	}
	switch held {
	case diagnose.HeldByPathLoss:
		text := fmt.Sprintf("the path: packet loss holds the iperf3 server's congestion window down: it retransmitted %d segments (%.2g%% of its data, enough to hold a Reno or CUBIC flow near %s at %s)",
			e.retrans, 100*diagnose.SegmentShare(e.retrans, e.bytes, 0), units.FormatRate(u.SteadyBps), units.FormatDuration(loaded.Round(100*time.Microsecond)))
		if e.cwnd > 0 {
			text += fmt.Sprintf(", its cwnd %s", units.FormatBytes(float64(e.cwnd)))
		}
		return testdoc.Limit{Host: testdoc.HostPath, Text: text + "; " + open}
	case diagnose.HeldBySender:
		return testdoc.Limit{Host: testdoc.HostServer, Text: fmt.Sprintf("the iperf3 server's sending side: its congestion window stayed at %s, under half the %s window this host advertised, and it lost too little for the path to hold it (%d segments): its send buffer (net.ipv4.tcp_wmem there, or iperf3 -w) or its congestion control holds it; which of them is not seen from here",
			units.FormatBytes(float64(e.cwnd)), units.FormatBytes(float64(u.MaxWindowBytes)), max(e.retrans, 0))}
	case diagnose.HeldByPathQueue:
		return testdoc.Limit{Host: testdoc.HostPath, Text: fmt.Sprintf("the path: a queue stood at its bottleneck (the server's RTT %s against the least %s) and the flow filled it; %s",
			units.FormatDuration(e.rtt.Round(100*time.Microsecond)), units.FormatDuration(minRTT.Round(100*time.Microsecond)), open)}
	case diagnose.HeldBySenderOrPath:
		return testdoc.Limit{Host: testdoc.HostServerOrPath, Text: fmt.Sprintf("the iperf3 server's send side or the path's rate: %s; %s; longhaul serve there tells them apart", open, e.known())}
	}
	return u.Limit
}
