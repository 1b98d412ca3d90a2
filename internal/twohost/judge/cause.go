package judge

import (
	"cmp"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// phaseEvidence is what a single-stream phase showed of the path, for
// diagnose.PathCause: both ends' CPU (judged against cpuBps), a window
// scaling stripped, and, from the sender's samples, its reordering and
// how it lost over the whole phase (slow start's losses included: how
// they came, one here and there or in bursts, tells the causes apart)
// against the RTT of the control pings while it ran and the probes'
// runs. pathBps is the rate the path carried on several streams (or
// --rate).
func (d *judging) phaseEvidence(p PhaseRaw, f flows.Flow, minRTT time.Duration, pathBps, cpuBps float64, pr probes) diagnose.PathEvidence {
	pe := diagnose.PathEvidence{Bps: f.ThroughputBps, PathBps: pathBps, CPU: cpuEvidence(p, f), CPUPathBps: cpuBps, Scope: "the steady half"}
	pe.Scale = d.scaleEvidence(p.Grant.Name, f, minRTT, pathBps)
	all := sockSamples(senderSamples(p), f.Local+"-"+f.Remote)
	if len(all) == 0 {
		return pe
	}
	sender := "the " + senderOf(p.Grant.Name)
	re := reorderEvidence(all, f, sender)
	re.Held = pathBps > 0 && !diagnose.AtPathRate(f.ThroughputBps, pathBps) // held below a known rate
	pe.Reorder = &re
	half := sendingHalf(all)
	if len(half) < 2 || minRTT <= 0 {
		return pe
	}
	last := half[len(half)-1].Sock
	e := diagnose.LossEvidence{MinRTT: minRTT, LoadedRTT: median(p.LoadedRTTs), SteadyRTT: steadyRTT(p.LoadedRTTs), IdleRTT: pr.idleRTT, Bps: f.ThroughputBps,
		MSS: int(last.MSS), CC: last.CC, Sender: sender, ManyBps: pathBps}
	if p.Grant.Name == wire.PhaseDownload {
		e.Paced, e.BestOtherBps, e.OtherLoadedRTT, e.OtherMedianRTT = pr.paced, pr.otherBps, pr.otherRTT, pr.otherMid
		e.Datagrams = pr.datagrams
	} else {
		e.ProbedOtherWay = len(pr.paced) > 0 || pr.datagrams != nil
	}
	track := flows.NewLossTrack(flows.Sock{})
	for _, s := range all {
		track.Add(s.Sock)
	}
	track.Fill(&e)
	rtts := make([]time.Duration, 0, len(half))
	for _, s := range half {
		e.PeakBps = max(e.PeakBps, s.Sock.DeliveryBps)
		rtts = append(rtts, s.Sock.RTT)
	}
	e.FlowRTT = median(rtts)
	if e.LoadedRTT == 0 {
		// No pings answered while it ran: the sender's smoothed RTT.
		e.LoadedRTT, e.IdleRTT = e.FlowRTT, 0 // tcp_info's, against its minimum
	}
	pe.Loss = &e
	return pe
}

// probes are what the download's loss probes measured: the paced runs
// and the most another congestion control carried.
type probes struct {
	paced    []diagnose.PacedRun
	otherBps float64
	otherRTT time.Duration // the pings' 90th percentile in the run that carried otherBps
	otherMid time.Duration // and their median
	idleRTT  time.Duration // the least idle ping, the loaded pings' reference
	// datagrams is the datagram run's (nil none, or none arrived: a
	// path or firewall that drops them says nothing of the queue).
	datagrams *diagnose.DatagramRun
}

// probesOf reads the probes from the document. The probes' pings are
// judged against the idle pings' least, less the idle pings' own spread
// at the same percentile: a machine or path whose pings jitter when idle
// shows that jitter under load too, and it is no queue (measured on a
// VM with stalls: idle pings 50.54-51.76 ms, a paced run at a policer
// +1.1 ms at its 90th percentile, read as a queue standing).
func probesOf(d *testdoc.Doc) probes {
	var pr probes
	var idle []time.Duration
	for _, x := range d.RTT.IdleS {
		if r := time.Duration(x * float64(time.Second)); r > 0 {
			idle = append(idle, r)
		}
	}
	var jit90, jit50 time.Duration
	if len(idle) > 0 {
		pr.idleRTT = slices.Min(idle)
		jit90, jit50 = quantile(idle, 0.9)-pr.idleRTT, median(idle)-pr.idleRTT
	}
	less := func(s float64, jit time.Duration) time.Duration {
		if s <= 0 {
			return 0 // none answered
		}
		return max(time.Duration(s*float64(time.Second))-jit, pr.idleRTT)
	}
	for _, x := range d.PacedPhases {
		pr.paced = append(pr.paced, diagnose.PacedRun{RateBps: x.GrantedRateBps, Bps: x.ThroughputBps, LossRate: x.LossRate,
			LoadedRTT: less(x.LoadedRTTP90S, jit90)})
	}
	if u := d.UDPPhase; u != nil && u.Received >= minDatagrams {
		pr.datagrams = &diagnose.DatagramRun{RateBps: u.RateBps, Bps: u.ArrivedBps, LossRate: u.LossRate, Queue: time.Duration(u.QueueS * float64(time.Second))}
	}
	for _, x := range d.CCPhases {
		if x.Granted && x.ThroughputBps > pr.otherBps {
			pr.otherBps, pr.otherRTT = x.ThroughputBps, less(x.LoadedRTTP90S, jit90)
			pr.otherMid = less(x.LoadedRTTS, jit50)
		}
	}
	return pr
}

// probesOver: what the probes carried (bbr, a paced run) past this many
// times what several streams carried says the streams were held by the
// same failure as the flow, not by the path's rate.
const probesOver = 1.5

// pathBps is the path's rate a flow is judged at (atPath): what several
// streams carried (streams), or what the probes carried when that is
// over probesOver times more (measured: 100 ms x 500 Mbit/s, a 0.05-BDP
// queue: 8 cubic streams carried 152 Mbit/s after their slow starts
// overflowed it, bbr 459, the download 140: taken for a flow at the
// path's rate, nothing was named).
func (pr probes) pathBps(streams float64) float64 {
	most := pr.otherBps
	for _, r := range pr.paced {
		most = max(most, r.Bps)
	}
	if most > probesOver*streams {
		return most
	}
	return streams
}

// minDatagrams is the fewest datagrams a run must deliver to say
// anything of the queue.
const minDatagrams = 100

// bySocket splits samples by socket, in the order the sockets first
// appear, each socket's in time order.
func bySocket(samples []flows.Sample) [][]flows.Sample {
	at := map[string]int{}
	var out [][]flows.Sample
	for _, s := range samples {
		k := s.Sock.Key()
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	for _, ss := range out {
		slices.SortStableFunc(ss, func(a, b flows.Sample) int { return cmp.Compare(a.T, b.T) })
	}
	return out
}

// sockSamples are one socket's samples (its key) in time order.
func sockSamples(samples []flows.Sample, key string) []flows.Sample {
	for _, ss := range bySocket(samples) {
		if ss[0].Sock.Key() == key {
			return ss
		}
	}
	return nil
}

// sendingHalf is a socket's samples (in time order) over the second half
// of its active time, up to the last one that moved data (slow start is
// over by then); nil when it moved data in fewer than 3 samples.
func sendingHalf(ss []flows.Sample) []flows.Sample {
	end := len(ss) - 1
	for end > 0 && ss[end].Sock.BytesAcked == ss[end-1].Sock.BytesAcked {
		end--
	}
	if end < 2 {
		return nil
	}
	mid := ss[0].T + (ss[end].T-ss[0].T)/2
	i := 0
	for i < end-1 && ss[i].T < mid {
		i++
	}
	return ss[i : end+1]
}

// capacityPeak is the most the capacity phase's streams were seen
// delivering together (the sum of the kernel's delivery-rate estimates
// of one dump), over the steady half: the path carried at least that.
func capacityPeak(samples []flows.Sample) float64 {
	sorted := slices.Clone(samples)
	slices.SortStableFunc(sorted, func(a, b flows.Sample) int { return cmp.Compare(a.T, b.T) })
	if len(sorted) == 0 {
		return 0
	}
	mid := sorted[0].T + (sorted[len(sorted)-1].T-sorted[0].T)/2
	peak, sum := 0.0, 0.0
	for i, s := range sorted {
		if s.T < mid {
			continue
		}
		sum += s.Sock.DeliveryBps
		if i+1 == len(sorted) || sorted[i+1].T != s.T {
			peak, sum = max(peak, sum), 0
		}
	}
	return peak
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

// steadyRTT is the median of the pings of a phase's second half (they
// come in the order they were sent); 0 with fewer than four.
func steadyRTT(pings []time.Duration) time.Duration {
	if len(pings) < 4 {
		return 0
	}
	return median(pings[len(pings)/2:])
}

// quantile is the q-quantile of ds (the element at rank q x n); 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func senderOf(phase string) string {
	s, _ := ends(phase)
	return s
}

// windowScaling is a host's net.ipv4.tcp_window_scaling: 1 on, 0 off, -1
// unknown (no snapshot, or the key missing).
func windowScaling(s *snapshot.Snapshot) int64 {
	if s == nil {
		return -1
	}
	if v, ok := s.Int("net.ipv4.tcp_window_scaling"); ok {
		return v
	}
	return -1
}

// unscaled: the flow was held by its receiver's window on a connection
// that negotiated no window scaling.
func unscaled(f flows.Flow) bool {
	return f.Verdict.Verdict == diagnose.RwndLimited && slices.Contains(f.Verdict.Flags, diagnose.FlagNoWindowScaling)
}

// scaleEvidence: the flow was held by an unscaled window although both
// hosts allow scaling (so each SYN left with the option): a middlebox
// stripped it (diagnose.WindowScaleCause). A host with scaling off is
// its own limit (limitOf), not the path's.
func (d *judging) scaleEvidence(phase string, f flows.Flow, minRTT time.Duration, pathBps float64) *diagnose.ScaleEvidence {
	if !unscaled(f) || windowScaling(d.Hosts.Client) != 1 || windowScaling(d.Hosts.Server) != 1 {
		return nil
	}
	_, receiver := ends(phase)
	e := &diagnose.ScaleEvidence{MinRTT: minRTT, Bps: f.ThroughputBps, PathBps: pathBps, Receiver: "the " + receiver}
	if c := d.Capacity; c != nil && c.Bps == pathBps {
		e.Streams = c.Streams // the capacity phase measured it
	}
	return e
}

// reorderEvidence is the reordering a sender's socket counted over its
// samples (in time order).
func reorderEvidence(ss []flows.Sample, f flows.Flow, sender string) diagnose.ReorderEvidence {
	end := ss[len(ss)-1].Sock
	return diagnose.ReorderEvidence{Events: end.ReordSeen, Degree: end.Reordering, Spurious: end.DSACKDups,
		Retrans: end.Retrans, Segments: end.DataSegsOut, MinRTT: end.MinRTT, Bps: f.ThroughputBps, Sender: sender}
}

// blackHole: the test found a PMTU black hole.
func (d *judging) blackHole() bool {
	for _, c := range d.Causes {
		if c.Name == diagnose.CausePMTUBlackHole {
			return true
		}
	}
	return false
}

// cpuBoundEnd is the end ("server", "client") whose process was
// CPU-bound over a phase, "" none or not measured.
func cpuBoundEnd(p PhaseRaw) string {
	for _, x := range []struct {
		end string
		use *testdoc.CPUUse
	}{{testdoc.HostServer, p.Done.CPU}, {testdoc.HostClient, p.ClientCPU}} {
		if x.use == nil {
			continue
		}
		if diagnose.CPUBound(x.use.RunS, x.use.WaitS, p.Done.Seconds) {
			return x.end
		}
	}
	return ""
}

// cpuEvidence is both ends' use of their CPU over a phase, where
// measured: diagnose.PathCause names a CPU-bound end of a flow below
// the path's rate whatever the verdict (a sender held back by a CPU
// limit still has data queued and its bursts when it runs again fill
// the bottleneck's queue, and a receiver that reads late keeps its
// window from growing, so the socket can look bound by its congestion
// window: measured on 1 Gbit/s with one end held to 0.01 of a core, 262
// and 340 Mbit/s called a bottleneck).
func cpuEvidence(p PhaseRaw, f flows.Flow) []diagnose.CPUEvidence {
	sender, _ := ends(p.Grant.Name)
	var out []diagnose.CPUEvidence
	for _, x := range []struct {
		end string
		use *testdoc.CPUUse
	}{{testdoc.HostServer, p.Done.CPU}, {testdoc.HostClient, p.ClientCPU}} {
		if x.use == nil {
			continue
		}
		role := diagnose.ActorReceiver
		if x.end == sender {
			role = diagnose.ActorSender
		}
		out = append(out, diagnose.CPUEvidence{Host: "the " + x.end, Role: role, RunS: x.use.RunS, WaitS: x.use.WaitS, Seconds: p.Done.Seconds, Bps: f.ThroughputBps})
	}
	return out
}
