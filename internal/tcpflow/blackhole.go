package tcpflow

import "github.com/longhaul/longhaul/internal/diagnose"

// A PMTU black hole as a capture at the sender shows it: a link on the
// path drops packets above its MTU and the ICMP error that should tell
// the sender is lost, so the first full-size segment never arrives. The
// sender resends it by its timer, backing off, at the same size (Linux
// without net.ipv4.tcp_mtu_probing), while the receiver, alive, SACKs
// the smaller segments sent after it (a tail, a probe): data passes, but
// only in pieces smaller than the one that never does.
const (
	// bhMinSeg is the least segment a black hole is judged on: packets
	// above a link's MTU carry over a thousand bytes (a 1280-byte IPv6
	// link's segments carry 1220).
	bhMinSeg = 1000
	// bhResends is how many timeout resends of the same head segment,
	// with smaller data passing, name it: random loss taking the same
	// segment three times running while others pass is rare.
	bhResends = 3
)

// blackHole notes a timeout resend of n bytes at seq: one more of the
// head at the same size while every SACK block above it is smaller, or
// the end of the run.
func (d *direction) blackHole(seq int64, n int) {
	largest := d.largestSACK()
	if seq > d.sndUna || n < bhMinSeg || largest == 0 || largest >= int64(n) {
		d.bhRun = 0 // not the head, too small, or nothing smaller passed
		return
	}
	if d.bhRun > 0 && n != d.bhSeg {
		d.bhRun = 0 // another size: another run
	}
	d.bhSeg = n
	d.bhRun++
	if d.bhRun >= bhResends && d.bhRun > d.bhResends {
		d.bhSize, d.bhPassed, d.bhResends = n, int(largest), d.bhRun
	}
}

// largestSACK is the largest block the receiver SACKs now.
func (d *direction) largestSACK() int64 {
	largest := int64(0)
	for i := 0; i < d.nsack; i++ {
		largest = max(largest, d.sack[i].r-d.sack[i].l)
	}
	return largest
}

// bhTrack follows the timer's resends of the head whatever passed after
// it: a run of them at one full size (seg, run), then the same head
// resent smaller (smaller bytes at smallerSeq: the sender probing the
// MTU), and the first full-size segment sent (at firstBig, if big).
type bhTrack struct {
	seg, run, smaller    int
	smallerSeq, firstBig int64
	big                  bool
}

// sent notes a segment of n bytes at seq sent for the first time.
func (b *bhTrack) sent(seq int64, n int) {
	if n >= bhMinSeg && !b.big {
		b.big, b.firstBig = true, seq
	}
}

// timerResend notes a timeout resend of n bytes at seq.
func (b *bhTrack) timerResend(seq, sndUna int64, n int) {
	switch {
	case seq > sndUna:
	case n >= bhMinSeg && (b.run == 0 || n == b.seg):
		b.seg = n
		b.run++
	case n < b.seg && b.run >= 2 && b.smaller == 0:
		b.smaller, b.smallerSeq = n, seq
	}
}

// blackHoleCause is the PMTU black hole a capture at the sender shows of
// direction d, if any: SACKed pieces passing a head resent at full size
// (blackHole), the head passing once resent smaller, or no full-size
// segment ever acknowledged after a handshake that passed.
func (f *Flow) blackHoleCause(d *direction, sender string) *diagnose.Cause {
	b := d.bh
	var c diagnose.Cause
	switch {
	case d.bhSize > 0:
		c = diagnose.BlackHoleSeen(d.bhSize, d.bhPassed, d.bhResends, sender)
	case b.smaller > 0 && d.sndUna > b.smallerSeq:
		c = diagnose.BlackHoleShrunk(b.seg, b.smaller, b.run, sender)
	case b.run >= bhResends && b.big && d.sndUna <= b.firstBig && d.largestSACK() < bhMinSeg && f.synAckSeen && f.ackT >= 0:
		c = diagnose.BlackHoleNeverPassed(b.seg, b.run, sender)
	default:
		return nil
	}
	return &c
}
