// Package connlimit decides which new connections a server exposed to the
// Internet takes on, the way OpenSSH does for unauthenticated ones
// (sshd_config's MaxStartups, PerSourceMaxStartups, PerSourcePenalties):
// a source address (an IPv4 address, or an IPv6 /64) holds at most a few
// connections at a time; beyond Start connections in all, new ones are
// dropped with a probability rising to 1 at Full; a source whose
// connections fail (time out, or fail authentication) is refused for a
// penalty that doubles with each failure. One address holding
// connections can then no longer take the slots of the others. A
// connection that proved itself and then waits on its peer may be marked
// idle: when the server is full, the longest-idle one is dropped to make
// room for a new connection, its source not penalized. It also
// rate-limits the log lines refusals make, per source and in all.
//
// It is pure bookkeeping: it opens nothing and starts no goroutine (the
// only thing it calls is the drop function a connection was marked idle
// with).
package connlimit

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

// Config sets the limits; zero fields take the defaults.
type Config struct {
	// PerSource is how many connections one source may hold at once.
	PerSource int
	// Start, Full: from Start connections in all, a new one is refused
	// with probability rising linearly to 1 at Full (random early drop).
	Start, Full int
	// Penalty is the first refusal time of a source whose connection
	// failed; each further failure doubles it, up to MaxPenalty.
	Penalty, MaxPenalty time.Duration
	// MaxSources bounds the sources tracked (their state is forgotten
	// once they hold nothing and their penalty is over).
	MaxSources int
	// LogEvery is the least time between two log lines about one
	// source's refusals; the suppressed ones are counted in the next.
	LogEvery time.Duration
	// IdleGrace is how long a connection must have been Idle before it
	// may be dropped to make room: longer than a client that proved
	// itself takes to go on (a round trip). When more than a quarter of
	// Full are idle the longest-idle one may go at once.
	IdleGrace time.Duration
	// LogBurst caps the refusal lines of all sources together: at most
	// LogBurst at once, LogBurst per LogEvery after that; the others are
	// counted in a summary line at most once per LogEvery.
	LogBurst int
}

// Defaults.
const (
	DefaultPerSource  = 4
	DefaultStart      = 32
	DefaultFull       = 128
	DefaultPenalty    = 2 * time.Second
	DefaultMaxPenalty = 5 * time.Minute
	DefaultMaxSources = 1 << 16
	DefaultLogEvery   = 10 * time.Second
	DefaultLogBurst   = 10
	DefaultIdleGrace  = time.Second
)

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.PerSource, DefaultPerSource)
	def(&c.Full, DefaultFull)
	def(&c.Start, min(DefaultStart, c.Full))
	def(&c.MaxSources, DefaultMaxSources)
	def(&c.LogBurst, DefaultLogBurst)
	c.Start = min(c.Start, c.Full)
	if c.Penalty <= 0 {
		c.Penalty = DefaultPenalty
	}
	if c.MaxPenalty < c.Penalty {
		c.MaxPenalty = max(DefaultMaxPenalty, c.Penalty)
	}
	if c.IdleGrace <= 0 {
		c.IdleGrace = DefaultIdleGrace
	}
	if c.LogEvery <= 0 {
		c.LogEvery = DefaultLogEvery
	}
	return c
}

// FitFDs scales Full (and Start) so that the connections this limiter
// admits, plus reserved descriptors for everything else, fit in a
// descriptor budget (RLIMIT_NOFILE): a flood then meets the limiter, not
// "too many open files".
func (c Config) FitFDs(budget, reserved int) Config {
	c = c.withDefaults()
	room := max(budget-reserved, 2)
	if c.Full > room {
		c.Full = room
		c.Start = min(c.Start, max(room/4, 1))
	}
	return c
}

// source is what the limiter knows of one address.
type source struct {
	open     int
	fails    int       // consecutive failures
	until    time.Time // refused until then
	logged   time.Time // the last log line about it
	silenced int       // refusals since that line
}

// Limiter admits connections. It is safe for concurrent use.
type Limiter struct {
	cfg  Config
	now  func() time.Time
	roll func() float64

	mu    sync.Mutex
	open  int
	peers map[netip.Prefix]*source
	idle  map[*Ticket]struct{} // admitted connections marked Idle
	logs  logBudget
}

// New returns a limiter with cfg's limits.
func New(cfg Config) *Limiter {
	return &Limiter{cfg: cfg.withDefaults(), now: time.Now, roll: rand.Float64, peers: map[netip.Prefix]*source{}, idle: map[*Ticket]struct{}{}}
}

// Config returns the limits in force.
func (l *Limiter) Config() Config { return l.cfg }

// key groups addresses as one source: an IPv4 address, an IPv6 /64
// (one subscriber's network).
func key(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}

// Ticket is an admitted connection's slot.
type Ticket struct {
	l *Limiter
	k netip.Prefix
	// Under l.mu: done once the slot is given back; idleSince and drop
	// while the connection is marked Idle.
	done      bool
	idleSince time.Time
	drop      func()
}

// Refusal says why a connection was refused. Full: the server as a
// whole had no room (a server may then make room, e.g. by closing an
// idle connection); otherwise the source itself is over its share or
// penalized.
type Refusal struct {
	Reason string
	Full   bool
}

func (r Refusal) String() string { return r.Reason }

// Admit decides on a new connection from a: a ticket to give back with
// Done, or why it is refused.
func (l *Limiter) Admit(a netip.Addr) (*Ticket, Refusal) { return l.AdmitExtra(a, 0) }

