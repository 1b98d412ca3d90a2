package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
)

// PathEvidence is what a producer saw of the path while one flow
// direction ran, beside its verdict: each producer (analyze's capture,
// flows' tcp_info, test's phases) fills what its vantage shows and
// leaves the rest empty; PathCause decides, in one order for all.
type PathEvidence struct {
	// Bps is what the flow carried; PathBps what the path carries as
	// TCP payload (measured, or pathmodel.Goodput of a rate the user
	// gave; 0 unknown). A flow at it (AtPathRate) was held by nothing
	// the path did wrong, unless a policer set that rate.
	Bps, PathBps float64
	// BlackHole: the producer saw full-size segments never arrive while
	// smaller ones passed (BlackHoleSeen, BlackHoleStuck). It is the
	// story whatever the verdict: the stall it causes is the rest.
	BlackHole *Cause
	// CPU: both ends' use of their CPU over the run (test measures it),
	// judged against CPUPathBps: a CPU-bound end of a flow below it is
	// the cause, whatever the verdict.
	CPU        []CPUEvidence
	CPUPathBps float64
	// Scale: the flow was held by an unscaled receive window while both
	// hosts allow window scaling (a middlebox stripped the option).
	Scale *ScaleEvidence
	// Reorder is the reordering counted over the judged part (a cause
	// when it cost the flow); ReorderLife over the connection's life,
	// for the note of reordering tolerated (nil: Reorder).
	Reorder, ReorderLife *ReorderEvidence
	// Loss is how the flow lost, nil when not measured. LossQuiet: none
	// was lost over the judged part, so Loss holds the losses before,
	// which tell only bursts (a few segments lost before and none since
	// is no random loss).
	Loss      *LossEvidence
	LossQuiet bool
	// Away says why this vantage cannot tell the loss causes apart (a
	// capture taken away from the sender), "" when it can.
	Away string
	// Scope is what the verdict's share is of, as Info.Scope ("": the
	// transfer).
	Scope string
	// Retrans is the sender's count of its retransmissions, when nothing
	// else tells how the flow lost (no RTT under load: an iperf3 upload).
	Retrans *RetransEvidence
}

// RetransEvidence is a sender's retransmissions over a flow: Segments
// retransmitted of Bytes sent, at MSS, over a path of RTT.
type RetransEvidence struct {
	Segments, Bytes int64
	MSS             int
	RTT             time.Duration
	Sender          string // "this host"
}

// Judgement is a direction's verdict with the path's cause decided:
// the cause that held the flow (nil none), causes seen that did not
// hold it, and why no cause could be told from this vantage.
type Judgement struct {
	Verdict   Verdict
	Cause     *Cause
	Seen      []Cause
	CauseNote string
}

// PathCause decides what the path did to a flow judged v, in one order
// for every producer: a PMTU black hole; a CPU-bound end; a middlebox
// that stripped window scaling; then, for a flow held by its congestion
// window (loss-limited or bottleneck, not by timeouts), reordering that
// cost it, and the loss causes (random loss, a shallow buffer,
// bufferbloat, a policer) unless the vantage cannot tell them apart.
// A flow at the path's rate has no cause but a policer; random loss it
// shrugged off is seen. A bottleneck whose losses were named is
// loss-limited: its window was held down, not by a full link. The
// verdict's fix is then the cause's.
func PathCause(v Verdict, e PathEvidence) Judgement {
	j := Judgement{Verdict: v}
	note, reordered := ReorderNote(orReorder(e.ReorderLife, e.Reorder))
	j.Cause, j.Seen, j.CauseNote = pathCause(v, e, reordered)
	if c := j.Cause; reordered && (c == nil || c.Name != CauseReordering) {
		j.Seen = append(j.Seen, note)
	}
	if j.Cause != nil {
		lossHeld(&j.Verdict, *j.Cause, e.PathBps, orWord(e.Scope, "the transfer"))
		j.Verdict.Fix = strings.Join(j.Cause.Fix, "; ")
	} else if r := e.Retrans; r != nil && v.Verdict == Bottleneck && r.Segments > 0 && r.Bytes > 0 {
		// No cause may be named without the RTT under load, yet losses
		// enough to hold a Reno or CUBIC flow at this rate held it, not
		// a full link (a 1% loss path read "bottleneck" at 1.8 of 100
		// Mbit/s).
		share := SegmentShare(r.Segments, r.Bytes, max(r.MSS, 536))
		if LossExplains(share, r.MSS, r.RTT, v.ThroughputBps) {
			j.Verdict.Verdict = LossLimited
			j.Verdict.Summary = fmt.Sprintf("%s retransmitted %d segments (%.2g%% of its data), enough to hold its congestion window near this rate",
				orWord(r.Sender, "the sender"), r.Segments, 100*share)
		}
	}
	return j
}

