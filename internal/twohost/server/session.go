//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/cpuuse"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// session is one client's test: its control connection, its time and
// byte budget, and the phase running now.
type session struct {
	id       string
	from     netip.AddrPort
	ctrl     net.Conn
	deadline time.Time
	planned  time.Time    // when its client expects it to end (Start.PlannedS); zero: not said
	budget   atomic.Int64 // bytes left
	srv      *Server

	wmu    sync.Mutex // serializes writes on ctrl
	wchunk int        // bytes per write of a data stream
	snap   *snapshot.Snapshot

	mu     sync.Mutex
	phases int
	cur    *phase
	// carried is the most a phase of the session sent to the client
	// (bits/s): the datagram run's pace is bounded by it (udpMaxOver).
	carried float64
}

func (ss *session) send(typ string, body any) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	_ = ss.ctrl.SetWriteDeadline(time.Now().Add(ss.srv.cfg.IdleTimeout))
	return wire.WriteMsg(ss.ctrl, typ, body)
}

// control runs a session on an authenticated control connection. Start
// must come within the handshake timeout; until the session is admitted
// the connection holds ticket, idle (it may be dropped to make room).
func (s *Server) control(ctx context.Context, c net.Conn, from netip.AddrPort, ticket *connlimit.Ticket) {
	t0 := time.Now()
	_ = c.SetReadDeadline(t0.Add(s.cfg.HandshakeTimeout))
	f, err := wire.ReadFrame(c, wire.MaxFrame)
	if !ticket.Active() {
		s.lim.Refused(s.cfg.Log, from.Addr(), "authenticated, no start yet: dropped to make room")
		return
	}
	var st wire.Start
	if err == nil {
		err = wire.Decode(f, wire.TypeStart, &st)
	}
	if err != nil {
		s.refuse(c, wire.CodeRequest, "expected start", 0)
		ticket.Done(s.peerFault(err, t0))
		s.lim.Refused(s.cfg.Log, from.Addr(), "session: expected start: "+err.Error())
		return
	}
	ss, wait := s.admit(from, c, st)
	if ss == nil {
		s.refuse(c, wire.CodeBusy, "a test is running", wait)
		ticket.Done(false)
		s.lim.Refused(s.cfg.Log, from.Addr(), fmt.Sprintf("session: busy, retry after %d s", wait))
		return
	}
	// A session's descriptors are reserved apart from the limiter's.
	ticket.Done(false)
	defer s.release(ss)
	log := s.cfg.Log.With("client", from.String(), "session", ss.id)
	// The session's end is enforced whatever the client does.
	killer := time.AfterFunc(time.Until(ss.deadline)+wire.EndSlack, func() { c.Close() })
	defer killer.Stop()
	snap, err := s.cfg.Snapshot()
	if err != nil {
		s.refuse(c, wire.CodeRequest, "the server could not read its own settings", 0)
		log.Error("snapshot", "err", err.Error())
		return
	}
	ss.wchunk, ss.snap = streamio.WriteChunk(snap), snap
	log.Info("test started", "client_software", st.Software)
	caps := s.cfg.Caps
	caps.UDP = s.udpPort() != nil
	if err := ss.send(wire.TypeAccepted, wire.Accepted{Session: ss.id, Caps: caps, Snapshot: snap}); err != nil {
		return
	}
	err = ss.loop(ctx, log)
	moved := s.cfg.Caps.MaxBytes - max(ss.budget.Load(), 0)
	log.Info("test ended", "phases", ss.phases, "bytes", moved, "err", errText(err))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// loop answers the client's control messages until bye or an error.
func (ss *session) loop(ctx context.Context, log *slog.Logger) error {
	cfg := ss.srv.cfg
	for {
		idle := time.Now().Add(cfg.IdleTimeout)
		if end := ss.phaseEnd(); end.After(time.Now()) {
			idle = end.Add(cfg.IdleTimeout)
		}
		_ = ss.ctrl.SetReadDeadline(idle)
		f, err := wire.ReadFrame(ss.ctrl, wire.MaxFrame)
		if err != nil {
			if errors.Is(err, wire.ErrFrame) || errors.Is(err, wire.ErrVersion) {
				_ = ss.send(wire.TypeError, wire.ErrorMsg{Code: wire.CodeRequest, Message: "malformed message"})
			}
			return err
		}
		switch f.Type {
		case wire.TypePing:
			var p wire.Ping
			if err := wire.Decode(f, wire.TypePing, &p); err != nil {
				return ss.fail(err)
			}
			if err := ss.send(wire.TypePong, p); err != nil {
				return err
			}
		case wire.TypePhase:
			var r wire.PhaseReq
			if err := wire.Decode(f, wire.TypePhase, &r); err != nil {
				return ss.fail(err)
			}
			if err := ss.startPhase(ctx, r, log); err != nil {
				return err
			}
		case wire.TypeBye:
			return nil
		default:
			return ss.fail(fmt.Errorf("%w: unexpected %.32q", wire.ErrFrame, f.Type))
		}
	}
}

func (ss *session) fail(err error) error {
	_ = ss.send(wire.TypeError, wire.ErrorMsg{Code: wire.CodeRequest, Message: err.Error()})
	return err
}

func (ss *session) phaseEnd() time.Time {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cur == nil {
		return time.Time{}
	}
	return ss.cur.end
}

// grant fits a phase request into the caps and what is left of the
// session.
func (ss *session) grant(r wire.PhaseReq) (wire.Grant, error) {
	caps := ss.srv.cfg.Caps
	left := time.Until(ss.deadline) - wire.EndSlack
	d := min(time.Duration(r.DurationS*float64(time.Second)), left)
	if d < minPhase {
		return wire.Grant{}, fmt.Errorf("the test's time is used up (--max-duration %gs)", caps.MaxDurationS)
	}
	if ss.budget.Load() <= 0 {
		return wire.Grant{}, fmt.Errorf("the test's bytes are used up (--max-bytes %d)", caps.MaxBytes)
	}
	// The server's own cap bounds the rate whatever the client asks; a
	// client's rate only lowers it, and never below minPaceBps (a rate
	// that rounds to nothing used to turn pacing off altogether).
	rate := caps.MaxRateBps
	if r.RateBps > 0 && (rate == 0 || r.RateBps < rate) {
		rate = r.RateBps
		if rate < minPaceBps {
			rate = minPaceBps
			if caps.MaxRateBps > 0 {
				rate = min(rate, caps.MaxRateBps)
			}
		}
	}
	g := wire.Grant{Name: r.Name, Streams: min(r.Streams, caps.MaxStreams), DurationS: d.Seconds(), RateBps: rate, MaxBytes: ss.budget.Load()}
	if r.CC != "" && r.Name != wire.PhaseUpload && ss.ccAvailable(r.CC) {
		g.CC = r.CC
	}
	return g, nil
}

// ccAvailable: the server's kernel has congestion control cc (its
// snapshot's tcp_available_congestion_control; the server, as root, may
// set any of them on its own sockets).
func (ss *session) ccAvailable(cc string) bool {
	if ss.snap == nil {
		return false
	}
	return slices.Contains(strings.Fields(ss.snap.Sysctls["net.ipv4.tcp_available_congestion_control"]), cc)
}

// startPhase grants a phase and runs it in the background.
func (ss *session) startPhase(ctx context.Context, r wire.PhaseReq, log *slog.Logger) error {
	ss.mu.Lock()
	busy := ss.cur != nil
	ss.mu.Unlock()
	if busy {
		return ss.fail(errors.New("a phase is already running"))
	}
	g, err := ss.grant(r)
	var udp *udpPort
	if err == nil && r.Name == wire.PhaseUDP {
		if udp = ss.srv.udpPort(); udp == nil {
			err = errors.New("this server answers no datagram runs")
		}
	}
	if err != nil {
		_ = ss.send(wire.TypeError, wire.ErrorMsg{Code: wire.CodeCaps, Message: err.Error()})
		return err
	}
	var run *udpRun
	if udp != nil {
		ss.mu.Lock()
		carried := ss.carried
		ss.mu.Unlock()
		if carried <= 0 {
			_ = ss.send(wire.TypeError, wire.ErrorMsg{Code: wire.CodeCaps, Message: "a datagram run follows a download: its pace is bounded by what the session carried"})
			return errors.New("datagram run before any download")
		}
		g.RateBps = min(g.RateBps, udpMaxOver*carried)
		g.Streams, g.DurationS, g.DatagramBytes = 1, min(g.DurationS, wire.UDPMaxDuration.Seconds()), udpSize(ss.ctrl)
		if g.Token, run, err = udp.offer(ss.from); err != nil {
			return ss.fail(err)
		}
	}
	ss.mu.Lock()
	ss.phases++
	g.Phase = ss.phases
	ph := &phase{grant: g, sess: ss, attached: map[int]bool{},
		end: time.Now().Add(attachWindow + time.Duration(g.DurationS*float64(time.Second)))}
	ss.cur = ph
	ss.mu.Unlock()
	smp := flows.NewSampler(ph.socks.Read, ss.srv.cfg.SampleEvery)
	if err := ss.send(wire.TypeGrant, g); err != nil {
		ss.endPhase(ph)
		if run != nil {
			udp.withdraw(g.Token)
		}
		return err
	}
	log.Info("phase granted", "phase", g.Phase, "name", g.Name, "streams", g.Streams, "duration_s", g.DurationS, "rate_bps", g.RateBps,
		"asked_duration_s", r.DurationS, "asked_streams", r.Streams)
	ss.srv.wg.Add(1)
	go func() {
		defer ss.srv.wg.Done()
		if run != nil {
			ss.runUDP(ctx, ph, udp, run, log)
			return
		}
		ss.runPhase(ctx, ph, smp, log)
	}()
	return nil
}

func (ss *session) endPhase(ph *phase) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cur == ph {
		ss.cur = nil
	}
}

