//go:build linux

package probe

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// deferrals replaces deferAfter for a test: it records each deferred
// probe (its wait and its function) for the test to run.
type deferrals struct {
	mu    sync.Mutex
	waits []time.Duration
	fns   []func()
}

func (d *deferrals) after(w time.Duration, f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waits, d.fns = append(d.waits, w), append(d.fns, f)
}

// take returns the oldest deferral, waiting for it a little: a probe's
// goroutine defers after it has closed the probe's done (start).
func (d *deferrals) take(t *testing.T) (time.Duration, func()) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for end := time.Now().Add(5 * time.Second); len(d.fns) == 0 && time.Now().Before(end); {
		d.mu.Unlock()
		time.Sleep(time.Millisecond)
		d.mu.Lock()
	}
	if len(d.fns) == 0 {
		t.Fatal("no probe was deferred")
	}
	w, f := d.waits[0], d.fns[0]
	d.waits, d.fns = d.waits[1:], d.fns[1:]
	return w, f
}

func idle(t *testing.T, p *Prober, target string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		p.mu.Lock()
		e := p.entries[target]
		done := e != nil && e.done == nil && e.last != nil
		p.mu.Unlock()
		if done {
			return
		}
	}
	p.mu.Lock()
	e := p.entries[target]
	t.Fatalf("the probe did not end: %+v last %+v", e, e.last)
}

// A probe the target answered busy, with no room left to queue before
// the scrape's deadline, runs again once the target's test is expected
// to end (its retry-after, plus at most a quarter more); the next
// scrape gets that result whatever its age, without a new probe; the
// scrape after probes again. A target busy every time is tried
// maxDeferred times in the background, no more.
func TestDeferredAfterBusy(t *testing.T) {
	var d deferrals
	b := &busyRun{busy: 1, retry: 20}
	p := newTestProber(t, nil, func(c *Config) { c.Run, c.MinInterval = b.run, 0 })
	p.after = d.after
	const target = "198.51.100.5:9978"
	scrape := func() string {
		return get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", "5").Body.String()
	}
	if out := scrape(); !strings.Contains(out, `reason="busy"`) {
		t.Fatalf("first scrape:\n%s", out)
	}
	w, f := d.take(t)
	if w < 20*time.Second || w > 26*time.Second {
		t.Errorf("deferred by %s, want 20 s and at most a quarter more", w)
	}
	f()
	idle(t, p, target)
	if n := b.n.Load(); n != 2 {
		t.Fatalf("%d tests after the deferred probe, want 2", n)
	}
	if out := scrape(); !strings.Contains(out, `reason="error"`) || b.n.Load() != 2 {
		t.Errorf("the scrape after: %d tests, want the deferred result served without a new one:\n%s", b.n.Load(), out)
	}
	scrape()
	idle(t, p, target)
	if n := b.n.Load(); n != 3 {
		t.Errorf("the next scrape ran %d tests in all, want a new one (3)", n)
	}

	always := &busyRun{busy: 1 << 30, retry: 40} // too long to queue for within a deferred probe's 30 s
	p = newTestProber(t, nil, func(c *Config) { c.Run, c.MinInterval = always.run, 0 })
	p.after = d.after
	scrape = func() string {
		return get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", "5").Body.String()
	}
	scrape()
	for range maxDeferred {
		_, f := d.take(t)
		f()
		idle(t, p, target)
	}
	if n := always.n.Load(); n != 1+maxDeferred || len(d.fns) != 0 {
		t.Errorf("a target busy every time: %d tests, %d more deferred; want %d and none", n, len(d.fns), 1+maxDeferred)
	}
	// A deferred probe whose target a scrape probed since does not run.
	p.mu.Lock()
	p.entries[target].last.until = time.Time{} // the busy answer has aged out
	p.mu.Unlock()
	scrape() // a new probe: busy again, deferred
	idle(t, p, target)
	_, f = d.take(t)
	p.mu.Lock()
	p.entries[target].last.reason = reasonError // another scrape's probe got through meanwhile
	p.mu.Unlock()
	before := always.n.Load()
	f()
	idle(t, p, target)
	if always.n.Load() != before {
		t.Error("a deferred probe ran although the target was probed since")
	}
}

// What a probe of a target needs is its last judged test's length: a
// failure since (a probe that waited for a busy target and then had no
// room for its phases) does not make the next probe take it for a
// short one and queue where it cannot fit.
func TestNeedKeepsTheLastJudgedLength(t *testing.T) {
	p := newTestProber(t, &fakeRun{}, nil)
	const target = "198.51.100.5:9978"
	short := p.need(target)
	p.mu.Lock()
	p.entries[target] = &entry{took: 25 * time.Second, last: &result{reason: reasonError}}
	p.mu.Unlock()
	if n := p.need(target); n != 25*time.Second || short >= n {
		t.Errorf("need %s after a 25 s test and a failure (%s for a target never probed)", n, short)
	}
}
