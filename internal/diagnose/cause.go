package diagnose

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Path causes: what the path itself does wrong once the hosts' buffers
// are right. One vocabulary for every command that names them (test,
// and as it learns them analyze, flows, the exporter's cause label and
// report); each Cause comes with its numbers and who can act on it.
const (
	// CauseRandomLoss: loss that is not the bottleneck's queue
	// overflowing (a dirty link, Wi-Fi, a faulty optic): the flow loses
	// at windows below the path's BDP, with no queue standing, and a
	// loss-based congestion control never grows to the path's rate.
	CauseRandomLoss = "random-loss"
	// CauseShallowBuffer: the bottleneck's queue holds less than a
	// window's burst: the flow reaches the path's rate and loses as soon
	// as a small queue fills.
	CauseShallowBuffer = "shallow-buffer"
	// CauseBufferbloat: a deep queue on the path fills under load and the
	// RTT rises with it.
	CauseBufferbloat = "bufferbloat"
	// Causes of the path-failures work still to be judged (the lab makes
	// them: emulate --policer, --reorder, --mtu .../blackhole,
	// --middlebox, --client-cpu/--server-cpu, --cross).
	CausePolicer             = "policer"
	CauseReordering          = "reordering"
	CausePMTUBlackHole       = "pmtu-black-hole"
	CauseWindowScaleStripped = "window-scale-stripped"
	CauseCPUBound            = "cpu-bound"
	CauseSharedBottleneck    = "shared-bottleneck"
)

// Who can act on a cause.
const (
	ActorSender   = "sender"   // the host that sends the data
	ActorReceiver = "receiver" // the host that receives it
	ActorNetwork  = "network"  // the operator of the path
)

// Cause is a path cause with its numbers and a fix per actor.
type Cause struct {
	Name string `json:"name"`
	// Text says what was seen, with the numbers.
	Text string `json:"text"`
	// Fix holds one line per actor who can act, "actor: what to change".
	Fix     []string           `json:"fix"`
	Numbers map[string]float64 `json:"numbers"`
}

// LossEvidence is what tells the loss causes apart for a flow held by its
// congestion window that lost segments.
type LossEvidence struct {
	MinRTT    time.Duration // the path's round trip, idle
	LoadedRTT time.Duration // the round trip while the flow ran (median)
	// IdleRTT is the least round trip of the same probe as LoadedRTT
	// before any load (test's pings on its control connection, which
	// add the applications' own latency): the queue delay is LoadedRTT
	// minus it. MinRTT when 0.
	IdleRTT time.Duration
	// LossRate is the share of the flow's segments retransmitted;
	// LossEvents how many times it lost (samples in which its
	// retransmission count rose) and Lost how many segments in all.
	LossRate   float64
	LossEvents int
	Lost       int64
	// Intervals is how many sample intervals the flow moved data in (the
	// events are counted per interval: several random losses can fall in
	// one).
	Intervals int
	Bps       float64 // the flow's throughput
	// PeakBps is the highest rate the flow was seen delivering (the
	// kernel's delivery-rate estimate).
	PeakBps float64
	MSS     int
	CC      string // the sender's congestion control ("" unknown)
	Sender  string // how to name the sender in a fix ("the server")
	// Paced are the same download paced at higher rates (test
	// --loss-probes), BestOtherBps the most it carried under another
	// congestion control (bbr); 0 when not measured.
	Paced        []PacedRun
	BestOtherBps float64
	// Reordered: the sender saw the path reorder (ReorderNote). Late
	// segments and their repairs confound the paced runs, which then
	// name no policer.
	Reordered bool
}

// PacedRun is a single-stream download the sender paced at a rate.
type PacedRun struct {
	RateBps  float64 // the pace
	Bps      float64 // what it carried
	LossRate float64 // the share of its segments retransmitted
	// LoadedRTT is the round trip while it ran, near its top (test uses
	// the 90th percentile: a drop-tail queue overrun by a pace above the
	// link fills before each loss); 0 unknown.
	LoadedRTT time.Duration
}

// Paced runs against the unpaced flow: a run carried its pace when it
// reached paceHeld of it (and lost no more than a quarter of the unpaced
// flow's share: pacing removed the bursts that were lost); a run fell
// short when it carried under paceShort of its pace.
const (
	paceHeld  = 0.9
	paceShort = 0.85
)

