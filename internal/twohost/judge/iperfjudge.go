package judge

import (
	"fmt"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/iperf3"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// IperfRaw is what a test against an iperf3 server measured: this host's
// sockets and snapshot, and what the server reported of each phase.
type IperfRaw struct {
	Server      string // iperf3://host:port
	Started     time.Time
	PhaseLength time.Duration
	Client      *snapshot.Snapshot
	Phases      []IperfPhase
}

// IperfPhase is one iperf3 test: a download (reverse mode), an upload, or
// a download on several streams (PhaseCapacity).
type IperfPhase struct {
	Name    string
	Result  *iperf3.Result
	Samples []flows.Sample // this host's data sockets
	// Recv is the first stream's receive side in a download: the window
	// this host advertised and its RTT estimate.
	Recv    []testdoc.URLSample
	Connect time.Duration // the control connection's handshake
}

// JudgeIperf3 explains a test against an iperf3 server with test's
// judges: the upload with flows.Judge over this host's sending socket
// (this host's tcp_wmem by name, the server's advertised window with its
// size, the path's losses), the download with test URL's rules on this
// host's receiving socket (its tcp_rmem by name) and the server's own
// intervals where it sent them (its cwnd, RTT and retransmissions). It
// fills the test document (longhaul.test/v1); the server's snapshot,
// model and plan stay empty: no longhaul runs there. It is pure.
func JudgeIperf3(raw *IperfRaw, rateBps float64) (*testdoc.Doc, error) {
	d := &judging{Doc: &testdoc.Doc{Schema: testdoc.Schema, Started: raw.Started, Server: raw.Server, PhaseLengthS: raw.PhaseLength.Seconds(),
		Hosts: testdoc.Hosts{Client: raw.Client}, Directions: []testdoc.Direction{}, Phases: []testdoc.Phase{}}}
	for _, p := range raw.Phases {
		if p.Result == nil || len(p.Result.Streams) == 0 {
			return nil, fmt.Errorf("the %s phase has no result", p.Name)
		}
		d.Phases = append(d.Phases, iperfPhaseRecord(p))
	}
	d.RTT = iperfRTT(raw)
	rtt := time.Duration(d.RTT.MinS * float64(time.Second))
	var upFlow *flows.Flow
	var up *IperfPhase
	for i, p := range raw.Phases {
		switch p.Name {
		case wire.PhaseCapacity:
			d.Capacity = &testdoc.Capacity{Bps: d.Phases[i].ThroughputBps, Streams: len(p.Result.Streams), Verdicts: []string{}}
		case wire.PhaseUpload:
			if fl := judgePhase(PhaseRaw{Grant: wire.Grant{Name: wire.PhaseUpload}, Client: p.Samples}, ""); len(fl) > 0 {
				upFlow, up = &fl[0], &raw.Phases[i]
			}
		}
	}
	d.PathRateBps, d.PathRateBasis = iperfPathRate(rateBps, d.Capacity, upFlow)
	for _, p := range raw.Phases {
		if p.Name == wire.PhaseDownload {
			d.Directions = append(d.Directions, d.iperfDownload(p, rtt, rateBps))
		}
	}
	if upFlow != nil {
		d.Directions = append(d.Directions, d.iperfUpload(*up, *upFlow, rtt))
	}
	d.iperfNotes(raw)
	d.iperfPlan(rtt)
	return d.Doc, nil
}

// iperfPathRate picks the path's rate for the plan: --rate, the streams'
// download, or an upload that filled the path.
func iperfPathRate(rateBps float64, c *testdoc.Capacity, up *flows.Flow) (float64, string) {
	switch {
	case rateBps > 0:
		return pathmodel.Goodput(rateBps), "--rate " + units.FormatRate(rateBps) + " (its TCP goodput)"
	case c != nil && c.Bps > 0:
		return c.Bps, fmt.Sprintf("measured with %d streams (at least: a window may have held them)", c.Streams)
	case up != nil && up.Verdict.Verdict == diagnose.Bottleneck:
		return up.ThroughputBps, "the upload filled the path on one stream"
	}
	return 0, "unknown: no phase filled the path; run with --streams N or give --rate"
}

// iperfRTT is the least RTT any socket saw, and under load the median of
// the download receiver's estimates.
func iperfRTT(raw *IperfRaw) testdoc.RTT {
	r := testdoc.RTT{IdleS: []float64{}}
	var lo time.Duration
	var loaded []float64
	for _, p := range raw.Phases {
		for _, s := range p.Samples {
			if m := s.Sock.MinRTT; m > 0 && (lo == 0 || m < lo) {
				lo = m
			}
		}
		if p.Connect > 0 {
			r.IdleS = append(r.IdleS, p.Connect.Seconds())
			if lo == 0 || p.Connect < lo {
				lo = p.Connect
			}
		}
		for _, s := range p.Recv {
			if s.RcvRTT > 0 && p.Name == wire.PhaseDownload {
				loaded = append(loaded, s.RcvRTT)
			}
		}
	}
	r.MinS = lo.Seconds()
	if len(loaded) > 0 {
		slices.Sort(loaded)
		r.LoadedS = loaded[len(loaded)/2]
	}
	return r
}

// iperfPhaseRecord is a phase's record: this host's samples, and for a
// download the server's intervals as its samples (per second, from its
// output), so that the report draws the sender.
func iperfPhaseRecord(p IperfPhase) testdoc.Phase {
	r := p.Result
	ph := testdoc.Phase{Name: p.Name, Streams: len(r.Streams), DurationS: r.Elapsed.Seconds(), Seconds: r.Elapsed.Seconds(),
		EndReason: "duration", LoadedRTTS: []float64{}, Samples: []results.Sample{}}
	for _, s := range r.Streams {
		ph.ServerBytes += s.ServerBytes
		ph.ClientBytes += s.Bytes
	}
	for _, s := range p.Samples {
		ph.Samples = append(ph.Samples, flows.ResultSample(s.T, testdoc.HostClient, s.Sock))
	}
	if p.Name == wire.PhaseUpload {
		ph.ThroughputBps = AggregateRate(p.Samples)
		return ph
	}
	// The receiver's bytes stand in for the sender's delivered ones.
	recv := make([]flows.Sample, len(p.Samples))
	for i, s := range p.Samples {
		recv[i] = flows.Sample{T: s.T, Sock: flows.Sock{Local: s.Sock.Local, Remote: s.Sock.Remote, BytesAcked: s.Sock.BytesReceived}}
	}
	ph.ThroughputBps = AggregateRate(recv)
	for _, s := range r.Streams {
		var delivered, retrans int64
		for _, iv := range s.Intervals {
			if !iv.Sender {
				continue
			}
			delivered += max(iv.Bytes, 0)
			retrans += max(iv.Retransmits, 0)
			ph.Samples = append(ph.Samples, results.Sample{T: iv.End.Seconds(), End: testdoc.HostServer, Sock: s.Remote + "-" + s.Local,
				CwndB: max(iv.SndCwnd, 0), SndWnd: max(iv.SndWnd, 0), RTT: max(iv.RTT, 0).Seconds(),
				BytesAcked: delivered, Delivered: delivered, Retrans: retrans})
		}
	}
	return ph
}

// iperfUpload judges the upload: this host sends, so its socket holds the
// verdict as test's does; the server's window is named with its size.
func (d *judging) iperfUpload(p IperfPhase, f flows.Flow, rtt time.Duration) testdoc.Direction {
	dir := testdoc.Direction{Name: wire.PhaseUpload, Sender: testdoc.HostClient, Receiver: testdoc.HostServer, ThroughputBps: f.ThroughputBps, RTTS: f.RTT, Flow: f}
	// The sender's smoothed RTT stands in for test's control pings.
	pr := PhaseRaw{Grant: wire.Grant{Name: wire.PhaseUpload}, Client: p.Samples}
	for _, s := range sendingHalf(sockSamples(p.Samples, f.Local+"-"+f.Remote)) {
		pr.LoadedRTTs = append(pr.LoadedRTTs, s.Sock.RTT)
	}
	pe := d.phaseEvidence(pr, f, rtt, d.PathRateBps, 0, probes{})
	if ss := sockSamples(p.Samples, f.Local+"-"+f.Remote); len(ss) > 0 {
		last := ss[len(ss)-1].Sock
		pe.Retrans = &diagnose.RetransEvidence{Segments: last.Retrans, Bytes: last.BytesAcked, MSS: int(last.MSS), RTT: secsDur(f.RTT), Sender: "this host"}
	}
	j := diagnose.PathCause(f.Verdict, pe)
	dir.Cause, dir.Flow.Verdict = j.Cause, j.Verdict
	dir.Model = senderModel(d.Hosts.Client, rtt, d.PathRateBps)
	dir.Flow.Verdict = diagnose.SndbufHidden(dir.Flow.Verdict, sndbufModel(dir))
	switch v := dir.Flow.Verdict.Verdict; {
	case v == diagnose.RwndLimited || v == diagnose.ZeroWindow:
		// limitOf would name the server's tcp_rmem from its snapshot,
		// which an iperf3 server does not send: its window's size is what
		// this host saw.
		wnd := peerWindow(p, f)
		dir.Model.ReceiverWindowBytes = float64(wnd)
		if l, ok := d.atPathRate(dir); ok {
			dir.Limit = l
		} else if l, ok := shortPath(dir, rtt); ok {
			dir.Limit = l
		} else {
			dir.Limit = serverWindowLimit(wnd, rtt)
		}
	default:
		dir.Limit = d.limitOf(dir, rtt)
	}
	dir.Headline = d.headline(dir)
	return dir
}

// senderModel is the path model of this host's send side alone: the
// server's receive settings are not known.
func senderModel(c *snapshot.Snapshot, rtt time.Duration, rate float64) testdoc.Model {
	m, err := model(c, c, rtt, rate)
	if err != nil || c == nil || rtt <= 0 {
		return testdoc.Model{Note: "no model: this host's snapshot or the RTT is missing"}
	}
	m.ExpectedBps, m.LimitedBy, m.MeasuredVsModel = 0, "", 0
	m.ReceiverWindowBytes, m.ReceiverCeilingBps, m.ReceiverSettings = 0, 0, "not known (iperf3 server)"
	m.Note = fmt.Sprintf("the iperf3 server's settings are not known; this host's send buffer allows %s at %s",
		units.FormatRate(m.SenderCeilingBps), units.FormatDuration(rtt.Round(100*time.Microsecond)))
	return m
}

// peerWindow is the most the iperf3 server advertised over the upload's
// sending half.
func peerWindow(p IperfPhase, f flows.Flow) int64 {
	wnd := f.SndWndBytes
	for _, s := range sendingHalf(sockSamples(p.Samples, f.Local+"-"+f.Remote)) {
		wnd = max(wnd, s.Sock.SndWnd)
	}
	return wnd
}

// serverWindowLimit names the window the iperf3 server advertised, with
// its size.
func serverWindowLimit(wnd int64, rtt time.Duration) testdoc.Limit {
	at := units.FormatDuration(rtt.Round(100 * time.Microsecond))
	return testdoc.Limit{Host: testdoc.HostServer, Setting: "net.ipv4.tcp_rmem", Value: units.FormatBytes(float64(wnd)),
		Text: fmt.Sprintf("the iperf3 server's receive window (%s), which allows %s at %s: its receive buffer sets it, net.ipv4.tcp_rmem's maximum there or the SO_RCVBUF iperf3 was given (-w)",
			units.FormatBytes(float64(wnd)), units.FormatRate(pathmodel.WindowCeiling(float64(wnd), rtt)), at)}
}

// iperfNotes say what the far end showed and what it did not.
func (d *judging) iperfNotes(raw *IperfRaw) {
	for _, p := range raw.Phases {
		if p.Name != wire.PhaseDownload {
			continue
		}
		switch r := p.Result; {
		case r.ServerOutputJSON:
		case r.ServerOutputText != "":
			d.Notes = append(d.Notes, "the server runs plain iperf3 -s: its intervals carry its retransmissions and a rounded cwnd, but not its RTT or the window it saw; run it with iperf3 -s -J for them")
		default:
			d.Notes = append(d.Notes, "the iperf3 server sent no output of its own: its cwnd and RTT are not known; only its count of retransmissions is")
		}
	}
	d.Notes = append(d.Notes, "the far end is iperf3, not longhaul: its settings (snapshot) are not known, so no model or plan is made for it; longhaul serve there tells its buffers by name")
}

// iperfPlan makes this host's plan when one of its settings is the
// limit, then the fix lines.
func (d *judging) iperfPlan(rtt time.Duration) {
	var sends, receives bool
	for _, dir := range d.Directions {
		if dir.Limit.Host == testdoc.HostClient && dir.Limit.Setting != "" {
			sends, receives = sends || dir.Name == wire.PhaseUpload, receives || dir.Name != wire.PhaseUpload
		}
	}
	if (sends || receives) && d.PathRateBps > 0 && rtt >= ShortRTT && d.Hosts.Client != nil {
		role := plan.Both
		switch {
		case !sends:
			role = plan.Client
		case !receives:
			role = plan.Server
		}
		p, err := plan.Make(d.Hosts.Client, plan.Request{RTT: rtt, RateBps: d.PathRateBps, Flows: 1, Role: role})
		if err != nil {
			d.Notes = append(d.Notes, "no plan: "+err.Error())
		} else {
			d.Plans = &testdoc.Plans{Client: p}
		}
	}
	for i := range d.Directions {
		dir := &d.Directions[i]
		switch l := dir.Limit; {
		case l.Host == testdoc.HostServer && l.Setting != "":
			dir.Flow.Fix = fmt.Sprintf("on the iperf3 server: raise net.ipv4.tcp_rmem's maximum above the path's BDP, or run iperf3 there without -w (the window it offered was %s)", l.Value)
		case dir.Name == wire.PhaseUpload, l.Host == testdoc.HostClient && l.Setting != "", dir.Flow.Fix == "":
			dir.Flow.Fix = d.directionFix(*dir)
		}
	}
	d.Fix = nil
	for _, dir := range d.Directions {
		d.Fix = append(d.Fix, fmt.Sprintf("fix for the %s: %s", dir.Name, dir.Flow.Fix))
	}
	if d.Plans != nil {
		d.Fix = append(d.Fix, "", fmt.Sprintf("this host's plan for %s at %s (path rate %s; longhaul apply client-plan.json, written with -o):",
			secs(d.RTT.MinS), units.FormatRate(d.PathRateBps), d.PathRateBasis))
		for _, l := range testdoc.PlanLines(d.Plans.Client.Items) {
			d.Fix = append(d.Fix, "  "+l)
		}
	}
}
