package diagnose

// rounds tracks slow start: each round's largest flight against the
// previous round's.
func (tl *Timeline) rounds(s *Sample) {
	if s.Retrans > tl.prev.Retrans || s.InRecovery {
		tl.roundLoss = true
		tl.ssDone = true // a loss ends slow start (ssthresh is set)
	}
	if s.Inflight > tl.roundMax {
		tl.roundMax = s.Inflight
	}
	if tl.Samples > 0 {
		dt := s.T - tl.prev.T
		switch tl.prevState {
		case StateRwnd, StateZeroWindow, StateWindowUnknown, StateApp, StateSndbuf:
			tl.roundLimitT += dt
		case StateSlowStart, StateNetwork:
			tl.roundBusyT += dt
		}
	}
	if s.Delivered < tl.roundEnd || s.Delivered <= tl.roundAcked {
		return
	}
	// A round is limited (by a window or the application) when that took
	// more of its time than the congestion window did; a moment with
	// nothing in flight between an ACK and the next flight is not.
	roundLimit := tl.roundLimitT > tl.roundBusyT
	roundBusy := tl.roundBusyT > 0
	if tl.Rounds == 1 && !tl.ssDone && s.RTT > 0 && s.T-tl.roundT < s.RTT/2 {
		// Over within half a round trip of its start, the second round
		// only delivered the tail of the initial window, sent late: it
		// and the next are one round. (Measured under CPU load: a 60 KB
		// answer's first two segments left 1.1 ms before the other
		// eight, and the ACK of those two began a 1.3 ms "round" that
		// did not grow, ending slow start at a capture.) Later rounds
		// are left as they are, though the split echoes in them: merged,
		// they end slow start later in long flows, and bbr's level
		// flight after it passes for the send buffer's plateau (86 flows
		// of the lab's captures, bottleneck before, sndbuf-limited).
		tl.roundEnd, tl.roundAcked = s.Sent, s.Delivered
		return
	}
	// The round is over.
	tl.Rounds++
	if tl.Rounds == 1 {
		tl.firstRoundT = s.T
	}
	if !tl.ssDone {
		tl.SlowStartRounds++
		// A round in which the sender sent nothing new only drained the
		// flight before it, which says nothing of the window's growth:
		// a busy sender answered the first ACKs late (measured under CPU
		// load, a 60 KB download's first flight acknowledged in full
		// before the sender's next write), or a capture away from the
		// sender saw the ACKs before the data they let out. The next
		// round is held against the last one that sent.
		switch {
		case s.Sent <= tl.roundEnd:
			tl.roundMax = max(tl.roundMax, tl.prevMax)
		case tl.prevMax > 0 && !roundLimit && tl.roundMax < tl.prevMax+tl.prevMax/4:
			tl.ssDone = true
		}
	} else if roundBusy && !roundLimit && !tl.roundLoss && tl.prevMax > 0 {
		tl.BusyRounds++
		if d, q := tl.roundMax-tl.prevMax, tl.prevMax/20; d <= q && -d <= q {
			tl.FlatRounds++
		}
		if tl.BusyRounds <= 4 {
			tl.FirstBusyMax = max(tl.FirstBusyMax, tl.roundMax)
		}
		tl.lastBusy[tl.BusyRounds&3] = tl.roundMax // (%4: BusyRounds > 0)
	}
	tl.prevMax = tl.roundMax
	tl.roundEnd, tl.roundMax, tl.roundAcked, tl.roundT = s.Sent, s.Inflight, s.Delivered, s.T
	tl.roundLoss = false
	tl.roundLimitT, tl.roundBusyT = 0, 0
}

// SlowStartDone reports whether slow start is over (a loss, or a round
// whose flight grew less than a quarter): producers that keep their own
// evidence of the steady transfer (tcpflow's loaded RTT) read it.
func (tl *Timeline) SlowStartDone() bool { return tl.ssDone }

// Plateau reports whether the flight of the busy rounds after slow start
// stayed level from the first four to the last four (within 15%), over at
// least 8 rounds: with no loss, Reno and CUBIC would have grown it round
// after round, so something else (the send buffer) held it. Noise from
// round to round does not matter, unlike FlatRounds.
func (tl *Timeline) Plateau() bool {
	if tl.BusyRounds < 8 || tl.FirstBusyMax <= 0 {
		return false
	}
	last := max(tl.lastBusy[0], tl.lastBusy[1], tl.lastBusy[2], tl.lastBusy[3])
	return 20*last <= 23*tl.FirstBusyMax && 20*last >= 17*tl.FirstBusyMax
}
