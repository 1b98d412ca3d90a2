package wire

import (
	"cmp"
	"encoding/binary"
	"slices"
	"time"
)

// The datagram phase (PhaseUDP): the server paces UDP datagrams at a
// rate above the most a download carried, on its own port number, to the
// address that presented the grant's token. A rate held by a queue (a
// link, however shallow its buffer) keeps that queue full while the
// datagrams come faster than it drains, and every datagram waits in it;
// a policer drops the excess and queues nothing. Unlike a paced TCP
// download, the datagrams do not back off after a loss, so the queue
// stands for the whole run and its delay is measured per datagram, from
// the kernel's receive time against the server's send time (their
// offset, unknown, cancels: only the rise above the run's least delay
// counts).
//
// On the wire: the client sends a hello (udpHelloMagic and the grant's
// token) until the first datagram arrives; the server answers nothing
// else, to nobody else: the token is the session's, given over its
// authenticated control connection, and the hello must come from the
// session's host. Each datagram carries udpDataMagic, its sequence
// number and the server's send time in nanoseconds since the run began,
// padded to the grant's size.
const (
	udpHelloMagic = "LHU1"
	udpDataMagic  = "LHD1"
	UDPTokenLen   = 16
	udpHelloLen   = len(udpHelloMagic) + UDPTokenLen
	udpHeaderLen  = len(udpDataMagic) + 4 + 8
	// UDPMinSize and UDPMaxSize bound a datagram's payload: the server
	// sizes it to the control connection's segments (the path's MTU).
	UDPMinSize = 512
	UDPMaxSize = 9000
	// UDPMaxDuration caps a datagram run on the server: the queue fills
	// in a few round trips at the paces the client asks.
	UDPMaxDuration = 3 * time.Second
	// UDPMaxDatagrams caps what a client records of one run.
	UDPMaxDatagrams = 1 << 20
	// UDPClaimWindow is how long a granted datagram run waits for the
	// client's hello.
	UDPClaimWindow = 3 * time.Second
)

// UDPHello is the client's hello for token.
func UDPHello(token []byte) []byte {
	return append([]byte(udpHelloMagic), token...)
}

// ParseUDPHello returns the token of a client's hello.
func ParseUDPHello(b []byte) ([UDPTokenLen]byte, bool) {
	var tok [UDPTokenLen]byte
	if len(b) != udpHelloLen || string(b[:len(udpHelloMagic)]) != udpHelloMagic {
		return tok, false
	}
	copy(tok[:], b[len(udpHelloMagic):])
	return tok, true
}

// PutUDPData writes a datagram's header into b (udpHeaderLen or more).
func PutUDPData(b []byte, seq uint32, sentNs int64) {
	copy(b, udpDataMagic)
	binary.BigEndian.PutUint32(b[4:], seq)
	binary.BigEndian.PutUint64(b[8:], uint64(sentNs))
}

// ParseUDPData reads a datagram's header.
func ParseUDPData(b []byte) (seq uint32, sentNs int64, ok bool) {
	if len(b) < udpHeaderLen || string(b[:len(udpDataMagic)]) != udpDataMagic {
		return 0, 0, false
	}
	sentNs = int64(binary.BigEndian.Uint64(b[8:]))
	if sentNs < 0 || sentNs > int64(time.Hour) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(b[4:]), sentNs, true
}

// UDPArrival is one datagram as the client received it: the server's
// send time and the kernel's receive time, in nanoseconds (each on its
// own clock).
type UDPArrival struct {
	Seq        uint32
	Sent, Recv int64
}

// UDPStats is what a datagram run showed.
type UDPStats struct {
	Received int64 // distinct datagrams
	// Bps is the rate they arrived at over the run's second half (the
	// queue full, or the policer's bucket empty, by then).
	Bps float64
	// Queue is the standing queue over the second half: the median
	// one-way delay of its datagrams above the least of the whole run
	// (the first datagrams find the queue empty). A queue fed faster than
	// it drains stays near full, however the sender's timer bunches the
	// datagrams (each burst finds what the last one left, less what
	// drained between); behind a policer, whose rate is below the link's,
	// each burst finds it empty again.
	Queue time.Duration
}

// udpMinArrivals is the fewest datagrams UDPStatsOf measures from.
const udpMinArrivals = 32

// UDPStatsOf sums up the arrivals of a run of datagrams of size bytes.
func UDPStatsOf(arr []UDPArrival, size int) UDPStats {
	seen := make(map[uint32]bool, len(arr))
	uniq := make([]UDPArrival, 0, len(arr))
	for _, a := range arr {
		if !seen[a.Seq] {
			seen[a.Seq] = true
			uniq = append(uniq, a)
		}
	}
	st := UDPStats{Received: int64(len(uniq))}
	if len(uniq) < udpMinArrivals {
		return st
	}
	slices.SortFunc(uniq, func(a, b UDPArrival) int { return cmp.Compare(a.Recv, b.Recv) })
	base := uniq[0].Recv - uniq[0].Sent
	for _, a := range uniq {
		base = min(base, a.Recv-a.Sent)
	}
	first, last := uniq[0].Recv, uniq[len(uniq)-1].Recv
	mid := first + (last-first)/2
	var delays []int64
	for _, a := range uniq {
		if a.Recv >= mid {
			delays = append(delays, a.Recv-a.Sent-base)
		}
	}
	if span := last - mid; span > 0 {
		st.Bps = float64(len(delays)*size*8) / (float64(span) / 1e9)
	}
	slices.Sort(delays)
	st.Queue = time.Duration(delays[len(delays)/2])
	return st
}
