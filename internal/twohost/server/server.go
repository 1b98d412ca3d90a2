//go:build linux

package server

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// Server defaults.
const (
	DefaultMaxDuration = 2 * time.Minute
	DefaultMaxBytes    = 16 << 30
	// DefaultMaxClients is one test at a time: tests sharing this
	// host's link measure each other (each reads a share of the path as
	// its rate), so more only suits a server whose link is far faster
	// than the paths it tests.
	DefaultMaxClients       = 1
	DefaultHandshakeTimeout = 5 * time.Second
	DefaultIdleTimeout      = 30 * time.Second
	// attachWindow is how long a granted phase waits for its streams.
	attachWindow = 10 * time.Second
	// overrunWait is the retry-after of a busy answer while a test runs
	// past the length its client planned: about one more phase.
	overrunWait = 5 * time.Second
	// minPhase is the shortest phase the server grants.
	minPhase = 200 * time.Millisecond
)

// ServerConfig is a server's setup.
type ServerConfig struct {
	Token []byte
	TLS   *tls.Config // nil: plain TCP
	// Netns is the network namespace the listener lives in ("" the
	// process's): the server samples and snapshots it.
	Netns string
	// Caps bound every test; MaxClients the tests at a time.
	Caps       testdoc.Caps
	MaxClients int
	Allow      []netip.Prefix // empty: any address
	// Limits bound the connections not yet admitted to a session or a
	// phase (handshaking, or authenticated and waiting for start), per
	// source and in all (zero fields: connlimit's defaults, fitted to the
	// process's descriptor limit).
	Limits           connlimit.Config
	HandshakeTimeout time.Duration
	IdleTimeout      time.Duration
	SampleEvery      time.Duration
	Log              *slog.Logger
	// Snapshot gathers the server's host state for a session; nil uses
	// snapshot.Gather in Netns.
	Snapshot func() (*snapshot.Snapshot, error)
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.Caps.MaxDurationS == 0 {
		c.Caps.MaxDurationS = DefaultMaxDuration.Seconds()
	}
	if c.Caps.MaxBytes == 0 {
		c.Caps.MaxBytes = DefaultMaxBytes
	}
	if c.Caps.MaxStreams == 0 {
		c.Caps.MaxStreams = 16
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.SampleEvery == 0 {
		c.SampleEvery = 100 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Snapshot == nil {
		ns := c.Netns
		c.Snapshot = func() (*snapshot.Snapshot, error) { return snapshot.Gather(snapshot.Options{Netns: ns}) }
	}
	return c
}

// MinTokenLen is the shortest pre-shared token accepted (secret.ReadToken
// reads them).
const MinTokenLen = secret.MinTokenLen

func newSessionID() string { return hex.EncodeToString(wire.NewNonce()[:16]) }

// Server answers longhaul test clients.
type Server struct {
	cfg ServerConfig
	lim *connlimit.Limiter

	mu       sync.Mutex
	sessions map[string]*session
	byAddr   map[netip.Addr]*session
	conns    map[net.Conn]struct{}
	udp      *udpPort // while ServeUDP runs
	wg       sync.WaitGroup
}

// NewServer checks cfg and returns a server.
func NewServer(cfg ServerConfig) (*Server, error) {
	if len(cfg.Token) < MinTokenLen {
		return nil, fmt.Errorf("serve: a token of at least %d bytes is needed (--auth TOKEN-FILE)", MinTokenLen)
	}
	cfg = cfg.withDefaults()
	// Descriptors the sessions may hold (a control and its streams each,
	// and the listener, logs, sockets of the sampler) are kept out of the
	// limiter's budget; every other connection holds a ticket.
	reserved := cfg.MaxClients*(cfg.Caps.MaxStreams+2) + 32
	lim := connlimit.New(cfg.Limits.FitFDs(connlimit.FDBudget(), reserved))
	return &Server{cfg: cfg, lim: lim, sessions: map[string]*session{}, byAddr: map[netip.Addr]*session{}, conns: map[net.Conn]struct{}{}}, nil
}

// Serve accepts connections on ln until ctx ends, then closes every
// connection and waits for their goroutines.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	quiet := make(chan struct{})
	defer close(quiet)
	go s.logSummaries(quiet)
	for fails := 0; ; {
		c, err := ln.Accept()
		if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
			// Out of descriptors, or a connection reset before it was
			// accepted: wait and go on; the server does not end.
			fails++
			s.lim.Refused(s.cfg.Log, netip.IPv4Unspecified(), "accept: "+err.Error())
			time.Sleep(connlimit.AcceptBackoff(fails))
			continue
		}
		if err != nil {
			s.closeAll()
			s.wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("serve: accept: %w", err)
		}
		fails = 0
		// Admitted here, before the next accept: a refused connection is
		// closed at once, so the descriptors held stay within the
		// limiter's budget.
		ticket := s.admitConn(c)
		if ticket == nil {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, c, ticket)
		}()
	}
}

