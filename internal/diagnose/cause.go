package diagnose

import (
	"fmt"
	"math"
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
	// TopRTT is the same samples' 90th percentile; 0 unknown (or too
	// few samples: with under 20 one delayed ACK is the top). A flow
	// that filled the path stands in at most one BDP of the bottleneck's
	// own queue, which adds at most one RTT: a queue near its top of
	// more (bloatTop) is deeper, even while the median, held down by how
	// early the flow left slow start, is not.
	TopRTT time.Duration
	// IdleRTT is the least round trip of the same probe as LoadedRTT
	// before any load (test's pings on its control connection, which
	// add the applications' own latency): the queue delay is LoadedRTT
	// minus it. MinRTT when 0.
	IdleRTT time.Duration
	// SteadyRTT is the round trip of the same probe over the flow's later
	// half (test: the median of the pings in the phase's second half); 0
	// unknown (LoadedRTT then). Another user's traffic keeps a shared
	// bottleneck's queue to the end; a lone flow's slow-start overshoot
	// does not (sharedCause).
	SteadyRTT time.Duration
	// FlowRTT is the sender's smoothed round trip (tcp_info) over the
	// flow's later half, the median; 0 unknown. With MinRTT (tcp_info's
	// too) it measures the queue the flow stood in without the pings'
	// reference, which another user's traffic raises as well: their
	// queue stands before this flow starts (sharedCause).
	FlowRTT time.Duration
	// LossRate is the share of the flow's segments retransmitted;
	// LossEvents how many times it lost (samples in which its
	// retransmission count rose, or with Episodes loss recoveries) and
	// Lost how many segments in all.
	LossRate   float64
	LossEvents int
	Lost       int64
	// Episodes: LossEvents are loss recoveries, each repairing one
	// window's losses (a packet capture tells them apart), and Intervals
	// are round trips: random loss puts about one segment in each, and
	// the losses of a queue overflowing at a burst come several at a
	// time. Without it the events are sample intervals, which merge the
	// losses of several windows: a burst is then at least burstLoss.
	Episodes bool
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
	// ProbedOtherWay: the loss probes ran, but on the other direction
	// (test's probes pace the download only): a hint to run them would
	// mislead.
	ProbedOtherWay bool
	// OtherLoadedRTT is the round trip near its top (test: the pings'
	// 90th percentile) while the other congestion control ran; 0
	// unknown. BBR paces at the rate it measures and probes a quarter
	// above it, so it fills any queue at the path's ceiling before it
	// loses, and a policer's ceiling keeps none (otherQueued).
	OtherLoadedRTT time.Duration
	// OtherMedianRTT is the median of the same (0 unknown): bbr keeps a
	// queue shallower than a BDP standing at a link half its run.
	OtherMedianRTT time.Duration
	// Datagrams are datagrams paced above the ceiling (test's datagram
	// run; nil not run): the queue they stood in says whether a queue or
	// a policer holds the ceiling, where the pings cannot (ceilingQueued).
	Datagrams *DatagramRun
	// Reordered: the sender saw the path reorder (ReorderNote). Late
	// segments and their repairs come in bursts and confound the paced
	// runs: bursty losses then name neither a shallow buffer nor a
	// policer.
	Reordered bool
	// FilledPath: the flow filled the path, its congestion window held
	// by the bottleneck (analyze's bottleneck verdict). A loss-based
	// congestion control fills whatever queue the bottleneck has, and a
	// queue of up to one BDP (the round trip at most doubled) is the
	// bottleneck's own: only a deeper one is bufferbloat. test leaves it
	// false (a bottleneck's queue stays a flag of its verdict there).
	FilledPath bool
	// ManyBps is the most the same path carried otherwise, on several
	// streams at once (test's capacity phase) or another congestion
	// control; 0 unknown. A flow held far below it at a standing queue
	// shares the bottleneck with other traffic (sharedCause).
	ManyBps float64
	// Onsets, when known (a capture at the sender), tallies the loss
	// recoveries by the queue before each: they, not the averages above,
	// then tell random loss from a queue's overflows.
	Onsets *Onsets
}

