package diagnose

import "time"

// Extend adds a sample that only sent more, and reports whether it
// could: the sample has every flag false, Cwnd and RwndLowerBound 0,
// and, against the last sample, the same Delivered, Rwnd and Retrans and
// a larger Sent; rtt is its RTT. It refuses (false, nothing changed; the
// caller then uses AddSample) unless the sample's state is sure and its
// bookkeeping short: the flight stays more than a segment below a known
// window (so slow start or network-limited: Delivered unchanged, no
// round can end and slow start cannot end; Retrans unchanged and out of
// recovery, no loss is marked), no series is kept, and the last sample
// was either
//   - in slow start or network-limited, with no idle time or drained
//     flight pending: AddSample would only add the time to that state,
//     grow the round's flight and take the send's snapshot (DrainIsApp);
//   - application-limited with nothing in flight (a drained flight, or
//     idle): AddSample would also count the idle time and settle or drop
//     the drained flight (Timeline.drain, which reads rtt).
//
// It is the analyzer's common case, a data segment of a transfer, at a
// fraction of AddSample's instructions (cachegrind), and TestExtendIsAdd
// holds the two to the same result.
func (tl *Timeline) Extend(t time.Duration, sent, delivered, inflight, rwnd, retrans int64, rtt time.Duration) bool {
	p := &tl.prev
	if sent <= p.Sent || delivered != p.Delivered || rwnd != p.Rwnd || retrans != p.Retrans || t < p.T || tl.MaxPoints > 0 {
		return false
	}
	// Of classify's cases, only the window's and the empty flight's can
	// turn with a larger flight (the others read what is unchanged).
	if inflight <= 0 || inflight >= rwnd-tl.mss() {
		return false
	}
	dt := t - p.T
	switch tl.prevState {
	case StateSlowStart, StateNetwork:
		if tl.idle != 0 || tl.drainSS+tl.drainNet != 0 {
			return false
		}
		tl.StateTime[tl.prevState] += dt
		tl.roundBusyT += dt
		if tl.DrainIsApp {
			tl.snapSS, tl.snapNet, tl.lastSend = tl.StateTime[StateSlowStart], tl.StateTime[StateNetwork], t
		}
	case StateApp:
		if p.Inflight > 0 {
			return false
		}
		// add's idle time, then drain's new data (no Turn: a flag).
		if tl.idle += dt; tl.idle > 0 {
			tl.endIdle()
		}
		if tl.DrainIsApp {
			tl.newData(t, rtt, false)
		}
		tl.roundLimitT += dt
	default:
		return false // and StateNone: before the first sample
	}
	tl.roundMax = max(tl.roundMax, inflight)
	tl.Samples++
	tl.Last = t
	p.T, p.Sent, p.Inflight = t, sent, inflight
	tl.prevState = StateNetwork
	if !tl.ssDone {
		tl.prevState = StateSlowStart
	}
	tl.MaxInflight = max(tl.MaxInflight, inflight)
	return true
}