// AdmitExtra is Admit for a source the server expects extra connections
// from beyond its share (the data streams of a phase an authenticated
// client was granted, whose handshakes overlap on a long path): it may
// hold PerSource+extra at once. Penalties and the server's own limits
// apply as they do to anyone. When the server as a whole has no room
// (full, or a random early drop) and a connection has been Idle for
// IdleGrace or more (or more than a quarter of Full are Idle), the
// longest-idle one is dropped to make room: its slot goes to the new
// connection, its source is not penalized, and its drop function is
// called before AdmitExtra returns.
func (l *Limiter) AdmitExtra(a netip.Addr, extra int) (*Ticket, Refusal) {
	l.mu.Lock()
	t, why, drop := l.admit(a, extra)
	l.mu.Unlock()
	if drop != nil {
		drop()
	}
	return t, why
}

func (l *Limiter) admit(a netip.Addr, extra int) (*Ticket, Refusal, func()) {
	k := key(a)
	now := l.now()
	s := l.peers[k]
	switch {
	case s != nil && now.Before(s.until):
		return nil, Refusal{Reason: fmt.Sprintf("penalized for %s after %d failed connection(s)", s.until.Sub(now).Round(time.Second), s.fails)}, nil
	case s != nil && s.open >= l.cfg.PerSource+max(extra, 0):
		return nil, Refusal{Reason: fmt.Sprintf("already holds %d connections (the most one source may)", s.open)}, nil
	}
	var why Refusal
	switch {
	case l.open >= l.cfg.Full:
		why = Refusal{Reason: fmt.Sprintf("server full (%d connections)", l.open), Full: true}
	case l.open >= l.cfg.Start && l.roll() < float64(l.open-l.cfg.Start+1)/float64(l.cfg.Full-l.cfg.Start+1):
		why = Refusal{Reason: fmt.Sprintf("server busy (%d connections): dropped early", l.open), Full: true}
	}
	if s == nil && len(l.peers) >= l.cfg.MaxSources {
		l.prune(now)
		if len(l.peers) >= l.cfg.MaxSources {
			return nil, Refusal{Reason: "too many sources tracked", Full: true}, nil
		}
	}
	var drop func()
	if why.Full {
		v := l.longestIdle(now)
		if v == nil {
			return nil, why, nil
		}
		drop = v.drop
		l.release(v)
	}
	if s == nil {
		s = &source{}
		l.peers[k] = s
	}
	s.open++
	l.open++
	return &Ticket{l: l, k: k}, Refusal{}, drop
}

// longestIdle is the ticket Idle the longest, nil if none may be
// dropped: it must have been idle IdleGrace, unless more than a quarter
// of Full are idle (a flood of proven connections that go no further:
// the newest, a client about to go on among them, are kept longest).
func (l *Limiter) longestIdle(now time.Time) *Ticket {
	var v *Ticket
	for t := range l.idle {
		if v == nil || t.idleSince.Before(v.idleSince) {
			v = t
		}
	}
	if v == nil || (now.Sub(v.idleSince) < l.cfg.IdleGrace && len(l.idle)*4 <= l.cfg.Full) {
		return nil
	}
	return v
}

// prune forgets sources that hold nothing and owe nothing.
func (l *Limiter) prune(now time.Time) {
	for k, s := range l.peers {
		if s.open == 0 && !now.Before(s.until) && now.Sub(s.logged) >= l.cfg.LogEvery {
			delete(l.peers, k)
		}
	}
}

// release gives t's slot back (l.mu held); false if it was already.
func (l *Limiter) release(t *Ticket) bool {
	if t.done {
		return false
	}
	t.done = true
	delete(l.idle, t)
	t.drop = nil
	l.open--
	if s := l.peers[t.k]; s != nil {
		s.open--
	}
	return true
}

// Done gives the slot back. failed (the peer timed out or failed
// authentication) penalizes its source; a success clears its record.
// Later calls, and calls after the connection was dropped to make room,
// do nothing.
func (t *Ticket) Done(failed bool) {
	if t == nil {
		return
	}
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.peers[t.k]
	if !l.release(t) || s == nil {
		return
	}
	if !failed {
		s.fails = 0
		return
	}
	s.fails++
	p := l.cfg.Penalty << min(s.fails-1, 20)
	s.until = l.now().Add(min(p, l.cfg.MaxPenalty))
}

// Idle marks the connection as proven (authenticated) and waiting on its
// peer: it keeps its slot, but when the server has no room for a new
// connection it may be dropped to make it (AdmitExtra), drop then being
// called, outside the limiter's lock, to close it. Its source is not
// penalized for that.
func (t *Ticket) Idle(drop func()) {
	if t == nil {
		return
	}
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.done {
		return
	}
	t.idleSince, t.drop = l.now(), drop
	l.idle[t] = struct{}{}
}

// Active ends Idle: the connection is in use again and may no longer be
// dropped. False when its slot is no longer held (it was dropped to make
// room, or Done was called): the connection is to be abandoned.
func (t *Ticket) Active() bool {
	if t == nil {
		return true
	}
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.idle, t)
	t.drop = nil
	return !t.done
}

// Open is the number of connections holding a ticket.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// AcceptBackoff is how long an accept loop waits after its n-th error in
// a row (n >= 1; "too many open files" among them): 5 ms doubling to 1 s,
// as net/http's server does. The loop goes on; only its listener being
// closed ends it.
func AcceptBackoff(n int) time.Duration {
	return min(5*time.Millisecond<<min(max(n-1, 0), 10), time.Second)
}
