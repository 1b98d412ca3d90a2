package connlimit

import (
	"log/slog"
	"net/netip"
	"time"
)

// logBudget is what the limiter's refusal lines of all sources together
// may still use: a token bucket of LogBurst lines refilled at LogBurst
// per LogEvery, and the refusals it left out since the last summary.
type logBudget struct {
	tokens   float64
	filled   time.Time // when tokens was last topped up; zero: never
	unlogged int       // refusals left out since since
	since    time.Time // the first of them
}

// take spends a line if the bucket has one.
func (b *logBudget) take(cfg Config, now time.Time) bool {
	if b.filled.IsZero() {
		b.tokens = float64(cfg.LogBurst)
	} else if d := now.Sub(b.filled); d > 0 {
		b.tokens = min(b.tokens+d.Seconds()/cfg.LogEvery.Seconds()*float64(cfg.LogBurst), float64(cfg.LogBurst))
	}
	b.filled = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// leaveOut counts a refusal no line was written for.
func (b *logBudget) leaveOut(now time.Time) {
	if b.unlogged == 0 {
		b.since = now
	}
	b.unlogged++
}

// due returns the refusals to summarize, and over how long, when
// LogEvery has passed since the first of them (0: none due), and starts
// a new count.
func (b *logBudget) due(cfg Config, now time.Time) (int, time.Duration) {
	if b.unlogged == 0 || now.Sub(b.since) < cfg.LogEvery {
		return 0, 0
	}
	n, d := b.unlogged, now.Sub(b.since)
	b.unlogged = 0
	return n, d
}

// Refused logs a refusal of a connection from a for reason: at most one
// line per LogEvery per source, which says how many of its refusals were
// not logged since; and at most LogBurst lines per LogEvery from all
// sources together. The refusals that cap leaves out are counted in a
// summary line ("connection refusals not logged"), written at most once
// per LogEvery, here or by LogSummary.
func (l *Limiter) Refused(log *slog.Logger, a netip.Addr, reason string) {
	k := key(a)
	l.mu.Lock()
	now := l.now()
	n, over := l.logs.due(l.cfg, now)
	s := l.peers[k]
	if s == nil {
		if len(l.peers) >= l.cfg.MaxSources {
			l.prune(now)
		}
		if len(l.peers) < l.cfg.MaxSources {
			s = &source{}
			l.peers[k] = s
		}
	}
	line, silenced := false, 0
	switch {
	case s == nil:
		l.logs.leaveOut(now) // a flood of sources: counted, not tracked
	case now.Sub(s.logged) < l.cfg.LogEvery:
		s.silenced++
	case !l.logs.take(l.cfg, now):
		l.logs.leaveOut(now)
	default:
		line, silenced = true, s.silenced
		s.logged, s.silenced = now, 0
	}
	l.mu.Unlock()
	if n > 0 {
		summary(log, n, over)
	}
	if line {
		log.Warn("connection refused", "source", k.String(), "reason", reason, "refusals_not_logged", silenced)
	}
}

// LogSummary writes the summary line of the refusals the cap on all
// sources left out, if LogEvery has passed since the first of them. A
// server calls it now and then, so that the count is written when the
// refusals stop.
func (l *Limiter) LogSummary(log *slog.Logger) {
	l.mu.Lock()
	n, over := l.logs.due(l.cfg, l.now())
	l.mu.Unlock()
	if n > 0 {
		summary(log, n, over)
	}
}

func summary(log *slog.Logger, n int, over time.Duration) {
	log.Warn("connection refusals not logged", "refusals", n, "seconds", int(over.Round(time.Second).Seconds()))
}
