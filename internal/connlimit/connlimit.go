// Package connlimit decides which new connections a server exposed to the
// Internet takes on, the way OpenSSH does for unauthenticated ones
// (sshd_config's MaxStartups, PerSourceMaxStartups, PerSourcePenalties):
// a source address (an IPv4 address, or an IPv6 /64) holds at most a few
// connections at a time; beyond Start connections in all, new ones are
// dropped with a probability rising to 1 at Full; a source whose
// connections fail (time out, or fail authentication) is refused for a
// penalty that doubles with each failure. One address holding
// connections can then no longer take the slots of the others. It also
// rate-limits the log lines refusals make.
//
// It is pure bookkeeping: it opens nothing and starts no goroutine.
package connlimit

import (
	"fmt"
	"log/slog"
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
	c.Start = min(c.Start, c.Full)
	if c.Penalty <= 0 {
		c.Penalty = DefaultPenalty
	}
	if c.MaxPenalty < c.Penalty {
		c.MaxPenalty = max(DefaultMaxPenalty, c.Penalty)
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
}

// New returns a limiter with cfg's limits.
func New(cfg Config) *Limiter {
	return &Limiter{cfg: cfg.withDefaults(), now: time.Now, roll: rand.Float64, peers: map[netip.Prefix]*source{}}
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
	l    *Limiter
	k    netip.Prefix
	once sync.Once
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
// apply as they do to anyone.
func (l *Limiter) AdmitExtra(a netip.Addr, extra int) (*Ticket, Refusal) {
	k := key(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	s := l.peers[k]
	switch {
	case s != nil && now.Before(s.until):
		return nil, Refusal{Reason: fmt.Sprintf("penalized for %s after %d failed connection(s)", s.until.Sub(now).Round(time.Second), s.fails)}
	case s != nil && s.open >= l.cfg.PerSource+max(extra, 0):
		return nil, Refusal{Reason: fmt.Sprintf("already holds %d connections (the most one source may)", s.open)}
	case l.open >= l.cfg.Full:
		return nil, Refusal{Reason: fmt.Sprintf("server full (%d connections)", l.open), Full: true}
	case l.open >= l.cfg.Start && l.roll() < float64(l.open-l.cfg.Start+1)/float64(l.cfg.Full-l.cfg.Start+1):
		return nil, Refusal{Reason: fmt.Sprintf("server busy (%d connections): dropped early", l.open), Full: true}
	}
	if s == nil {
		if len(l.peers) >= l.cfg.MaxSources {
			l.prune(now)
			if len(l.peers) >= l.cfg.MaxSources {
				return nil, Refusal{Reason: "too many sources tracked", Full: true}
			}
		}
		s = &source{}
		l.peers[k] = s
	}
	s.open++
	l.open++
	return &Ticket{l: l, k: k}, Refusal{}
}

// prune forgets sources that hold nothing and owe nothing.
func (l *Limiter) prune(now time.Time) {
	for k, s := range l.peers {
		if s.open == 0 && !now.Before(s.until) && now.Sub(s.logged) >= l.cfg.LogEvery {
			delete(l.peers, k)
		}
	}
}

// Done gives the slot back. failed (the peer timed out or failed
// authentication) penalizes its source; a success clears its record.
// Later calls do nothing.
func (t *Ticket) Done(failed bool) {
	if t == nil {
		return
	}
	t.once.Do(func() {
		l := t.l
		l.mu.Lock()
		defer l.mu.Unlock()
		l.open--
		s := l.peers[t.k]
		if s == nil {
			return
		}
		s.open--
		if !failed {
			s.fails = 0
			return
		}
		s.fails++
		p := l.cfg.Penalty << min(s.fails-1, 20)
		s.until = l.now().Add(min(p, l.cfg.MaxPenalty))
	})
}

// Open is the number of connections holding a ticket.
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Refused logs a refusal of a connection from a for reason, at most once
// per LogEvery per source; the line says how many were not logged since.
func (l *Limiter) Refused(log *slog.Logger, a netip.Addr, reason string) {
	k := key(a)
	l.mu.Lock()
	now := l.now()
	s := l.peers[k]
	if s == nil {
		if len(l.peers) >= l.cfg.MaxSources {
			l.prune(now)
		}
		if len(l.peers) >= l.cfg.MaxSources {
			l.mu.Unlock()
			return // a flood of sources: stay silent rather than grow
		}
		s = &source{}
		l.peers[k] = s
	}
	if now.Sub(s.logged) < l.cfg.LogEvery {
		s.silenced++
		l.mu.Unlock()
		return
	}
	n := s.silenced
	s.logged, s.silenced = now, 0
	l.mu.Unlock()
	log.Warn("connection refused", "source", k.String(), "reason", reason, "refusals_not_logged", n)
}

// AcceptBackoff is how long an accept loop waits after its n-th error in
// a row (n >= 1; "too many open files" among them): 5 ms doubling to 1 s,
// as net/http's server does. The loop goes on; only its listener being
// closed ends it.
func AcceptBackoff(n int) time.Duration {
	return min(5*time.Millisecond<<min(max(n-1, 0), 10), time.Second)
}