// Thresholds of the loss causes.
const (
	// queueRise: below this share of the RTT (or queueMin) no queue
	// stood at the bottleneck while the flow ran.
	queueRise = 0.02
	queueMin  = time.Millisecond
	// medianQueueMin: bbr's median ping this far above idle is a
	// standing queue (otherQueued).
	medianQueueMin = 250 * time.Microsecond
	// shallowRise: a queue that adds less than this share of the RTT
	// before losses is shallow; between it and bloatRise the queue is an
	// ordinary drop-tail bottleneck's, overflowing as the congestion
	// control probes it.
	shallowRise = 0.10
	// burstLoss, burstOverRandom: losses of at least burstLoss segments
	// per event on average (not asked of Episodes), and burstOverRandom
	// times what random loss at the same rate would put in one sample
	// interval, come in bursts:
	// a queue overflowing when a window's burst arrives (slow start's, or
	// a congestion window past what the queue holds). Random loss drops a
	// segment here and there.
	burstLoss       = 8
	burstOverRandom = 4
	// burstLossOnsets, burstOverRandomOnsets: the same with Onsets, the
	// events at a standing queue out of the count. Random loss then
	// leaves one segment an event (measured, lab causes on both shapes:
	// 1 in every random-loss run's events with no queue, test's and
	// flows', 1.2 once), while a 21-packet queue's bursts after slow
	// start lost 2 or 2.5 a time in flows' 4 s (2 of 10 runs at 50 ms x
	// 100 Mbit/s named random-loss with 4 and 4x).
	burstLossOnsets       = 2
	burstOverRandomOnsets = 1.8
)

// LossCause names the path cause of a loss-limited or congestion-window
// bound flow's losses, if the evidence shows one: bufferbloat (the queue
// delay rose by half the RTT; by a whole RTT for a flow that filled the
// path, or whose losses all came at the queue's top: Onsets.filled),
// random loss (a segment lost here and there, no queue at all) or a
// shallow buffer (losses in bursts, or with a queue of under a tenth of
// the RTT, never when every loss came at a higher one). Losses at a queue
// of a tenth to a half of the RTT are an ordinary bottleneck's: no cause.
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
	if e.TopRTT > 0 {
		nums["top_rtt_s"] = e.TopRTT.Seconds()
	}
	bbr := useBBR(e.CC)
	if c, ok := sharedCause(e, q, nums, sender); ok {
		return c, true
	}
	if bq, ok := bloated(e, q); ok {
		return bloatCause(e, bq, nums, sender, bbr), true
	}
	if e.LossRate <= 0 {
		return Cause{}, false
	}
	mathis := pathmodel.MathisBps(max(e.MSS, 536), e.MinRTT, e.LossRate)
	nums["mathis_bps"] = mathis
	nums["loss_events"], nums["lost_segments"] = float64(e.LossEvents), float64(e.Lost)
	noQueue := !queued(e, e.LoadedRTT)
	hidden := !noQueue && q.Seconds() >= shallowRise*e.MinRTT.Seconds()
	// The paced runs, with no queue, lost at rates the path carries
	// otherwise: random loss the flow's own queue hid, or on a deep buffer.
	if low, ok := pacedRandom(e, hidden); ok {
		nums["paced_bps"], nums["paced_carried_bps"] = low.RateBps, low.Bps
		return randomCause(e, e.LossRate, nums, "whatever the rate: "+pacedRandomWords(e, low), sender, bbr), true
	}
	if hidden { // an ordinary bottleneck's queue
		if how, ok := underTop(e); ok {
			e.Onsets.numbers(nums)
			return randomCause(offQueue(e), e.LossRate, nums, how, sender, bbr), true
		}
		nums["segments_per_loss"], _ = burstiness(e)
		return Cause{}, false
	}
	burst, randomLoss, how := lossPattern(e, nums, noQueue, rtt, qd)
	cured, ceiling := pacedVerdict(offQueue(e))
	atCeiling := unqueued(e, e.LoadedRTT)
	if ceiling > 0 && atCeiling && heldUnder(e, ceiling) {
		// Paced runs fell short above a ceiling with no queue and held
		// their pace under it, however the losses came: a policer
		// (random loss loses at any rate; a policer's deep bucket lets
		// a few segments a time go).
		return PolicerCause(e, ceiling), true
	}
	if randomLoss && !cured {
		// (Random loss loses a paced flow too: one that pacing cured
		// lost the bursts a shallow queue could not hold.)
		return randomCause(offQueue(e), e.LossRate, nums, how, sender, bbr), true
	}
	// Losses in bursts with no more than a small queue: a shallow one
	// overflowing, or with no queue at all, a policer. The paced runs
	// tell them apart when there are some. On a path the sender saw
	// reorder, neither: a window's late segments are SACKed around and
	// repaired in bursts too (measured: 5% held 30 ms on 100 ms x
	// 500 Mbit/s, 1,038 segments at a time at a 5 ms queue, named
	// shallow-buffer by flows), and the reordering is named instead.
	if e.Reordered {
		return Cause{}, false
	}
	if ceiling > 0 && atCeiling {
		return PolicerCause(e, ceiling), true
	}
	if e.Onsets.filled() {
		return Cause{}, false // the buffer held a queue: not shallow
	}
	return shallowCause(e, nums, shallowFacts{q: q, burst: burst, rtt: rtt, qd: qd, sender: sender, bbr: bbr, cured: cured, noQueue: noQueue}), true
}

