package tcpflow

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
	largest := int64(0)
	for i := 0; i < d.nsack; i++ {
		largest = max(largest, d.sack[i].r-d.sack[i].l)
	}
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