// pacedVerdict reads the paced runs of a flow that lost in bursts: cured
// (every run carried its pace: the losses were bursts, which pacing
// removes), or a ceiling, the most any run carried (a run fell short of
// its pace, losing, with no queue: something drops what exceeds a rate
// even when it comes evenly). Neither when there are no runs or they say
// neither.
func pacedVerdict(e LossEvidence) (cured bool, ceiling float64) {
	if len(e.Paced) == 0 || e.Reordered {
		return false, 0
	}
	best := max(e.Bps, e.BestOtherBps)
	for _, r := range e.Paced {
		best = max(best, r.Bps)
	}
	cured, short := true, false
	for _, r := range e.Paced {
		if r.Bps < paceHeld*r.RateBps || r.LossRate > e.LossRate/4 {
			cured = false
		}
		// Short of its pace, losing, and no queue: a queue would be a
		// bottleneck's (its rate the best carried), not a policer's.
		if r.Bps < paceShort*r.RateBps && r.LossRate > 0 && !queued(e, r.LoadedRTT) {
			short = true
		}
	}
	if short {
		return false, best
	}
	return cured, 0
}

// Thresholds of the loss causes.
const (
	// bloatRise: a queue delay of at least this share of the RTT (and
	// bloatMin) under load is a deep queue filling.
	bloatRise = 0.5
	bloatMin  = 20 * time.Millisecond
	// queueRise: below this share of the RTT (or queueMin) no queue
	// stood at the bottleneck while the flow ran.
	queueRise = 0.02
	queueMin  = time.Millisecond
	// shallowRise: a queue that adds less than this share of the RTT
	// before losses is shallow; between it and bloatRise the queue is an
	// ordinary drop-tail bottleneck's, overflowing as the congestion
	// control probes it.
	shallowRise = 0.10
	// burstLoss, burstOverRandom: losses of at least burstLoss segments
	// per event on average, and burstOverRandom times what random loss
	// at the same rate would put in one sample interval, come in bursts:
	// a queue overflowing when a window's burst arrives (slow start's, or
	// a congestion window past what the queue holds). Random loss drops a
	// segment here and there.
	burstLoss       = 8
	burstOverRandom = 4
)