// randomCause names random loss: how says how the losses came. e's loss
// rate is the random one, the Mathis bound's; all is that of every
// recovery, the queue's own overflows included (offQueue), said beside
// it when higher.
func randomCause(e LossEvidence, all float64, nums map[string]float64, how, sender, bbr string) Cause {
	mathis := pathmodel.MathisBps(max(e.MSS, 536), e.MinRTT, e.LossRate)
	nums["loss_rate"], nums["mathis_bps"] = e.LossRate, mathis
	rate := fmt.Sprintf("%.3g%% of the segments were lost", 100*e.LossRate)
	if all > e.LossRate {
		// (measured: 50 ms x 100 Mbit/s, 0.01% random loss: 1.03% of
		// all segments lost, nearly all in slow start's overshoot)
		nums["loss_rate_all"] = all
		rate += fmt.Sprintf(" at random (%.3g%% with the queue's own)", 100*all)
	}
	c := Cause{Name: CauseRandomLoss, Numbers: nums,
		Text: fmt.Sprintf("random loss: %s, %s; "+
			"a loss-based congestion control cuts its window at each loss and stays far below a clean path's rate (Reno would carry about %s at this loss rate and RTT, the Mathis bound; CUBIC grows back faster between losses)",
			rate, how, units.FormatRate(mathis))}
	if len(e.Paced) == 0 {
		c.Text += " (a policer with a small bucket, below the flow's rate, drops a segment at the end of a window's burst the same way: " + probesHint(e) + ")"
	}
	c.Fix = append(randomFixes(sender, bbr), ActorSender+": or move the data on N parallel streams: each carries about the Mathis bound")
	return c
}

// randomFixes are random loss's fixes: the network finds the lossy link,
// the sender (not already running BBR, bbr "") can use BBR.
func randomFixes(sender, bbr string) []string {
	fix := []string{ActorNetwork + ": find the link that loses packets (interface error counters, a faulty optic or cable, Wi-Fi, a duplex mismatch)"}
	if bbr != "" {
		fix = append(fix, ActorSender+": "+sender+" can "+bbr+": it does not back off at random losses")
	}
	return fix
}

// useBBR is the advice to use BBR for a sender running cc ("" when it
// runs BBR already).
func useBBR(cc string) string {
	return bbrAdvice(cc, "use BBR (net.ipv4.tcp_congestion_control=bbr with net.core.default_qdisc=fq)")
}

