//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// maxQueueTries bounds the tests a probe asks of a busy target: probers
// that collide on one target queue for it (the first is served, the
// next learn when it ends), a few times, within the scrape's deadline.
const maxQueueTries = 4

// queueAfter is time.After; tests replace it.
var queueAfter = time.After

// runQueued runs the probe's test. When the target's serve is busy with
// another test (another prober's: a serve runs one at a time) and its
// retry-after, plus the time this probe needs, fits before the probe's
// deadline, it waits that long (and up to a second more, so colliding
// probers do not all come back at once) and asks again, holding no slot
// while it waits; else the busy answer stands. waited is the time spent
// waiting. Every try passes the connecting stage again (its caps: a
// target that answered busy may stall the next time).
func (p *Prober) runQueued(ctx context.Context, o twohost.ClientOptions, st *stage) (raw *judge.Raw, waited time.Duration, err error) {
	for try := 1; ; try++ {
		raw, err = p.cfg.Run(ctx, o)
		var re *wire.RemoteError
		if !errors.As(err, &re) || re.Code != wire.CodeBusy || try == maxQueueTries {
			return raw, waited, err
		}
		wait := time.Duration(re.RetryAfterS)*time.Second + rand.N(time.Second)
		end, ok := ctx.Deadline()
		if !ok || time.Until(end) < wait+p.need(o.Addr) {
			return raw, waited, err
		}
		st.release()
		t0 := time.Now()
		select {
		case <-queueAfter(wait):
		case <-ctx.Done():
			return raw, waited, err
		}
		waited += time.Since(t0)
		if rerr := p.reenter(st); rerr != nil {
			return nil, waited, fmt.Errorf("the target was busy, then: %w", rerr)
		}
	}
}

// need is about how long a probe of target takes: its last judged
// test's length when it had one (failures since do not count: a probe
// that waited and then had no room for its phases failed, and the next
// must not take it for a short one), else the shortest probe (phases of
// twohost.MinPhase on a short path; a probe whose deadline is nearer
// runs shorter phases or none).
func (p *Prober) need(target string) time.Duration {
	n := twohost.TestLength(int(p.cfg.phases()), max(p.cfg.Phase, twohost.MinPhase), 0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[target]; e != nil {
		n = max(n, e.took)
	}
	return n
}

// reenter puts a probe that waited for a busy target back in the
// connecting stage, as a new probe would enter it.
func (p *Prober) reenter(st *stage) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	ns, err := p.enter(st.src)
	if err != nil {
		return err
	}
	*st = *ns
	return nil
}