// LossCause names the path cause of a loss-limited or congestion-window
// bound flow's losses, if the evidence shows one: bufferbloat (the queue
// delay rose by half the RTT), random loss (a segment lost here and
// there, no queue at all) or a shallow buffer (losses in bursts, or with
// a queue of under a tenth of the RTT). Losses at a queue of a tenth to a
// half of the RTT are an ordinary bottleneck's: no cause.
func LossCause(e LossEvidence) (Cause, bool) {
	if e.MinRTT <= 0 || e.LoadedRTT <= 0 {
		return Cause{}, false
	}
	q := queueDelay(e, e.LoadedRTT)
	rtt := units.FormatDuration(e.MinRTT.Round(100 * time.Microsecond))
	qd := units.FormatDuration(q.Round(100 * time.Microsecond))
	sender := orWord(e.Sender, "the sender")
	nums := map[string]float64{"min_rtt_s": e.MinRTT.Seconds(), "loaded_rtt_s": e.LoadedRTT.Seconds(), "queue_delay_s": q.Seconds(),
		"loss_rate": e.LossRate, "throughput_bps": e.Bps, "peak_bps": e.PeakBps}
	bbr := bbrAdvice(e.CC, "use BBR (net.ipv4.tcp_congestion_control=bbr with net.core.default_qdisc=fq)")
	switch {
	case q >= bloatMin && q.Seconds() >= bloatRise*e.MinRTT.Seconds():
		nums["queue_bytes"] = q.Seconds() * e.Bps / 8
		c := Cause{Name: CauseBufferbloat, Numbers: nums,
			Text: fmt.Sprintf("bufferbloat: the round trip rose from %s to %s under load: a queue of about %s fills on the path",
				rtt, units.FormatDuration(e.LoadedRTT.Round(100*time.Microsecond)), units.FormatBytes(nums["queue_bytes"]))}
		c.Fix = append(c.Fix, ActorNetwork+": manage the bottleneck's queue (fq_codel or cake, or a queue of about one BDP, not more)")
		if bbr != "" {
			c.Fix = append(c.Fix, ActorSender+": "+sender+" can "+bbr+": it keeps the queue short")
		}
		return c, true
	case e.LossRate <= 0:
		return Cause{}, false
	}
	mathis := pathmodel.MathisBps(max(e.MSS, 536), e.MinRTT, e.LossRate)
	nums["mathis_bps"] = mathis
	nums["loss_events"], nums["lost_segments"] = float64(e.LossEvents), float64(e.Lost)
	burst := 0.0
	if e.LossEvents > 0 {
		burst = float64(e.Lost) / float64(e.LossEvents)
	}
	nums["segments_per_loss"] = burst
	// Random (Poisson) loss of lambda segments per interval puts
	// lambda/(1-e^-lambda) in an interval that has any.
	random := 1.0
	if e.Intervals > 0 && e.Lost > 0 {
		lambda := float64(e.Lost) / float64(e.Intervals)
		random = lambda / -math.Expm1(-lambda)
	}
	bursty := burst >= burstLoss && burst >= burstOverRandom*random
	noQueue := !queued(e, e.LoadedRTT)
	if !noQueue && q.Seconds() >= shallowRise*e.MinRTT.Seconds() {
		return Cause{}, false // an ordinary bottleneck's queue
	}
	if noQueue && !bursty {
		c := Cause{Name: CauseRandomLoss, Numbers: nums,
			Text: fmt.Sprintf("random loss: %.3g%% of the segments were lost, %d at a time on average in %d events, with no queue on the path (the round trip stayed at %s, +%s under load); "+
				"a loss-based congestion control cuts its window at each loss and stays far below a clean path's rate (Reno would carry about %s at this loss rate and RTT, the Mathis bound; CUBIC grows back faster between losses)",
				100*e.LossRate, int(math.Round(burst)), e.LossEvents, rtt, qd, units.FormatRate(mathis))}
		c.Fix = append(c.Fix, ActorNetwork+": find the link that loses packets (interface error counters, a faulty optic or cable, Wi-Fi, a duplex mismatch)")
		if bbr != "" {
			c.Fix = append(c.Fix, ActorSender+": "+sender+" can "+bbr+": it does not back off at random losses")
		}
		c.Fix = append(c.Fix, ActorSender+": or move the data on N parallel streams: each carries about the Mathis bound")
		return c, true
	}
	// Losses in bursts with no more than a small queue: a shallow one
	// overflowing, or with no queue at all, a policer. The paced runs
	// tell them apart when there are some.
	cured, ceiling := pacedVerdict(e)
	if ceiling > 0 && noQueue {
		return PolicerCause(e, ceiling), true
	}
	peak := max(e.PeakBps, e.Bps)
	nums["queue_bytes"] = q.Seconds() * peak / 8
	c := Cause{Name: CauseShallowBuffer, Numbers: nums,
		Text: fmt.Sprintf("a shallow buffer: the flow lost %d segments in %d bursts (%d at a time) while the round trip rose only %s: "+
			"the bottleneck's queue cannot hold a window's burst, and the congestion control, cut back at each burst, stays far below the path's rate",
			e.Lost, e.LossEvents, int(math.Round(burst)), qd)}
	c.Fix = append(c.Fix, ActorNetwork+": give the bottleneck a queue of about one BDP ("+units.FormatBytes(pathmodel.BDP(peak, e.MinRTT))+
		" at "+units.FormatRate(peak)+" and "+rtt+"), or at least BDP/sqrt(flows)")
	if bbr != "" {
		c.Fix = append(c.Fix, ActorSender+": "+sender+" can pace its bursts: "+bbr+" (or the fq qdisc's pacing with its present one)")
	}
	switch {
	case cured:
		c.Text += "; paced, the same download " + pacedWords(e.Paced) + ": pacing removes the bursts the queue cannot hold"
	case noQueue && len(e.Paced) == 0:
		c.Text += " (with no queue at all a policer looks the same: test --loss-probes tells them apart)"
	}
	return c, true
}

// queueDelay is what a loaded round trip adds to the idle one.
func queueDelay(e LossEvidence, loaded time.Duration) time.Duration {
	idle := e.IdleRTT
	if idle <= 0 {
		idle = e.MinRTT
	}
	return max(loaded-idle, 0)
}

// queued: a queue stood under load (a delay of at least queueMin and
// queueRise of the RTT). An unknown loaded RTT (0) is no evidence of one.
func queued(e LossEvidence, loaded time.Duration) bool {
	if loaded <= 0 {
		return false
	}
	q := queueDelay(e, loaded)
	return q >= queueMin && q.Seconds() >= queueRise*e.MinRTT.Seconds()
}

// pacedWords says what the paced runs carried and lost.
func pacedWords(rs []PacedRun) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("at %s carried %s, losing %.2g%%", units.FormatRate(r.RateBps), units.FormatRate(r.Bps), 100*r.LossRate))
	}
	return strings.Join(parts, "; ")
}