// lossPattern is how the flow lost: segments per loss event, whether that
// is random loss (one here and there) rather than bursts, and the words
// that say so. With Onsets only the events that came with no queue
// standing count: the others are the bottleneck's queue overflowing, and
// single ones are random loss whatever queue stood the rest of the time.
func lossPattern(e LossEvidence, nums map[string]float64, noQueue bool, rtt, qd string) (burst float64, random bool, how string) {
	burst, bursty := burstiness(e)
	random = noQueue && !bursty
	how = fmt.Sprintf("%d at a time on average in %d events, with no queue on the path (the round trip stayed at %s, +%s under load)",
		int(math.Round(burst)), e.LossEvents, rtt, qd)
	if o := e.Onsets; o != nil && o.Low+o.Under > 0 {
		o.numbers(nums)
		low := e
		low.LossEvents, low.Lost = o.Low+o.Under, o.LowLost+o.UnderLost
		burst, bursty = burstiness(low)
		// At a capture (Episodes) on a path seen to reorder, a late
		// segment's repair looks like a single loss: none of them says
		// random loss (measured: 100 ms x 500 Mbit/s, 5% held 30 ms,
		// one recovery of 2 segments with no queue before it beside six
		// at the top of slow start's queue, named random loss).
		random = !bursty && !(e.Reordered && e.Episodes)
		before := "with no queue before them ("
		if o.Under > 0 {
			// The median round trip stood at no queue, but slow start
			// filled the bottleneck's and lost there first.
			before = "that began with no queue or under half the queue's top (a drop-tail queue drops only when full; "
		}
		how = fmt.Sprintf("%d at a time on average in %d events %sthe round trip at %s, +%s under load)",
			int(math.Round(burst)), o.Low+o.Under, before, rtt, qd)
		if o.AtQueue > o.Under {
			how += fmt.Sprintf(", besides %d at a standing queue (the bottleneck's own, overflowing)", o.AtQueue-o.Under)
		}
	}
	nums["segments_per_loss"] = burst
	return burst, random, how
}

// shallowFacts are what the shallow buffer's text and fix quote.
type shallowFacts struct {
	q              time.Duration
	burst          float64
	rtt, qd        string
	sender, bbr    string
	cured, noQueue bool
}

// shallowCause names a shallow buffer: losses in bursts with at most a
// small queue standing.
func shallowCause(e LossEvidence, nums map[string]float64, f shallowFacts) Cause {
	peak := max(e.PeakBps, e.Bps)
	nums["queue_bytes"] = f.q.Seconds() * peak / 8
	// The queue is sized for the path's rate, not the flow's, which the
	// bursts' losses held down (measured: a policer at 252 Mbit/s read
	// from an upload at 35-72 Mbit/s sized a queue for those).
	peak = max(peak, e.ManyBps)
	c := Cause{Name: CauseShallowBuffer, Numbers: nums,
		Text: fmt.Sprintf("a shallow buffer: the flow lost %d segments in %d bursts (%d at a time) while the round trip rose only %s: "+
			"the bottleneck's queue cannot hold a window's burst, and the congestion control, cut back at each burst, stays far below the path's rate",
			e.Lost, e.LossEvents, int(math.Round(f.burst)), f.qd)}
	c.Fix = append(c.Fix, ActorNetwork+": give the bottleneck a queue of about one BDP ("+units.FormatBytes(pathmodel.BDP(peak, e.MinRTT))+
		" at "+units.FormatRate(peak)+" and "+f.rtt+"), or at least BDP/sqrt(flows)")
	if f.bbr != "" {
		c.Fix = append(c.Fix, ActorSender+": "+f.sender+" can pace its bursts: "+f.bbr+" (or the fq qdisc's pacing with its present one)")
	}
	switch {
	case f.cured:
		c.Text += "; paced, the same download " + pacedWords(e.Paced) + ": pacing removes the bursts the queue cannot hold"
	case f.noQueue && len(e.Paced) == 0:
		c.Text += " (with no queue at all a policer looks the same: " + probesHint(e) + ")"
	}
	return c
}

// probesHint says what tells a policer apart when no paced run did: test's
// loss probes, unless they ran and paced the other direction only.
func probesHint(e LossEvidence) string {
	if e.ProbedOtherWay {
		return "test's loss probes tell them apart, but they pace the download only; for this direction, test from the other host"
	}
	return "test --loss-probes tells them apart"
}