// logSummaries writes the limiter's summary of the refusals its log cap
// left out, until quiet is closed.
func (s *Server) logSummaries(quiet chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-quiet:
			return
		case <-t.C:
			s.lim.LogSummary(s.cfg.Log)
		}
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func remoteAddr(c net.Conn) netip.AddrPort {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}

func (s *Server) allowed(a netip.Addr) bool {
	if len(s.cfg.Allow) == 0 {
		return true
	}
	for _, p := range s.cfg.Allow {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// grantedStreams is how many data streams the phase running in the
// session of the client at addr was granted (0: no session, or no
// phase).
func (s *Server) grantedStreams(addr netip.Addr) int {
	s.mu.Lock()
	ss := s.byAddr[addr]
	s.mu.Unlock()
	if ss == nil {
		return 0
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.cur == nil {
		return 0
	}
	return ss.cur.grant.Streams
}

// admitConn decides on a new connection: its address, then the
// limiter's limits. It returns the connection's ticket, or nil after
// closing it.
func (s *Server) admitConn(raw net.Conn) *connlimit.Ticket {
	from := remoteAddr(raw)
	if !s.allowed(from.Addr()) {
		s.lim.Refused(s.cfg.Log, from.Addr(), "address not in --allow")
		raw.Close()
		return nil
	}
	// A client with a phase granted opens its streams at once: on a long
	// path their handshakes overlap, so its address may hold that many
	// more handshakes than a stranger.
	ticket, why := s.lim.AdmitExtra(from.Addr(), s.grantedStreams(from.Addr()))
	if ticket == nil {
		s.lim.Refused(s.cfg.Log, from.Addr(), why.Reason)
		raw.Close()
		return nil
	}
	if !s.track(raw) {
		ticket.Done(false)
		raw.Close()
		return nil
	}
	// Until its handshake is done it is a stranger's: when there is no
	// room for a newcomer, the oldest such connection (past the
	// limiter's grace, longer than a client takes on a long path) is
	// closed to make it. Silent connections from many addresses then
	// hold their slots only until a client needs one.
	ticket.Unproven(func() { raw.Close() })
	return ticket
}

// handle runs one admitted connection: handshake, then control or data.
// Nothing but hello is sent before the client is authenticated. The
// connection holds its ticket (counts against the per-source and global
// limits, which fit the descriptor budget) until its session or stream
// is admitted.
func (s *Server) handle(ctx context.Context, raw net.Conn, ticket *connlimit.Ticket) {
	from := remoteAddr(raw)
	defer s.untrack(raw)
	defer ticket.Done(false) // the paths below give it back themselves; this covers any other
	t0 := time.Now()
	c, a, err := s.handshake(raw)
	if err != nil {
		if !ticket.Proven() {
			s.lim.Refused(s.cfg.Log, from.Addr(), "no handshake yet: dropped to make room")
			return
		}
		ticket.Done(s.peerFault(err, t0))
		s.lim.Refused(s.cfg.Log, from.Addr(), "handshake: "+err.Error())
		return
	}
	if !ticket.Proven() {
		s.lim.Refused(s.cfg.Log, from.Addr(), "no handshake yet: dropped to make room")
		return
	}
	_ = c.SetDeadline(time.Time{})
	if a.Purpose == wire.PurposeControl {
		// Authenticated, waiting for start: when the server has no room
		// for a new connection, one idle this way for a while is dropped
		// to make it.
		ticket.Idle(func() { raw.Close() })
		s.control(ctx, c, from, ticket)
		return
	}
	s.data(c, from, a, ticket)
}

// peerFault: a connection waited on since t0 failed through its peer's
// doing (it sent nothing in time, or what the protocol does not allow, a
// wrong token among them), which penalizes its source. A peer that
// closed it soon (a client that gave up waiting for a server slow to
// accept) or a connection the server closed is not penalized; one that
// closed it after holding it half the handshake timeout is.
func (s *Server) peerFault(err error, t0 time.Time) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	closed := errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	return !closed || time.Since(t0) >= s.cfg.HandshakeTimeout/2
}

// handshake sends hello and checks the client's auth, all within the
// handshake timeout.
func (s *Server) handshake(raw net.Conn) (net.Conn, wire.Auth, error) {
	var a wire.Auth
	_ = raw.SetDeadline(time.Now().Add(s.cfg.HandshakeTimeout))
	c := raw
	if s.cfg.TLS != nil {
		tc := tls.Server(raw, s.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			return nil, a, fmt.Errorf("tls: %w", err)
		}
		c = tc
	}
	nonce := wire.NewNonce()
	if err := wire.WriteMsg(c, wire.TypeHello, wire.Hello{Proto: wire.ProtoVersion, Software: wire.Software, Nonce: nonce}); err != nil {
		return nil, a, err
	}
	f, err := wire.ReadFrame(c, wire.MaxPreAuthFrame)
	switch {
	case errors.Is(err, wire.ErrVersion):
		s.refuse(c, wire.CodeVersion, fmt.Sprintf("this server speaks protocol %d", wire.ProtoVersion), 0)
		return nil, a, err
	case errors.Is(err, os.ErrDeadlineExceeded):
		// Said as it is: a server starved of CPU reads late, and the
		// client (which sent its proof at once) reads this, not a
		// complaint about its message.
		s.refuse(c, wire.CodeRequest, fmt.Sprintf("no auth message read within the handshake timeout (%s)", units.FormatDuration(s.cfg.HandshakeTimeout)), 0)
		return nil, a, err
	case err != nil:
		s.refuse(c, wire.CodeRequest, "expected an auth message", 0)
		return nil, a, err
	}
	if err := wire.Decode(f, wire.TypeAuth, &a); err != nil {
		s.refuse(c, wire.CodeRequest, "expected an auth message", 0)
		return nil, a, err
	}
	if !wire.CheckMAC(a.MAC, wire.ClientMAC(s.cfg.Token, nonce, a)) {
		time.Sleep(100 * time.Millisecond) // slows guessing; the nonce stops replays
		s.refuse(c, wire.CodeAuth, "wrong token", 0)
		return nil, a, errors.New("wrong token or replayed handshake")
	}
	err = wire.WriteMsg(c, wire.TypeWelcome, wire.Welcome{MAC: wire.ServerMAC(s.cfg.Token, nonce, a.ClientNonce)})
	return c, a, err
}

func (s *Server) refuse(c net.Conn, code, msg string, retry int) {
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_ = wire.WriteMsg(c, wire.TypeError, wire.ErrorMsg{Code: code, Message: msg, RetryAfterS: retry})
}

// admit starts a session for addr, or says how long to wait: until the
// first running test is expected to end (session.endsBy).
func (s *Server) admit(from netip.AddrPort, c net.Conn, st wire.Start) (*session, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	wait := func(ss ...*session) int {
		w := math.Inf(1)
		for _, x := range ss {
			w = min(w, x.endsBy(now).Sub(now).Seconds())
		}
		return int(math.Ceil(max(w, 1)))
	}
	if cur, ok := s.byAddr[from.Addr()]; ok {
		return nil, wait(cur)
	}
	if len(s.sessions) >= s.cfg.MaxClients {
		var all []*session
		for _, x := range s.sessions {
			all = append(all, x)
		}
		return nil, wait(all...)
	}
	d := time.Duration(s.cfg.Caps.MaxDurationS * float64(time.Second))
	ss := &session{id: newSessionID(), from: from, ctrl: c, deadline: now.Add(d), srv: s}
	if st.PlannedS > 0 {
		ss.planned = now.Add(min(time.Duration(st.PlannedS*float64(time.Second)), d))
	}
	ss.budget.Store(s.cfg.Caps.MaxBytes)
	s.sessions[ss.id] = ss
	s.byAddr[from.Addr()] = ss
	return ss, 0
}

// endsBy is when the session's test is expected to end: when its
// client planned (Start.PlannedS); overrunWait from now when it has run
// past its plan (a plan is an estimate; a lossy download adds phases);
// its deadline (the --max-duration cap) when the client planned nothing
// (an older client). Never past the deadline.
func (ss *session) endsBy(now time.Time) time.Time {
	switch {
	case ss.planned.IsZero():
		return ss.deadline
	case ss.planned.After(now):
		return ss.planned
	case now.Add(overrunWait).Before(ss.deadline):
		return now.Add(overrunWait)
	}
	return ss.deadline
}

func (s *Server) release(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, ss.id)
	if s.byAddr[ss.from.Addr()] == ss {
		delete(s.byAddr, ss.from.Addr())
	}
}

func (s *Server) lookup(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sameHost is true when a data connection comes from the session's host.
func sameHost(a, b netip.AddrPort) bool { return a.Addr().Unmap() == b.Addr().Unmap() }

var errClosed = errors.New("session closed")