// PolicerCause names a policer at about ceiling: a token bucket that
// drops what exceeds its rate instead of queuing it. The paced runs show
// it: paced above the ceiling, the flow still carried no more and lost
// what exceeded it, with no queue standing.
func PolicerCause(e LossEvidence, ceiling float64) Cause {
	sender := orWord(e.Sender, "the sender")
	q := queueDelay(e, e.LoadedRTT)
	nums := map[string]float64{"policer_bps": ceiling, "min_rtt_s": e.MinRTT.Seconds(), "loaded_rtt_s": e.LoadedRTT.Seconds(),
		"queue_delay_s": q.Seconds(), "loss_rate": e.LossRate, "throughput_bps": e.Bps}
	for i, r := range e.Paced {
		nums[fmt.Sprintf("paced%d_bps", i+1)], nums[fmt.Sprintf("paced%d_carried_bps", i+1)], nums[fmt.Sprintf("paced%d_loss_rate", i+1)] = r.RateBps, r.Bps, r.LossRate
	}
	c := Cause{Name: CausePolicer, Numbers: nums,
		Text: fmt.Sprintf("a policer: the path drops what exceeds about %s, with no queue (the round trip stayed within %s of its %s minimum): paced, the same download %s; "+
			"a token bucket (a provider's rate limit, a cloud instance's bandwidth cap) drops the excess instead of queuing it, and a loss-based congestion control, cut at each burst of drops, carries less (%s)",
			units.FormatRate(ceiling), units.FormatDuration(q.Round(100*time.Microsecond)), units.FormatDuration(e.MinRTT.Round(100*time.Microsecond)),
			pacedWords(e.Paced), units.FormatRate(e.Bps))}
	c.Fix = append(c.Fix,
		ActorNetwork+fmt.Sprintf(": the policer at about %s: raise its rate (the contract), give it a larger burst, or shape (queue) instead of policing", units.FormatRate(ceiling)),
		ActorSender+fmt.Sprintf(": %s can pace at or just below %s (SO_MAX_PACING_RATE, or tc ... fq maxrate) so that nothing exceeds it", sender, units.FormatRate(ceiling)))
	if e.BestOtherBps > 0 {
		c.Fix[1] += fmt.Sprintf("; BBR, which detects policers, carried %s", units.FormatRate(e.BestOtherBps))
	}
	return c
}

// ScaleEvidence is a flow held by its receiver's window whose handshake
// negotiated no window scaling although both hosts allow it (their
// net.ipv4.tcp_window_scaling is 1, so each SYN left with the option).
type ScaleEvidence struct {
	MinRTT   time.Duration
	Bps      float64 // the flow's throughput
	PathBps  float64 // the path's rate (0 unknown)
	Receiver string  // how to name the receiver ("the client")
}

// WindowScaleCause names a middlebox that stripped the window scale
// option: without it no window exceeds 64 KB, whatever the hosts'
// buffers, so the flow is capped at 64 KB per round trip.
func WindowScaleCause(e ScaleEvidence) (Cause, bool) {
	if e.MinRTT <= 0 {
		return Cause{}, false
	}
	ceiling := pathmodel.WindowCeiling(pathmodel.MaxUnscaledWindow, e.MinRTT)
	rtt := units.FormatDuration(e.MinRTT.Round(100 * time.Microsecond))
	nums := map[string]float64{"window_bytes": pathmodel.MaxUnscaledWindow, "ceiling_bps": ceiling, "throughput_bps": e.Bps, "min_rtt_s": e.MinRTT.Seconds()}
	c := Cause{Name: CauseWindowScaleStripped, Numbers: nums,
		Text: fmt.Sprintf("window scaling stripped: both hosts allow window scaling, yet this connection negotiated none, so %s can advertise at most 64 KB: "+
			"%s at %s (measured %s). Something between the hosts (a firewall's TCP normalisation, a load balancer, a proxy) removed the option from the SYNs",
			orWord(e.Receiver, "the receiver"), units.FormatRate(ceiling), rtt, units.FormatRate(e.Bps))}
	c.Fix = append(c.Fix, ActorNetwork+": let the TCP window scale option (RFC 7323) through the firewall, load balancer or proxy between the hosts; no buffer setting on either host can raise a 64 KB window")
	if e.PathBps > ceiling {
		n := int(math.Ceil(e.PathBps / ceiling))
		nums["path_bps"], nums["streams"] = e.PathBps, float64(n)
		c.Fix = append(c.Fix, fmt.Sprintf("%s: until then, move the data on %d parallel streams: each carries about %s", ActorSender, n, units.FormatRate(ceiling)))
	}
	return c, true
}

