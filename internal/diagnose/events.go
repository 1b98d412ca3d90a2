// Events: the marks on a time-sequence graph (retransmissions, window
// events, reordering) a timeline keeps beside its series.

package diagnose

import (
	"time"
)

// EventKind names a mark on the time-sequence graph.
type EventKind uint8

// Event kinds.
const (
	EvRetransFast EventKind = iota
	EvRetransRTO
	EvRetransSpurious
	EvHardwareDup
	EvZeroWindow
	EvWindowOpen
	EvZeroWindowProbe
	EvKeepAlive
	EvReorder
	// EvDSACK: the receiver reported data it got twice (RFC 2883): an
	// earlier retransmission was spurious. Not a transmission.
	EvDSACK
	// EvRetransProbe: a tail loss probe (RFC 8985): the last segment sent
	// again after a short silence, to draw an ACK or SACK that starts a
	// fast recovery instead of a timeout.
	EvRetransProbe
	// EvSpuriousTS: an ACK echoed the timestamp of a segment's first
	// transmission after it was resent (RFC 3522): the resend was
	// spurious. Not a transmission.
	EvSpuriousTS
	numEvents
)

var eventNames = [numEvents]string{"retrans-fast", "retrans-rto", "retrans-spurious", "hardware-dup", "zero-window", "window-open", "zero-window-probe", "keep-alive", "reorder", "dsack", "retrans-probe", "spurious-timestamps"}

func (k EventKind) String() string {
	if k < numEvents {
		return eventNames[k]
	}
	return "invalid"
}

// MarshalText writes the kind's name.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Event is a mark on the graph.
type Event struct {
	T    float64   `json:"t"`
	Kind EventKind `json:"kind"`
	Seq  int64     `json:"seq"`
	Len  int64     `json:"len"`
}

// AddEvent records a mark (kept only when the timeline keeps a series).
func (tl *Timeline) AddEvent(t time.Duration, k EventKind, seq, n int64) {
	if tl.MaxPoints == 0 {
		return
	}
	if len(tl.Events) >= max(tl.MaxEvents, 1) {
		tl.EventsDropped++
		return
	}
	tl.Events = append(tl.Events, Event{T: t.Seconds(), Kind: k, Seq: seq, Len: n})
}
