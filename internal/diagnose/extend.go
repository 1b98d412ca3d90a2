package diagnose

import "time"

// Extend adds a sample that only sent more, and reports whether it
// could: the sample has every flag false, Cwnd and RwndLowerBound 0,
// and, against the last sample, the same Delivered, Rwnd and Retrans and
// a larger Sent. It refuses (false, nothing changed; the caller then
// uses AddSample) unless such a sample cannot change the state: the last
// sample was in slow start or network-limited, no idle time or drained
// flight is pending, no series is kept, and the flight stays more than a
// segment below a known window. Delivered unchanged, no round can end
// and slow start cannot end; Retrans unchanged and out of recovery, no
// loss is marked. AddSample would then only add the time to the state,
// grow the round's flight and take the send's snapshot (DrainIsApp),
// which is all Extend does. RTT is not taken: AddSample reads it only at
// a round's end, a drain or into the series, none of which can happen
// here.
//
// It is the analyzer's common case, a data segment of a transfer in full
// flight: about 40 instructions where AddSample takes about 200
// (cachegrind), and TestExtendIsAdd holds the two to the same result.
func (tl *Timeline) Extend(t time.Duration, sent, delivered, inflight, rwnd, retrans int64) bool {
	// Before the first sample the state is StateNone; in slow start
	// or network-limited, the last flight was above 0 and the window
	// known and open. (The two states are neighbours: one comparison.)
	if uint(tl.prevState-StateSlowStart) > uint(StateNetwork-StateSlowStart) {
		return false
	}
	p := &tl.prev
	if sent <= p.Sent || delivered != p.Delivered || rwnd != p.Rwnd || retrans != p.Retrans || t < p.T ||
		tl.idle != 0 || tl.MaxPoints > 0 || tl.drainSS+tl.drainNet != 0 {
		return false
	}
	// Of classify's cases, only the window's can turn with a larger
	// flight (the others read what is unchanged): at the window, or one
	// segment short of it.
	if inflight <= 0 || inflight >= rwnd-tl.mss() {
		return false
	}
	dt := t - p.T
	tl.StateTime[tl.prevState] += dt
	tl.roundBusyT += dt
	tl.roundMax = max(tl.roundMax, inflight)
	if tl.DrainIsApp {
		tl.snapSS, tl.snapNet, tl.lastSend = tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork], t
	}
	tl.Samples++
	tl.Last = t
	p.T, p.Sent, p.Inflight = t, sent, inflight
	tl.MaxInflight = max(tl.MaxInflight, inflight)
	return true
}
