package judge

import (
	"fmt"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// JudgeOptions tune Judge.
type JudgeOptions struct {
	// RateBps is the path's rate if the user knows it (--rate).
	RateBps float64
}

// unknownRate stands in for the path rate in the model when it is not
// known: only the hosts' buffers then limit the prediction.
const unknownRate = 100e9

// Judge turns a test's measurements into the document. It is pure.
func Judge(raw *Raw, opt JudgeOptions) (*testdoc.Doc, error) {
	d := &judging{Doc: &testdoc.Doc{Schema: testdoc.Schema, Started: raw.Started, Server: raw.Server, Caps: raw.Caps, PhaseLengthS: raw.PhaseLength.Seconds(),
		Hosts: testdoc.Hosts{Client: raw.Client, Server: raw.ServerSnap}, Directions: []testdoc.Direction{}, Phases: []testdoc.Phase{}}}
	d.RTT = rttOf(raw)
	for _, p := range raw.Phases {
		d.Phases = append(d.Phases, phaseRecord(p))
	}
	judged := map[string][]flows.Flow{}
	var plain []PhaseRaw // without a congestion control asked
	for _, p := range raw.Phases {
		if !d.addProbe(p) {
			judged[p.Grant.Name] = judgePhase(p, raw.PhaseCut)
			plain = append(plain, p)
		}
	}
	for _, p := range plain {
		if fl := judged[wire.PhaseCapacity]; p.Grant.Name == wire.PhaseCapacity && len(fl) > 0 {
			d.Capacity = capacityOf(fl, senderSamples(p), raw.PhaseCut)
			d.Capacity.PeakBps = capacityPeak(senderSamples(p))
			if end := cpuBoundEnd(p); end != "" {
				d.Capacity.CPUBound, d.Capacity.AtLeast = end, true
			}
		}
	}
	rtt := time.Duration(d.RTT.MinS * float64(time.Second))
	if raw.PhaseCut != "" {
		d.Notes = append(d.Notes, raw.PhaseCut)
	}
	if raw.BlackHoleMSS > 0 {
		d.Causes = append(d.Causes, diagnose.BlackHoleCause(raw.BlackHoleMSS, "the server"))
	}
	causes := map[string]*diagnose.Cause{}
	judgements := map[string]diagnose.Judgement{}
	pr := probesOf(d.Doc)
	for _, p := range plain {
		if fl := judged[p.Grant.Name]; len(fl) > 0 && p.Grant.Name != wire.PhaseCapacity {
			carried := pathmodel.Goodput(opt.RateBps)
			if d.Capacity != nil {
				carried = max(carried, d.Capacity.Bps)
			}
			carried = pr.pathBps(carried)
			j := diagnose.PathCause(fl[0].Verdict, d.phaseEvidence(p, fl[0], rtt, carried, d.cpuPathBps(carried, opt.RateBps), pr))
			if c := j.Cause; c != nil && c.Name != diagnose.CauseCPUBound && c.Name != diagnose.CauseWindowScaleStripped {
				withCCs(c, d.CCPhases)
			}
			causes[p.Grant.Name], judgements[p.Grant.Name] = j.Cause, j
		}
	}
	d.PathRateBps, d.PathRateBasis, d.rateFromRamp = pathRate(opt, d.Capacity, judged, causes, d.CCPhases)
	for _, name := range []string{wire.PhaseDownload, wire.PhaseUpload} {
		fl := judged[name]
		if len(fl) == 0 {
			continue
		}
		dir, err := d.direction(name, fl[0], rtt, judgements[name])
		if err != nil {
			return nil, err
		}
		d.Directions = append(d.Directions, dir)
	}
	if err := d.makePlans(rtt, judged); err != nil {
		return nil, err
	}
	return d.Doc, nil
}

func rttOf(raw *Raw) testdoc.RTT {
	r := testdoc.RTT{IdleS: []float64{}}
	lo := MinDur(raw.IdleRTTs)
	for _, x := range raw.IdleRTTs {
		r.IdleS = append(r.IdleS, x.Seconds())
	}
	var loaded []time.Duration
	for _, p := range raw.Phases {
		if p.Grant.Name != wire.PhaseUpload {
			loaded = append(loaded, p.LoadedRTTs...)
		}
		for _, s := range append(slices.Clone(p.Server), p.Client...) {
			if m := s.Sock.MinRTT; m > 0 && (lo == 0 || m < lo) {
				lo = m
			}
		}
	}
	r.MinS = lo.Seconds()
	if len(loaded) > 0 {
		slices.Sort(loaded)
		r.LoadedS = loaded[len(loaded)/2].Seconds()
	}
	return r
}

// senderSamples are the samples of the end that sends in a phase.
func senderSamples(p PhaseRaw) []flows.Sample {
	if p.Grant.Name == wire.PhaseUpload {
		return p.Client
	}
	return p.Server
}

func phaseRecord(p PhaseRaw) testdoc.Phase {
	ph := testdoc.Phase{Name: p.Grant.Name, CC: p.AskedCC, Streams: p.Grant.Streams, DurationS: p.Grant.DurationS, RateBps: p.Grant.RateBps,
		ServerBytes: p.Done.Bytes, ClientBytes: p.ClientBytes, Seconds: p.Done.Seconds, EndReason: p.Done.Reason,
		LoadedRTTS: []float64{}, Samples: []results.Sample{}, ServerCPU: p.Done.CPU, ClientCPU: p.ClientCPU}
	for _, x := range p.LoadedRTTs {
		ph.LoadedRTTS = append(ph.LoadedRTTS, x.Seconds())
	}
	for _, s := range p.Client {
		ph.Samples = append(ph.Samples, flows.ResultSample(s.T, testdoc.HostClient, s.Sock))
	}
	for _, s := range p.Server {
		ph.Samples = append(ph.Samples, flows.ResultSample(s.T, testdoc.HostServer, s.Sock))
	}
	ph.ThroughputBps = AggregateRate(senderSamples(p))
	if p.UDP != nil {
		ph.ThroughputBps = p.UDP.Bps
	}
	return ph
}

// judgePhase judges each of the sender's sockets over the second half
// of its active time (slow start is over by then): flows.Judge between
// the sample at the middle and the last one that moved data, with the
// median smoothed RTT of the half as the RTT under load.
//
// How the rate moved over that half goes with it (series.ramp): a flow still
// speeding up at the phase's end is judged slow start, whatever its
// windows said (cut: why the phase was that short, if this host cut it).
func judgePhase(p PhaseRaw, cut string) []flows.Flow {
	var out []flows.Flow
	for _, ss := range bySocket(senderSamples(p)) {
		half := sendingHalf(ss)
		if len(half) == 0 {
			continue
		}
		first, last := half[0], half[len(half)-1]
		dt := time.Duration((last.T - first.T) * float64(time.Second))
		rtts := make([]time.Duration, 0, len(half))
		for _, s := range half {
			rtts = append(rtts, s.Sock.RTT)
		}
		out = append(out, flows.Judge(first.Sock, last.Sock, dt, flows.Options{HighRTT: median(rtts), Ramp: seriesOf(ss).ramp(cut), CauseByCaller: true}))
	}
	return out
}

// capacityOf is what the capacity phase's streams carried together: the
// plateau they held once their ramp was over (the second half's average
// when there is none to see), and whether they were still speeding up,
// or held their rate for under minSteadyWindows, when the phase ended
// (then the path carries at least that).
func capacityOf(fl []flows.Flow, samples []flows.Sample, cut string) *testdoc.Capacity {
	s := seriesOf(samples)
	bps, windows := s.plateau()
	c := &testdoc.Capacity{Streams: len(fl), Verdicts: []string{}, Bps: bps}
	if i := s.half(); c.Bps == 0 && i >= 0 {
		c.Bps = s.rate(i, len(s.t)-1)
	}
	if r := s.ramp(cut); (r != nil && r.Ramping()) || windows < minSteadyWindows {
		c.Ramping, c.AtLeast = true, true
	}
	bound := 0
	for _, f := range fl {
		c.Verdicts = append(c.Verdicts, f.Verdict.Verdict)
		if f.Verdict.Verdict == diagnose.RwndLimited || f.Verdict.Verdict == diagnose.SndbufLimited {
			bound++
		}
	}
	c.AtLeast = c.AtLeast || 2*bound > len(fl)
	return c
}

// pathRate picks the path's rate for the model and the plans; ramp: it
// is what streams still in slow start carried (no plan is sized from it).
func pathRate(opt JudgeOptions, c *testdoc.Capacity, judged map[string][]flows.Flow, causes map[string]*diagnose.Cause, ccs []testdoc.CCPhase) (rate float64, basis string, ramp bool) {
	if opt.RateBps > 0 {
		return pathmodel.Goodput(opt.RateBps), "--rate " + units.FormatRate(opt.RateBps) + " (its TCP goodput)", false
	}
	for _, name := range []string{wire.PhaseDownload, wire.PhaseUpload} {
		if x := causes[name]; x != nil && x.Name == diagnose.CausePolicer {
			r := x.Numbers["policer_bps"]
			return r, fmt.Sprintf("the policer's rate: paced above %s, the %s carried no more", units.FormatRate(r), name), false
		}
	}
	if r, basis, ok := lossBoundRate(c, causes); ok {
		r, basis = atLeastCC(r, basis, ccs, ", while the path's losses held the default control back")
		return r, basis, false
	}
	best := 0.0
	for _, name := range []string{wire.PhaseDownload, wire.PhaseUpload} {
		for _, f := range judged[name] {
			if f.Verdict.Verdict == diagnose.Bottleneck && f.ThroughputBps > best && !cpuBound(causes[name]) {
				best, basis = f.ThroughputBps, "the "+name+" filled the path on one stream"
			}
		}
	}
	if c != nil && c.Bps > best {
		best, basis, ramp = c.Bps, fmt.Sprintf("measured with %d streams", c.Streams), c.Ramping
		switch {
		case c.Ramping:
			basis += " (at least: they were still speeding up, or had only just reached their rate, when the phase ended)"
		case c.CPUBound != "":
			basis += fmt.Sprintf(" (at least: the %s's CPU held them)", c.CPUBound)
		case c.AtLeast:
			basis += " (at least: most streams were limited by a buffer)"
		}
	}
	if c != nil {
		// The path carried at least what any one stream carried.
		for _, name := range []string{wire.PhaseDownload, wire.PhaseUpload} {
			for _, f := range judged[name] {
				if f.ThroughputBps > best {
					best, basis = f.ThroughputBps, "the "+name+" on one stream carried more than the streams together"
					ramp = f.Verdict.Verdict == diagnose.SlowStart
				}
			}
		}
	}
	if r, b := atLeastCC(best, basis, ccs, ""); r > best {
		return r, b, false
	}
	if best > 0 {
		return best, basis, ramp
	}
	return 0, "unknown: no phase filled the path; run with --streams N or give --rate", false
}

// atLeastCC raises a path's rate r to what one stream carried with a
// congestion control asked of the server, when that is more (why ends
// its basis).
func atLeastCC(r float64, basis string, ccs []testdoc.CCPhase, why string) (float64, string) {
	for _, x := range ccs {
		if x.Granted && x.ThroughputBps > r {
			r, basis = x.ThroughputBps, fmt.Sprintf("at least %s: one stream carried it with %s on the server%s", units.FormatRate(x.ThroughputBps), x.CC, why)
		}
	}
	return r, basis
}

// cpuBound: the cause is a CPU-bound end (the flow did not fill the path
// however it looked).
func cpuBound(c *diagnose.Cause) bool { return c != nil && c.Name == diagnose.CauseCPUBound }

// ccPhase is the result of a download with a congestion control asked
// of the server.
func ccPhase(p PhaseRaw, fl []flows.Flow) testdoc.CCPhase {
	x := testdoc.CCPhase{CC: p.AskedCC, Granted: p.Grant.CC == p.AskedCC, ThroughputBps: AggregateRate(senderSamples(p)), Verdict: diagnose.Unknown,
		LoadedRTTP90S: quantile(p.LoadedRTTs, 0.9).Seconds(), LoadedRTTS: median(p.LoadedRTTs).Seconds()}
	if len(fl) > 0 {
		x.Verdict, x.RetransSegs = fl[0].Verdict.Verdict, fl[0].Retrans
	}
	return x
}

// addProbe records a phase run to tell the causes apart (a datagram run,
// a download with a congestion control asked, a paced one); false when p
// is none of them.
func (d *judging) addProbe(p PhaseRaw) bool {
	switch {
	case p.UDP != nil:
		d.UDPPhase = udpPhase(p)
	case p.AskedCC != "":
		d.CCPhases = append(d.CCPhases, ccPhase(p, judgePhase(p, "")))
	case p.AskedPace > 0:
		d.PacedPhases = append(d.PacedPhases, pacedPhase(p, judgePhase(p, "")))
	default:
		return false
	}
	return true
}

// udpPhase is the result of a datagram run.
func udpPhase(p PhaseRaw) *testdoc.UDPPhase {
	x := &testdoc.UDPPhase{RateBps: p.Grant.RateBps, DatagramBytes: p.Grant.DatagramBytes, Sent: p.Done.Datagrams, Received: p.UDP.Received,
		ArrivedBps: p.UDP.Bps, QueueS: p.UDP.Queue.Seconds()}
	if x.Sent > 0 {
		x.LossRate = max(1-float64(x.Received)/float64(x.Sent), 0)
	}
	return x
}

// pacedPhase is the result of a download the server paced: what it
// carried and lost over the whole phase.
func pacedPhase(p PhaseRaw, fl []flows.Flow) testdoc.PacedPhase {
	x := testdoc.PacedPhase{RateBps: p.AskedPace, GrantedRateBps: p.Grant.RateBps, ThroughputBps: AggregateRate(senderSamples(p)),
		Verdict: diagnose.Unknown, LoadedRTTS: median(p.LoadedRTTs).Seconds(), LoadedRTTP90S: quantile(p.LoadedRTTs, 0.9).Seconds()}
	if len(fl) == 0 {
		return x
	}
	x.Verdict = fl[0].Verdict.Verdict
	if ss := sockSamples(senderSamples(p), fl[0].Local+"-"+fl[0].Remote); len(ss) > 0 {
		last := ss[len(ss)-1].Sock
		x.RetransSegs = last.Retrans
		if last.DataSegsOut > 0 {
			x.LossRate = float64(last.Retrans) / float64(last.DataSegsOut)
		}
	}
	return x
}

// withCCs adds what the other congestion controls carried on the same
// path to a loss cause: the measured answer to "would bbr help".
func withCCs(c *diagnose.Cause, ccs []testdoc.CCPhase) {
	for _, x := range ccs {
		if !x.Granted || x.ThroughputBps <= 0 {
			continue
		}
		c.Numbers[x.CC+"_bps"] = x.ThroughputBps
		c.Text += fmt.Sprintf("; sending with %s the server carried %s on the same path", x.CC, units.FormatRate(x.ThroughputBps))
	}
}

// lossBoundRate: when the single streams lost to random loss or a
// shallow buffer, the capacity phase's streams lost the same way and
// carried less than the path: its rate is a lower bound, and the best
// estimate is the most the streams were seen delivering together.
func lossBoundRate(c *testdoc.Capacity, causes map[string]*diagnose.Cause) (float64, string, bool) {
	var cause string
	for _, name := range []string{wire.PhaseDownload, wire.PhaseUpload} {
		if x := causes[name]; x != nil && (x.Name == diagnose.CauseRandomLoss || x.Name == diagnose.CauseShallowBuffer) {
			cause = x.Name
			break
		}
	}
	if c == nil || cause == "" {
		return 0, "", false
	}
	c.AtLeast = true
	best := max(c.Bps, c.PeakBps)
	return best, fmt.Sprintf("at least %s: %d streams carried %s and were seen delivering %s together, held back by %s (the link is faster)",
		units.FormatRate(best), c.Streams, units.FormatRate(c.Bps), units.FormatRate(c.PeakBps), cause), true
}

// AggregateRate is the rate all sockets together delivered (acknowledged
// or SACKed) over the second half of their common active time.
func AggregateRate(samples []flows.Sample) float64 {
	s := seriesOf(samples)
	i := s.half()
	if i < 0 {
		return 0
	}
	return s.rate(i, len(s.t)-1)
}

// MinDur is the least of ds (0 for none).
func MinDur(ds []time.Duration) time.Duration {
	m := time.Duration(0)
	for i, d := range ds {
		if i == 0 || d < m {
			m = d
		}
	}
	return m
}

// cpuPathBps is the path's rate a CPU-bound end is judged against:
// what was carried, unless the capacity phase was held by a CPU too (it
// measured that CPU, not the path: a flow at its rate proves nothing),
// then only the rate the user gave (rateBps, 0 unknown).
func (d *judging) cpuPathBps(carried, rateBps float64) float64 {
	if d.Capacity != nil && d.Capacity.CPUBound != "" {
		return pathmodel.Goodput(rateBps)
	}
	return carried
}