// burstiness is how many segments the flow lost per event on average,
// and whether that is bursts: burstOverRandom times what random loss at
// the same rate puts in one interval, and for coarse sample intervals
// (not Episodes) at least burstLoss.
func burstiness(e LossEvidence) (burst float64, bursty bool) {
	if e.LossEvents > 0 {
		burst = float64(e.Lost) / float64(e.LossEvents)
	}
	// Random (Poisson) loss of lambda segments per interval puts
	// lambda/(1-e^-lambda) in an interval that has any.
	random := 1.0
	if e.Intervals > 0 && e.Lost > 0 {
		lambda := float64(e.Lost) / float64(e.Intervals)
		random = lambda / -math.Expm1(-lambda)
	}
	floor, over := float64(burstLoss), float64(burstOverRandom)
	switch {
	case e.Episodes:
		floor = 0
	case e.Onsets != nil:
		// The events at a standing queue (slow start's overshoot, a
		// full queue's) are out of the count: what is left are the
		// losses with none, one segment each for random loss.
		floor, over = burstLossOnsets, burstOverRandomOnsets
	}
	return burst, burst >= floor && burst >= over*random
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
	return standing(e, queueDelay(e, loaded))
}

// standing: a queue delay of q is a queue that stood (queued).
func standing(e LossEvidence, q time.Duration) bool {
	return q >= queueMin && q.Seconds() >= queueRise*e.MinRTT.Seconds()
}

// otherQueued: a queue stood while the other congestion control (bbr)
// ran: its pings' 90th percentile rose queueMin above idle, whatever the
// RTT, or their median rose medianQueueMin. bbr's inflight cap (2 BDP)
// fills a queue shallower than a BDP at a link for much of its run; at a
// policer it paces at the policer's rate under the link's and nothing
// queues. Measured (lab causes, 2026-11-26/27, 37 runs): at a policer the
// 90th percentile +0.1 to +0.5 ms and the median -0.3 to +0.2 ms (+0.05
// at most on 50 ms x 100 Mbit/s); at a 0.05 BDP queue, on 100 ms x
// 500 Mbit/s (204 packets) +3.9 to +4.3 ms and +0.45 to +0.6 ms, on
// 50 ms x 100 Mbit/s (21 packets, 2.5 ms, under one 64 KB GSO frame's
// time on the wire) +0.7 to +2.5 ms and +0.27 to +0.68 ms (one run
// +1.14 and +0.05).
func otherQueued(e LossEvidence) bool {
	if e.OtherLoadedRTT > 0 && queueDelay(e, e.OtherLoadedRTT) >= queueMin {
		return true
	}
	return e.OtherMedianRTT > 0 && queueDelay(e, e.OtherMedianRTT) >= medianQueueMin
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
	dgrams := ""
	if r := e.Datagrams; r != nil {
		nums["datagrams_bps"], nums["datagrams_arrived_bps"], nums["datagrams_loss_rate"], nums["datagrams_queue_s"] = r.RateBps, r.Bps, r.LossRate, r.Queue.Seconds()
		dgrams = fmt.Sprintf("; datagrams paced at %s arrived at %s, %.2g%% lost, and found a queue of %s", units.FormatRate(r.RateBps), units.FormatRate(r.Bps), 100*r.LossRate,
			units.FormatDuration(r.Queue.Round(10*time.Microsecond)))
	}
	c := Cause{Name: CausePolicer, Numbers: nums,
		Text: fmt.Sprintf("a policer: the path drops what exceeds about %s, with no queue (the round trip stayed within %s of its %s minimum): paced, the same download %s%s; "+
			"a token bucket (a provider's rate limit, a cloud instance's bandwidth cap) drops the excess instead of queuing it, and a loss-based congestion control, cut at each burst of drops, carries less (%s)",
			units.FormatRate(ceiling), units.FormatDuration(q.Round(100*time.Microsecond)), units.FormatDuration(e.MinRTT.Round(100*time.Microsecond)),
			pacedWords(e.Paced), dgrams, units.FormatRate(e.Bps))}
	c.Fix = append(c.Fix,
		ActorNetwork+fmt.Sprintf(": the policer at about %s: raise its rate (the contract), give it a larger burst, or shape (queue) instead of policing", units.FormatRate(ceiling)),
		ActorSender+fmt.Sprintf(": %s can pace at or just below %s (SO_MAX_PACING_RATE, or tc ... fq maxrate) so that nothing exceeds it", sender, units.FormatRate(ceiling)))
	if e.BestOtherBps > 0 {
		c.Fix[1] += fmt.Sprintf("; BBR, which detects policers, carried %s", units.FormatRate(e.BestOtherBps))
	}
	return c
}
