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
	q := max(e.LoadedRTT-e.MinRTT, 0)
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
	noQueue := q < queueMin || q.Seconds() < queueRise*e.MinRTT.Seconds()
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
	// overflowing.
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
	return c, true
}
