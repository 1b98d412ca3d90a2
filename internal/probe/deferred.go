//go:build linux

package probe

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// maxDeferred bounds the tests one scrape's busy probe runs again in
// the background.
const maxDeferred = 3

// deferredSource is the scraper deferred probes count against in the
// connecting stage (no scraper waits for them).
var deferredSource = netip.Prefix{}

// later runs a probe the target answered busy again once the target's
// running test is expected to end (its serve's retry-after, plus up to a
// quarter of it at random, so that probers that collided once do not
// collide again), up to maxDeferred times. A probe whose scrape had room
// to wait has queued already (runQueued); this is for the rest: on a
// long path a probe takes most of the scrape's timeout, and Prometheus
// scrapes each prober's probe of a target at the same offset of every
// interval, so two probers that collide once would collide every
// interval and one of them never measure the path. The next scrape gets
// the deferred result whatever its age (longhaul_probe_result_age_seconds
// says how old) instead of a new probe that would collide again.
func (p *Prober) later(dial Target, res *result, try int) {
	var re *wire.RemoteError
	if try > maxDeferred || !errors.As(res.err, &re) || re.Code != wire.CodeBusy {
		return
	}
	wait := time.Duration(re.RetryAfterS) * time.Second
	wait += rand.N(wait/4 + time.Second)
	p.after(wait, func() { p.deferred(dial, try) })
}

// deferred runs the deferred probe unless the target has been probed
// since (a scrape started one, or it is no longer the busy result) or
// the exporter has no slot for it (then it is dropped: scrapes come
// first).
func (p *Prober) deferred(dial Target, try int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entries[dial.Addr]
	if e == nil || e.done != nil || e.last == nil || e.last.reason != reasonBusy {
		return
	}
	st, err := p.enter(deferredSource)
	if err != nil {
		return
	}
	e.used = p.now()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Timeout)
	p.start(ctx, cancel, e, dial, st, try)
}