// ReorderEvidence is what the ends' tcp_info say of reordering over a
// flow held by its congestion window.
type ReorderEvidence struct {
	// Events is how often the sender saw segments arrive out of order
	// (tcpi_reord_seen), Degree its reordering degree at the end
	// (tcpi_reordering, segments), Spurious the retransmissions the
	// receiver reported as duplicates (D-SACK), Retrans all the
	// segments retransmitted and Segments all the data segments sent.
	Events, Degree, Spurious, Retrans, Segments int64
	MinRTT                                      time.Duration
	Bps                                         float64 // the flow's throughput
	Sender                                      string  // how to name the sender ("the server")
	// Held: the flow was held by its losses far below the path's rate
	// (a clean path of the same shape carries it), so reordering the
	// sender kept seeing is named even when its repairs were real
	// retransmissions.
	Held bool
}

// spuriousShare: at least this share of the retransmissions were
// duplicates (D-SACK) for reordering, not loss, to be what cut the
// congestion window.
const spuriousShare = 0.25

// Reordering the sender tolerated, to be worth a note: this many events,
// and a reordering degree raised above the kernel's default of 3.
const (
	reorderNoteEvents = 10
	defaultReordering = 3
)

// ReorderNote describes a path that reorders segments without costing
// the flow (ReorderCause is false): Linux's RACK waits a fraction of the
// RTT before taking a late segment for lost, so only a stack without it
// would pay.
func ReorderNote(e ReorderEvidence) (Cause, bool) {
	if e.Events < reorderNoteEvents || e.Degree <= defaultReordering {
		return Cause{}, false
	}
	sender := orWord(e.Sender, "the sender")
	c := Cause{Name: CauseReordering, Numbers: e.numbers(),
		Text: fmt.Sprintf("the path reorders segments: %s saw it %d times and now waits for %d segments (3 by default) before calling one lost; "+
			"it tolerated them (%d spurious retransmissions), at no cost to this flow: a stack without RACK (older kernels, other systems, appliances) would take the late segments for losses",
			sender, e.Events, e.Degree, e.Spurious)}
	c.Fix = append(c.Fix, reorderNetworkFix)
	return c, true
}

// reorderNetworkFix is what the path's operator does about reordering.
const reorderNetworkFix = ActorNetwork + ": keep each flow on one path: hash link aggregation (LAG, ECMP) on the 5-tuple, not per packet, and check for multipath or a load balancer spraying packets"

// numbers are the evidence's counts as a cause's numbers.
func (e ReorderEvidence) numbers() map[string]float64 {
	return map[string]float64{"reorder_events": float64(e.Events), "reordering_degree": float64(e.Degree),
		"spurious_retransmissions": float64(e.Spurious), "retransmissions": float64(e.Retrans)}
}

// ReorderCause names a path that reorders segments when the sender saw
// reordering and a good part of its retransmissions were spurious: it
// took late segments for lost ones, retransmitted them and cut its
// window for losses that never happened.
func ReorderCause(e ReorderEvidence) (Cause, bool) {
	spurious := e.Events > 0 && e.Spurious > 0 && float64(e.Spurious) >= spuriousShare*float64(e.Retrans)
	if !spurious && !(e.Held && e.Events >= reorderNoteEvents && e.Degree > defaultReordering) {
		return Cause{}, false
	}
	nums := e.numbers()
	nums["throughput_bps"] = e.Bps
	share := 0.0
	if e.Segments > 0 {
		share = float64(e.Retrans) / float64(e.Segments)
	}
	nums["retransmitted_share"] = share
	sender := orWord(e.Sender, "the sender")
	c := Cause{Name: CauseReordering, Numbers: nums,
		Text: fmt.Sprintf("reordering: the path delivers segments out of order (%s saw it %d times and now waits for %d segments before calling one lost); "+
			"%d of its %d retransmissions (%.2g%% of the segments) were reported duplicates: segments taken for lost were only late, and each time the congestion window was cut for nothing",
			sender, e.Events, e.Degree, e.Spurious, e.Retrans, 100*share)}
	if !spurious {
		c.Text = fmt.Sprintf("reordering: the path delivers segments out of order (%s saw it %d times and now waits for %d segments before calling one lost), "+
			"and the flow, held far below the path's rate by its losses (%d retransmissions, %.2g%% of the segments, %d reported duplicates), never grew back: "+
			"while segments arrive late, each loss takes longer to tell and repair",
			sender, e.Events, e.Degree, e.Retrans, 100*share, e.Spurious)
	}
	c.Fix = append(c.Fix, reorderNetworkFix,
		ActorSender+": "+sender+" tolerates more with RACK (net.ipv4.tcp_recovery=1, the default since Linux 4.18) and a higher starting degree (net.ipv4.tcp_reordering, 3 by default; e.g. 10)")
	return c, true
}