// phase is a granted phase on the server.
type phase struct {
	grant wire.Grant
	sess  *session
	end   time.Time // the latest it may end

	mu       sync.Mutex
	closed   bool // no more streams may attach
	attached map[int]bool
	socks    streamio.Sockets
	wg       sync.WaitGroup
	bytes    atomic.Int64
	capped   atomic.Bool
	all      chan struct{} // closed when every stream attached
}

// attach registers a data connection as one of the phase's streams.
func (ph *phase) attach(stream int, c net.Conn) error {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	switch {
	case ph.closed:
		return errors.New("the phase no longer takes streams")
	case stream >= ph.grant.Streams:
		return fmt.Errorf("stream %d is beyond the %d granted", stream, ph.grant.Streams)
	case ph.attached[stream]:
		return fmt.Errorf("stream %d is already attached", stream)
	}
	ph.attached[stream] = true
	ph.socks.Add(c)
	ph.wg.Add(1)
	if len(ph.attached) == ph.grant.Streams && ph.all != nil {
		close(ph.all)
	}
	return nil
}

// runPhase samples the phase's sockets, streams the samples to the
// client and ends the phase when its streams are done.
func (ss *session) runPhase(ctx context.Context, ph *phase, smp *flows.Sampler, log *slog.Logger) {
	defer ss.endPhase(ph)
	cpu0, cpuOK := cpuuse.Now()
	t0 := time.Now()
	smp.Start(t0)
	done := make(chan struct{})
	go func() {
		ph.waitAttached()
		ph.wg.Wait()
		close(done)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	reason := "duration"
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-ctx.Done():
			running, reason = false, "server stopping"
		case <-tick.C:
			if s := smp.Take(); len(s) > 0 {
				if err := ss.send(wire.TypeSamples, wire.Samples{Phase: ph.grant.Phase, Samples: wire.ToWire(s)}); err != nil {
					running, reason = false, "control connection lost"
				}
			}
		}
	}
	if ph.capped.Load() {
		reason = "bytes-cap"
	}
	last := smp.Stop()
	if len(last) > 0 {
		_ = ss.send(wire.TypeSamples, wire.Samples{Phase: ph.grant.Phase, Samples: wire.ToWire(last)})
	}
	secs := time.Since(t0).Seconds()
	if ph.grant.Name != wire.PhaseUpload && secs > 0 {
		ss.mu.Lock()
		ss.carried = max(ss.carried, float64(ph.bytes.Load())*8/secs)
		ss.mu.Unlock()
	}
	ss.endPhase(ph) // before phase-done: the client may ask for the next phase at once
	_ = ss.send(wire.TypePhaseDone, wire.PhaseDone{Phase: ph.grant.Phase, Bytes: ph.bytes.Load(), Seconds: secs, Reason: reason, CPU: streamio.CPUOver(cpu0, cpuOK)})
	log.Info("phase ended", "phase", ph.grant.Phase, "name", ph.grant.Name, "bytes", ph.bytes.Load(), "seconds", secs, "reason", reason)
}

