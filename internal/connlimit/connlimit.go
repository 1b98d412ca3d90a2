// Package connlimit decides which new connections a server exposed to the
// Internet takes on, the way OpenSSH does for unauthenticated ones
// (sshd_config's MaxStartups, PerSourceMaxStartups, PerSourcePenalties):
// a source address (an IPv4 address, or an IPv6 /64) holds at most a few
// connections at a time, and its network (an IPv4 /24, an IPv6 /48) a
// bounded share of them all; beyond Start connections in all, new ones
// are dropped with a probability rising to 1 at Full; a source whose
// connections fail (time out, or fail authentication) is refused for a
// penalty that doubles with each failure. One address, or one network's
// many addresses, holding connections can then no longer take the slots
// of the others. A new connection may be marked unproven until it has
// shown it speaks the protocol (sent its request, completed its
// handshake): when there is no room for a newcomer, the oldest unproven
// one past a short grace (at once in a flood of them) is dropped to make
// it, before any newcomer is refused, so connections from many addresses
// that send nothing hold a slot only until newer ones need it. A connection that proved itself and
// then waits on its peer may be marked idle: with no unproven one to
// drop, the longest-idle one goes. Dropped connections' sources are not
// penalized. It also rate-limits the log lines refusals make, per source
// and in all.
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
	// PerNetwork is how many one network (an IPv4 /24, an IPv6 /48: one
	// site's allocation) may hold at once, its sources together: a
	// flood from a network's many addresses takes that share of Full,
	// not all of it (default: a quarter of Full, at least twice
	// PerSource; never below PerSource).
	PerNetwork int
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
	// SilentGrace is how long a connection marked Unproven is kept
	// before it may be dropped to make room: longer than a client on a
	// long path takes to send its request or complete its handshake (two
	// round trips with TLS). When more than half of the room (Full, or
	// PerNetwork in a full network) is Unproven, a flood, the oldest
	// goes at once: a client's connection then lasts until half the room
	// of newer ones arrived (at 1,000 opens/s into 128, 64 ms at least).
	SilentGrace time.Duration
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
	// DefaultSilentGrace covers two round trips of 400 ms, a handshake
	// over TLS on a satellite path.
	DefaultSilentGrace = time.Second
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
	def(&c.PerNetwork, defaultPerNetwork(c))
	c.PerNetwork = max(c.PerNetwork, c.PerSource)
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
	if c.SilentGrace <= 0 {
		c.SilentGrace = DefaultSilentGrace
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
	netDefault := c.PerNetwork <= 0
	c = c.withDefaults()
	room := max(budget-reserved, 2)
	if c.Full > room {
		c.Full = room
		c.Start = min(c.Start, max(room/4, 1))
		if netDefault {
			c.PerNetwork = max(defaultPerNetwork(c), c.PerSource)
		}
	}
	return c
}

// defaultPerNetwork is a quarter of Full: four networks flooding leave
// room (through random early drop) for the others; at least two
// sources' worth, so that two hosts of one network are never short.
func defaultPerNetwork(c Config) int { return max(c.Full/4, 2*c.PerSource) }

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

	mu     sync.Mutex
	open   int
	peers  map[netip.Prefix]*source
	nets   map[netip.Prefix]int // connections held per network (netKey); no zeros
	idle   map[*Ticket]struct{} // admitted connections marked Idle
	silent map[*Ticket]struct{} // admitted connections marked Unproven
	logs   logBudget
}