// BlackHoleCause names a PMTU black hole: full-size segments from the
// sender never arrived while small ones did, and segments of mss bytes
// got through. Linux finds the path's MTU itself only with
// net.ipv4.tcp_mtu_probing (RFC 4821); without it the connection stalls
// at its first full-size segment, retransmitting it until it times out.
func BlackHoleCause(mss int, sender string) Cause {
	sender = orWord(sender, "the sender")
	c := Cause{Name: CausePMTUBlackHole, Numbers: map[string]float64{"mss_that_passed": float64(mss)},
		Text: fmt.Sprintf("a PMTU black hole: full-size segments from %s never arrived while small ones did, and %d-byte segments got through: "+
			"a link on the path has a smaller MTU than the hosts, and the ICMP 'fragmentation needed' (ICMPv6 'packet too big') that should tell %s is lost or filtered; "+
			"every connection that sends a full-size segment stalls (this test ran with %d-byte segments)", sender, mss, sender, mss)}
	c.Fix = append(c.Fix,
		ActorNetwork+": let ICMP 'fragmentation needed' (type 3 code 4) and ICMPv6 'packet too big' through the firewalls on the path, or clamp the MSS where the MTU shrinks (iptables -t mangle ... -j TCPMSS --clamp-mss-to-pmtu)",
		ActorSender+": "+sender+" can find the path's MTU itself: net.ipv4.tcp_mtu_probing=1 (probes after a black hole; 2 always)")
	return c
}

// CPUEvidence is one end's process over a phase: the seconds its threads
// ran and waited, runnable, for a CPU.
type CPUEvidence struct {
	Host    string // how to name it ("the server")
	Role    string // ActorSender or ActorReceiver
	RunS    float64
	WaitS   float64
	Seconds float64 // the phase's length
	Bps     float64 // what the flow carried
}

// An end is CPU-bound when its threads waited for a CPU cpuWaitShare of
// the phase or more, summed over its threads (a CPU limit throttles a
// process by keeping it waiting; a host too busy does the same: a
// process held to 0.01 of a core at 1 Gbit/s waited 1.67 s a second, one
// running free at 100 Mbit/s 0.003), or ran cpuRunCores of a core.
const (
	cpuWaitShare = 0.5
	cpuRunCores  = 0.9
)

// CPUBound: a process that ran runS and waited waitS seconds for a CPU
// over seconds was held by its CPU.
func CPUBound(runS, waitS, seconds float64) bool {
	return seconds > 0 && (waitS/seconds >= cpuWaitShare || runS/seconds >= cpuRunCores)
}

// CPUCause names a CPU-bound end (CPUBound) of a flow: the sender could
// not write faster, or the receiver read faster. Numbers["receiver"] is
// 1 when the end is the receiver.
func CPUCause(e CPUEvidence) (Cause, bool) {
	if !CPUBound(e.RunS, e.WaitS, e.Seconds) {
		return Cause{}, false
	}
	cores, wait := e.RunS/e.Seconds, e.WaitS/e.Seconds
	host := orWord(e.Host, "the "+e.Role)
	verb, recv := "write", 0.0
	if e.Role == ActorReceiver {
		verb, recv = "read", 1
	}
	c := Cause{Name: CauseCPUBound, Numbers: map[string]float64{"run_cores": cores, "wait_share": wait, "throughput_bps": e.Bps, "receiver": recv},
		Text: fmt.Sprintf("a CPU-bound %s: %s's process ran %.2f of a core and its threads waited for a CPU %.0f%% of the phase: "+
			"a CPU limit (a cgroup's cpu.max, a container's CPU quota) or a host too busy to run it; the flow (%s) goes no faster than %s can %s",
			e.Role, host, cores, 100*wait, units.FormatRate(e.Bps), host, verb)}
	c.Fix = append(c.Fix, fmt.Sprintf("%s: give %s's process more CPU: raise its cgroup's cpu.max (the container's CPU limit), or move other work off the host", e.Role, host))
	return c, true
}
