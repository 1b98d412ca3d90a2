//go:build linux

package server

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/longhaul/longhaul/internal/cpuuse"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"golang.org/x/sys/unix"
)

// udpMaxOver bounds a datagram run's pace: at most this many times what
// a download of the session carried. Datagrams do not back off; the
// server never sends them much faster than the path has shown it takes
// (the client asks udpAbove).
const udpMaxOver = 1.5

// udpPort is the server's datagram socket and the runs waiting for
// their hello, by token.
type udpPort struct {
	conn *net.UDPConn

	mu      sync.Mutex
	waiting map[[wire.UDPTokenLen]byte]*udpRun
}

// udpRun is a granted datagram run on the server.
type udpRun struct {
	from netip.AddrPort // the session's control connection
	once sync.Once
	dest chan netip.AddrPort // the hello's source, once
}

// ServeUDP answers the hellos of datagram runs on pc (the server's port
// number, UDP) until ctx ends; sessions are offered the datagram phase
// (Caps.UDP) while it runs. Datagrams that are not the hello of a
// waiting run, from its session's host, get nothing back.
func (s *Server) ServeUDP(ctx context.Context, pc *net.UDPConn) error {
	p := &udpPort{conn: pc, waiting: map[[wire.UDPTokenLen]byte]*udpRun{}}
	s.mu.Lock()
	s.udp = p
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.udp = nil
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			continue // an ICMP error of a run's datagrams, reported on the socket
		}
		if tok, ok := wire.ParseUDPHello(buf[:n]); ok {
			p.claim(tok, from)
		}
	}
}

// udpPort returns the datagram port while ServeUDP runs, else nil.
func (s *Server) udpPort() *udpPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.udp
}

// offer registers a run under a new token.
func (p *udpPort) offer(from netip.AddrPort) ([]byte, *udpRun, error) {
	var tok [wire.UDPTokenLen]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, nil, err
	}
	r := &udpRun{from: from, dest: make(chan netip.AddrPort, 1)}
	p.mu.Lock()
	p.waiting[tok] = r
	p.mu.Unlock()
	return tok[:], r, nil
}

// withdraw forgets a token.
func (p *udpPort) withdraw(tok []byte) {
	var k [wire.UDPTokenLen]byte
	copy(k[:], tok)
	p.mu.Lock()
	delete(p.waiting, k)
	p.mu.Unlock()
}

// claim hands a hello's source to the run waiting on its token when it
// comes from the run's session's host; the first one wins.
func (p *udpPort) claim(tok [wire.UDPTokenLen]byte, from netip.AddrPort) {
	p.mu.Lock()
	r := p.waiting[tok]
	p.mu.Unlock()
	if r == nil || !sameHost(r.from, from) {
		return
	}
	r.once.Do(func() { r.dest <- from })
}

// udpSize is the payload of a session's datagrams: what one of its
// control connection's segments carries, plus the TCP header's 12 bytes
// more than UDP's, within wire.UDPMinSize..wire.UDPMaxSize.
func udpSize(c net.Conn) int {
	mss := 0
	_ = streamio.WithFD(c, func(fd int) error {
		v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_MAXSEG)
		mss = v
		return err
	})
	if mss <= 0 {
		return 1200
	}
	return min(max(mss+12, wire.UDPMinSize), wire.UDPMaxSize)
}

// runUDP sends a granted datagram run: it waits for the hello, then
// paces datagrams at the grant's rate to its source until the duration
// or the session's bytes are spent, and ends the phase.
func (ss *session) runUDP(ctx context.Context, ph *phase, p *udpPort, r *udpRun, log *slog.Logger) {
	defer ss.endPhase(ph)
	cpu0, cpuOK := cpuuse.Now()
	t0 := time.Now()
	var dest netip.AddrPort
	reason := "duration"
	select {
	case dest = <-r.dest:
	case <-time.After(wire.UDPClaimWindow):
		reason = "no hello"
	case <-ctx.Done():
		reason = "server stopping"
	}
	p.withdraw(ph.grant.Token)
	var sent int64
	if dest.IsValid() {
		sent, reason = ss.sendUDP(ctx, ph, p.conn, dest)
	}
	secs := time.Since(t0).Seconds()
	ss.endPhase(ph)
	_ = ss.send(wire.TypePhaseDone, wire.PhaseDone{Phase: ph.grant.Phase, Bytes: ph.bytes.Load(), Datagrams: sent, Seconds: secs, Reason: reason, CPU: streamio.CPUOver(cpu0, cpuOK)})
	log.Info("phase ended", "phase", ph.grant.Phase, "name", ph.grant.Name, "datagrams", sent, "bytes", ph.bytes.Load(), "seconds", secs, "reason", reason)
}

// udpLateMax bounds how long after its end a run that fell behind goes
// on sending what it owed (a quarter of its length, at most this).
const udpLateMax = 2 * time.Second

// writeDatagram sends one datagram of a run (a test makes it slow, as
// on a sender held off the CPU).
var writeDatagram = func(pc *net.UDPConn, b []byte, to netip.AddrPort) error {
	_, err := pc.WriteToUDPAddrPort(b, to)
	return err
}

// sendUDP paces the run's datagrams; it returns how many it sent and why
// it stopped.
func (ss *session) sendUDP(ctx context.Context, ph *phase, pc *net.UDPConn, dest netip.AddrPort) (int64, string) {
	size := ph.grant.DatagramBytes
	buf := make([]byte, size)
	perSec := ph.grant.RateBps / float64(8*size)
	start := time.Now()
	until := start.Add(time.Duration(ph.grant.DurationS * float64(time.Second)))
	if until.After(ss.deadline) {
		until = ss.deadline
	}
	late := until.Add(min(until.Sub(start)/4, udpLateMax))
	var sent int64
	var seq uint32
	fails := 0
	for {
		now := time.Now()
		if !now.Before(until) {
			return sent, "duration"
		}
		if ctx.Err() != nil {
			return sent, "server stopping"
		}
		due := int64(now.Sub(start).Seconds()*perSec) + 1
		for ; int64(seq) < due; seq++ {
			// The datagrams owed after the sender was held off the CPU go
			// out at once (they keep the queue full), but not long past
			// the run's end: a server held to a sliver of a core
			// (cpu.max) would owe more than it can send, and the client
			// waits for phase-done only so long. (A clock read is a few
			// ns beside the send's system call.)
			if !time.Now().Before(late) {
				return sent, "duration"
			}
			if ss.budget.Add(-int64(size)) < 0 {
				ph.capped.Store(true)
				return sent, "bytes-cap"
			}
			wire.PutUDPData(buf, seq, int64(time.Since(start)))
			if err := writeDatagram(pc, buf, dest); err != nil {
				// Full socket buffers or an ICMP error: a few are the
				// path's; many, the client is gone.
				if fails++; fails > 1000 {
					return sent, "error"
				}
				continue
			}
			sent++
			ph.bytes.Add(int64(size))
		}
		next := start.Add(time.Duration(float64(seq) / perSec * float64(time.Second)))
		time.Sleep(max(time.Until(next), 50*time.Microsecond))
	}
}