// New returns a limiter with cfg's limits.
func New(cfg Config) *Limiter {
	return &Limiter{cfg: cfg.withDefaults(), now: time.Now, roll: rand.Float64, peers: map[netip.Prefix]*source{},
		nets: map[netip.Prefix]int{}, idle: map[*Ticket]struct{}{}, silent: map[*Ticket]struct{}{}}
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

// netKey groups sources as one network: an IPv4 /24, an IPv6 /48 (what
// one site, or one customer of many providers, is given; a /56 or /64
// subscriber's many /64s fall in one).
func netKey(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	bits := 48
	if a.Is4() {
		bits = 24
	}
	p, _ := a.Prefix(bits)
	return p
}

// Ticket is an admitted connection's slot.
type Ticket struct {
	l      *Limiter
	k, net netip.Prefix
	opened time.Time // when it was admitted
	// Under l.mu: done once the slot is given back; idleSince while the
	// connection is marked Idle; drop while it is marked Idle or
	// Unproven.
	done      bool
	idleSince time.Time
	drop      func()
}

// Refusal says why a connection was refused. Full: the server as a
// whole, or the source's network, had no room (and no unproven or idle
// connection could be dropped to make it); otherwise the source itself
// is over its share or penalized.
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
// apply as they do to anyone; its network may hold PerNetwork+extra.
// When there is no room (the server full, a random early drop, or the
// network at its share), a connection is dropped to make it if one may
// be (in the network, when that is what is short): the oldest one
// Unproven for SilentGrace or more, else the longest-idle one, if Idle
// for IdleGrace or more (or more than a quarter of the room is Idle).
// Its slot goes to the new connection, its source is not penalized, and
// its drop function is called before AdmitExtra returns.
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
	k, n := key(a), netKey(a)
	extra = max(extra, 0)
	now := l.now()
	s := l.peers[k]
	switch {
	case s != nil && now.Before(s.until):
		return nil, Refusal{Reason: fmt.Sprintf("penalized for %s after %d failed connection(s)", s.until.Sub(now).Round(time.Second), s.fails)}, nil
	case s != nil && s.open >= l.cfg.PerSource+extra:
		return nil, Refusal{Reason: fmt.Sprintf("already holds %d connections (the most one source may)", s.open)}, nil
	}
	var why Refusal
	var in netip.Prefix // the room must be made there (zero: anywhere)
	switch {
	case l.nets[n] >= l.cfg.PerNetwork+extra:
		// Checked first: a connection dropped in the network frees a
		// slot in all too.
		why = Refusal{Reason: fmt.Sprintf("its network %s holds %d connections (the most one network may)", n, l.nets[n]), Full: true}
		in = n
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
		v := l.oldestSilent(now, in)
		if v == nil {
			v = l.longestIdle(now, in)
		}
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
	l.nets[n]++
	return &Ticket{l: l, k: k, net: n, opened: now}, Refusal{}, drop
}

// within: t is in the network in (zero: anywhere).
func within(t *Ticket, in netip.Prefix) bool { return !in.IsValid() || t.net == in }

// oldestSilent is the ticket (in network in) Unproven the longest, if
// for SilentGrace or more, or at once if more than half of the room
// (Full, or PerNetwork in a network) is Unproven; nil if none. Oldest
// first: a client that speaks answers within a round trip or two, while
// connections that send nothing pile up, so the oldest is the likeliest
// to be one. The grace keeps a slow client among a few; in a flood
// faster than room/SilentGrace it would keep the flood's newest and
// refuse every newcomer, a client's too, so there the oldest goes, and
// a client whose handshake is done before room/2 newer connections
// arrive gets through whatever the rate.
func (l *Limiter) oldestSilent(now time.Time, in netip.Prefix) *Ticket {
	return l.oldest(l.silent, func(t *Ticket) time.Time { return t.opened }, now, in, l.cfg.SilentGrace, 2)
}

// longestIdle is the ticket (in network in) Idle the longest, nil if
// none may be dropped: it must have been idle IdleGrace, unless more
// than a quarter of the room (Full, or PerNetwork in a network) are idle
// (a flood of proven connections that go no further: the newest, a
// client about to go on among them, are kept longest).
func (l *Limiter) longestIdle(now time.Time, in netip.Prefix) *Ticket {
	return l.oldest(l.idle, func(t *Ticket) time.Time { return t.idleSince }, now, in, l.cfg.IdleGrace, 4)
}

// oldest is the ticket of set (in network in) with the earliest since,
// if that was grace ago or more, or at once when more than 1/part of
// the room (Full, or PerNetwork in a network) is in set; nil if none.
func (l *Limiter) oldest(set map[*Ticket]struct{}, since func(*Ticket) time.Time, now time.Time, in netip.Prefix, grace time.Duration, part int) *Ticket {
	var v *Ticket
	n := 0
	for t := range set {
		if !within(t, in) {
			continue
		}
		n++
		if v == nil || since(t).Before(since(v)) {
			v = t
		}
	}
	room := l.cfg.Full
	if in.IsValid() {
		room = l.cfg.PerNetwork
	}
	if v == nil || (now.Sub(since(v)) < grace && n*part <= room) {
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
	delete(l.silent, t)
	t.drop = nil
	l.open--
	if l.nets[t.net]--; l.nets[t.net] <= 0 {
		delete(l.nets, t.net)
	}
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

// Unproven marks a newly admitted connection as not having shown yet
// that it speaks the protocol (no request yet, its handshake not done):
// when there is no room for a new connection, the oldest such one past
// SilentGrace is the first dropped to make it (AdmitExtra), drop then
// being called, outside the limiter's lock, to close it. Its source is
// not penalized for that. Proven, Idle and Active end it.
func (t *Ticket) Unproven(drop func()) {
	if t == nil {
		return
	}
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.done {
		return
	}
	t.drop = drop
	l.silent[t] = struct{}{}
}

// Proven ends Unproven: the connection sent its request or completed its
// handshake. False when its slot is no longer held (it was dropped to
// make room, or Done was called): the connection is to be abandoned.
func (t *Ticket) Proven() bool {
	if t == nil {
		return true
	}
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.silent, t)
	if _, idle := l.idle[t]; !idle {
		t.drop = nil
	}
	return !t.done
}

// Idle marks the connection as proven (authenticated) and waiting on its
// peer: it keeps its slot, but when the server has no room for a new
// connection (and no Unproven one to drop) it may be dropped to make it
// (AdmitExtra), drop then being called, outside the limiter's lock, to
// close it. Its source is not penalized for that.
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
	delete(l.silent, t)
	t.idleSince, t.drop = l.now(), drop
	l.idle[t] = struct{}{}
}

// Active ends Idle (and Unproven): the connection is in use and may no
// longer be dropped. False when its slot is no longer held (it was
// dropped to make room, or Done was called): the connection is to be
// abandoned.
func (t *Ticket) Active() bool {
	if t == nil {
		return true
	}
	l := t.l
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.idle, t)
	delete(l.silent, t)
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