// LossExplains: losses at lossRate (a share of the segments) would hold
// a Reno or CUBIC flow within twice bps on a path of rtt (the Mathis
// bound of that rate is under twice the rate seen): with nothing else
// to tell how the flow lost, they held it.
func LossExplains(lossRate float64, mss int, rtt time.Duration, bps float64) bool {
	bound := mathisBound(lossRate, mss, rtt)
	return bound > 0 && bound < 2*bps
}

// mathisBound is the Mathis bound of lossRate at mss (536 at least) and
// rtt.
func mathisBound(lossRate float64, mss int, rtt time.Duration) float64 {
	return pathmodel.MathisBps(max(mss, 536), rtt, lossRate)
}

// pathCause is PathCause's cause; reordered: the sender saw the path
// reorder (ReorderNote).
func pathCause(v Verdict, e PathEvidence, reordered bool) (held *Cause, seen []Cause, note string) {
	if e.BlackHole != nil {
		return e.BlackHole, nil, ""
	}
	if c, ok := cpuOf(v, e); ok {
		return &c, nil, ""
	}
	if e.Scale != nil {
		if c, ok := WindowScaleCause(*e.Scale); ok {
			return &c, nil, ""
		}
	}
	if (v.Verdict != LossLimited && v.Verdict != Bottleneck) ||
		slices.Contains(v.Flags, FlagRTOStall) || slices.Contains(v.Flags, FlagPeerUnresponsive) {
		// Timeouts held it (an outage, a peer gone): their silence, not
		// how the losses came, is the story, and the verdict tells it.
		return nil, nil, ""
	}
	atPath := AtPathRate(e.Bps, e.PathBps)
	if e.Reorder != nil && !atPath {
		if c, ok := ReorderCause(*e.Reorder); ok {
			return &c, nil, ""
		}
	}
	if e.Away != "" {
		return nil, nil, e.Away
	}
	if e.Loss == nil {
		return nil, nil, ""
	}
	le := *e.Loss
	le.Reordered = le.Reordered || reordered
	c, ok := LossCause(le)
	switch {
	case ok && c.Name == CausePolicer:
		return &c, nil, ""
	case atPath:
		if s, ok := RandomLossSeen(le); ok {
			return nil, []Cause{s}, ""
		}
		return nil, nil, ""
	case !ok, e.LossQuiet && c.Name == CauseRandomLoss:
		return nil, nil, ""
	}
	return &c, nil, ""
}

// cpuOf is the first CPU-bound end of a flow below the path's rate: the
// receiver first for a flow held by its window (a receiver that reads
// late keeps it from growing), the sender first otherwise.
func cpuOf(v Verdict, e PathEvidence) (Cause, bool) {
	if len(e.CPU) == 0 || AtPathRate(e.Bps, e.CPUPathBps) {
		return Cause{}, false
	}
	first := ActorSender
	if v.Verdict == RwndLimited || v.Verdict == ZeroWindow {
		first = ActorReceiver
	}
	for _, firstRole := range []bool{true, false} {
		for _, x := range e.CPU {
			if c, ok := CPUCause(x); ok && (x.Role == first) == firstRole {
				return c, true
			}
		}
	}
	return Cause{}, false
}

func orReorder(a, b *ReorderEvidence) ReorderEvidence {
	switch {
	case a != nil:
		return *a
	case b != nil:
		return *b
	}
	return ReorderEvidence{}
}

// lossCauses are the causes that hold a congestion window down by its
// losses.
var lossCauses = []string{CauseRandomLoss, CauseShallowBuffer, CausePolicer, CauseReordering, CausePMTUBlackHole}

// mathisSlack: a flow whose named losses hold it runs within this
// factor of the Mathis bound of its loss rate (CUBIC grows faster than
// Reno's bound between losses; measured: random loss of 0.32% at 5.5
// Mbit/s, 1.1x its bound; 0.003% at 86 Mbit/s on 100 Mbit/s x 50 ms, a
// flow that filled the link, 1.7x). Beyond it, with the path's rate
// unknown, the flow outran what its losses allow: something else (the
// link) held it.
const mathisSlack = 1.5

// lossHeld: a flow bound by its congestion window that lost to a named
// cause below the path's known rate, or at a rate its losses explain
// (mathisSlack), had its window held down by those losses, not by a
// full link: loss-limited, not a bottleneck. With the path's rate
// unknown and losses too rare to explain the rate, it stays a
// bottleneck that saw them.
func lossHeld(v *Verdict, c Cause, pathBps float64, scope string) {
	if v.Verdict != Bottleneck || !slices.Contains(lossCauses, c.Name) {
		return
	}
	if m := c.Numbers["mathis_bps"]; pathBps <= 0 && (m <= 0 || v.ThroughputBps > mathisSlack*m) {
		return
	}
	v.Verdict = LossLimited
	v.Summary = fmt.Sprintf("%s of %s the sender was bound by its congestion window, which the path's losses held down (%s) below the path's rate (achieved %s)",
		pct(v.Share), scope, c.Name, rateWords(v.ThroughputBps))
}
