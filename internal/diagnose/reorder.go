package diagnose

import (
	"fmt"
	"time"
)

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
	// AtCapture: the evidence is a packet capture's (analyze): Events
	// are segments seen arriving out of order at the capture point (or, at
	// the sender, holes filled late: tcpflow's lateFill),
	// Spurious the retransmissions the receiver reported as duplicates
	// (D-SACK), and the sender's degree is unknown (0).
	AtCapture bool
}

// spuriousShare: at least this share of the retransmissions were
// duplicates (D-SACK) for reordering, not loss, to be what cut the
// congestion window.
const spuriousShare = 0.25

// Reordering the sender tolerated, to be worth a note: this many events,
// at least one per reorderNoteSegments data segments (a fast loopback or
// LAN flow sees a few in millions of segments, from its own CPUs, not a
// path), and a reordering degree raised above the kernel's default of 3.
const (
	reorderNoteEvents   = 10
	reorderNoteSegments = 5000
	defaultReordering   = 3
)

// ReorderNote describes a path that reorders segments without costing
// the flow (ReorderCause is false): Linux's RACK waits a fraction of the
// RTT before taking a late segment for lost, so only a stack without it
// would pay.
//
// A capture (AtCapture) knows no degree: there the late segments must be
// at least one in reorderCaptureSegments, which no clean path shows.
func ReorderNote(e ReorderEvidence) (Cause, bool) {
	if e.AtCapture {
		return reorderSeenAtCapture(e)
	}
	if e.Events < reorderNoteEvents || e.Degree <= defaultReordering || e.Events*reorderNoteSegments < e.Segments {
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

// reorderCaptureSegments: a capture's reordering note needs a late
// segment in this many data segments or fewer (0.05%: clean paths in
// the lab show none, 5% of the segments held 30 ms 0.095% to 4%, a hole
// SACKed around counting once however many segments were late in it;
// 0.1% missed a 100 ms x 500 Mbit/s download with 263 late of 275,600).
const reorderCaptureSegments = 2000

func reorderSeenAtCapture(e ReorderEvidence) (Cause, bool) {
	if e.Events < reorderNoteEvents || e.Events*reorderCaptureSegments < e.Segments {
		return Cause{}, false
	}
	share := float64(e.Events) / float64(max(e.Segments, 1))
	c := Cause{Name: CauseReordering, Numbers: e.numbers(),
		Text: fmt.Sprintf("the path reorders segments: %d of %d (%.2g%%) arrived out of order at the capture point, or late at the receiver (SACKed around, then acknowledged with nothing resent); "+
			"%d of the %d retransmissions were reported duplicates: a stack with RACK (Linux since 4.18) tolerates this, an older one or an appliance takes late segments for losses",
			e.Events, e.Segments, 100*share, e.Spurious, e.Retrans)}
	c.Numbers["reordered_share"] = share
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
	seen := fmt.Sprintf("%s saw it %d times and now waits for %d segments before calling one lost", sender, e.Events, e.Degree)
	if e.AtCapture {
		seen = fmt.Sprintf("%d segments arrived out of order at the capture point, or late at the receiver: SACKed around, then acknowledged with nothing resent", e.Events)
	}
	c := Cause{Name: CauseReordering, Numbers: nums,
		Text: fmt.Sprintf("reordering: the path delivers segments out of order (%s); "+
			"%d of its %d retransmissions (%.2g%% of the segments) were reported duplicates: segments taken for lost were only late, and each time the congestion window was cut for nothing",
			seen, e.Spurious, e.Retrans, 100*share)}
	if !spurious {
		c.Text = fmt.Sprintf("reordering: the path delivers segments out of order (%s), "+
			"and the flow, held far below the path's rate by its losses (%d retransmissions, %.2g%% of the segments, %d reported duplicates), never grew back: "+
			"while segments arrive late, each loss takes longer to tell and repair",
			seen, e.Retrans, 100*share, e.Spurious)
	}
	c.Fix = append(c.Fix, reorderNetworkFix,
		ActorSender+": "+sender+" tolerates more with RACK (net.ipv4.tcp_recovery=1, the default since Linux 4.18) and a higher starting degree (net.ipv4.tcp_reordering, 3 by default; e.g. 10)")
	return c, true
}