// waitAttached waits for every stream or the attach window, then closes
// the phase to late streams.
func (ph *phase) waitAttached() {
	ph.mu.Lock()
	ph.all = make(chan struct{})
	if len(ph.attached) == ph.grant.Streams {
		close(ph.all)
	}
	all := ph.all
	ph.mu.Unlock()
	select {
	case <-all:
	case <-time.After(attachWindow):
	}
	ph.mu.Lock()
	ph.closed = true
	ph.mu.Unlock()
}

// data runs an authenticated data connection: it must name the session
// of the same host and a stream of the running phase. It holds ticket
// until it is attached (a phase's streams are reserved apart from the
// limiter's budget).
func (s *Server) data(c net.Conn, from netip.AddrPort, a wire.Auth, ticket *connlimit.Ticket) {
	refused := func(msg string) {
		s.refuse(c, wire.CodeRequest, msg, 0)
		ticket.Done(false)
		s.lim.Refused(s.cfg.Log, from.Addr(), "data connection: "+msg)
	}
	ss := s.lookup(a.Session)
	if ss == nil || !sameHost(ss.from, from) {
		refused("no such session for this address")
		return
	}
	ss.mu.Lock()
	ph := ss.cur
	ss.mu.Unlock()
	if ph == nil || ph.grant.Phase != a.Phase || ph.grant.Name == wire.PhaseUDP {
		refused("that phase is not running")
		return
	}
	if err := ph.attach(a.Stream, c); err != nil {
		refused(err.Error())
		return
	}
	ticket.Done(false)
	log := s.cfg.Log.With("client", from.String(), "session", ss.id)
	defer ph.wg.Done()
	_ = c.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout))
	if err := wire.WriteMsg(c, wire.TypeGo, nil); err != nil {
		return
	}
	// A stream that attaches late still ends with the session.
	until := time.Now().Add(time.Duration(ph.grant.DurationS * float64(time.Second)))
	if until.After(ss.deadline) {
		until = ss.deadline
	}
	if cc := ph.grant.CC; cc != "" {
		if err := streamio.SetCC(c, cc); err != nil {
			log.Warn("congestion control not set", "cc", cc, "err", err)
		}
	}
	tr := transfer{c: c, ph: ph, until: until, idle: s.cfg.IdleTimeout, rate: ph.grant.RateBps / float64(ph.grant.Streams), wchunk: ss.wchunk}
	if ph.grant.Name == wire.PhaseUpload {
		tr.receive()
	} else {
		tr.sendData()
	}
}
