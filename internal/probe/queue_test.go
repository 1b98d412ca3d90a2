//go:build linux

package probe

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// busyRun is a target's serve that is busy for its first busy tests
// (after the probe proved itself: Admit), then runs them.
type busyRun struct {
	busy  int64
	retry int
	n     atomic.Int64
}

func (b *busyRun) run(ctx context.Context, o twohost.ClientOptions) (*judge.Raw, error) {
	if err := o.Admit(); err != nil {
		return nil, err
	}
	if b.n.Add(1) <= b.busy {
		return nil, fmt.Errorf("test: x: %w", &wire.RemoteError{Code: wire.CodeBusy, Message: "a test is running", RetryAfterS: b.retry})
	}
	return nil, fmt.Errorf("fake: the test ran")
}

// waitsOf replaces queueAfter for a test: it records each wait asked
// and what the prober held then, and waits d instead.
type waitsOf struct {
	mu    sync.Mutex
	asked []time.Duration
	held  []string
}

func (w *waitsOf) install(t *testing.T, p *Prober, d time.Duration) {
	old := queueAfter
	t.Cleanup(func() { queueAfter = old })
	queueAfter = func(wait time.Duration) <-chan time.Time {
		w.mu.Lock()
		w.asked = append(w.asked, wait)
		w.held = append(w.held, fmt.Sprintf("%d testing, %d connecting", len(p.sem), len(p.connecting)))
		w.mu.Unlock()
		return time.After(d)
	}
}

// A busy target is asked again after its retry-after when the scrape's
// deadline leaves room for that and a probe, holding no slot meanwhile;
// the wait is its own metric, not the test's duration.
func TestProbeQueuesOnBusy(t *testing.T) {
	b := &busyRun{busy: 2, retry: 5}
	p := newTestProber(t, nil, func(c *Config) { c.Run = b.run; c.Timeout = time.Minute })
	var w waitsOf
	w.install(t, p, 50*time.Millisecond)
	body := get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", "40").Body.String()
	if n := b.n.Load(); n != 3 || !strings.Contains(body, `longhaul_probe_failure_info{reason="error"} 1`) {
		t.Fatalf("busy twice with retry-after 5 s and 40 s to the deadline: %d tests (want 3, the last one run):\n%s", n, body)
	}
	for i, d := range w.asked {
		if d < 5*time.Second || d >= 6*time.Second || w.held[i] != "0 testing, 0 connecting" {
			t.Errorf("wait %d: %s holding %s; want 5..6 s holding no slot", i, d, w.held[i])
		}
	}
	if q := metricValue(t, body, "longhaul_probe_queued_seconds"); q < 0.1 || q > 1 {
		t.Errorf("queued %g s over two waits of 50 ms", q)
	}
	if len(p.sem) != 0 || len(p.connecting) != 0 || len(p.bySource) != 0 {
		t.Errorf("after the probe: %d testing, %d connecting, %v by source", len(p.sem), len(p.connecting), p.bySource)
	}
}

// With no room before the deadline the busy answer stands at once, and a
// target busy every time is asked at most maxQueueTries times.
func TestProbeBusyNoRoomOrTooOften(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retry     int
		busy      int64
		timeout   string
		tests     int64
		waitsWant int
	}{
		// 25 s + a probe (12 s at the least) do not fit 29.5 s.
		{"no room", 25, 100, "30", 1, 0},
		{"busy every time", 1, 100, "100", maxQueueTries, maxQueueTries - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &busyRun{busy: tc.busy, retry: tc.retry}
			p := newTestProber(t, nil, func(c *Config) { c.Run = b.run; c.Timeout = 2 * time.Minute })
			var w waitsOf
			w.install(t, p, time.Millisecond)
			body := get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", tc.timeout).Body.String()
			if n := b.n.Load(); n != tc.tests || len(w.asked) != tc.waitsWant || !strings.Contains(body, "longhaul_probe_target_busy 1") {
				t.Errorf("%d tests, %d waits (want %d, %d):\n%s", n, len(w.asked), tc.tests, tc.waitsWant, body)
			}
		})
	}
}

// serveOne is a target's serve running one test at a time (the
// default): a second is refused busy while the first runs, told to come
// back at the first's planned end. It records every test it ran.
type serveOne struct {
	mu      sync.Mutex
	running bool
	ends    time.Time
	ran     [][2]time.Time
	long    time.Duration
}

func (s *serveOne) run(ctx context.Context, o twohost.ClientOptions) (*judge.Raw, error) {
	if err := o.Admit(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	now := time.Now()
	if s.running {
		retry := int(math.Ceil(max(s.ends.Sub(now).Seconds(), 0)))
		s.mu.Unlock()
		return nil, &wire.RemoteError{Code: wire.CodeBusy, Message: "a test is running", RetryAfterS: retry}
	}
	s.running, s.ends = true, now.Add(s.long)
	s.mu.Unlock()
	time.Sleep(s.long)
	s.mu.Lock()
	s.ran = append(s.ran, [2]time.Time{now, time.Now()})
	s.running = false
	s.mu.Unlock()
	return nil, fmt.Errorf("fake: the test ran")
}

// Probers of one target (one per site, each its own exporter) that
// collide queue for it: every one runs its test, and no two overlap.
func TestProbersOfOneTargetQueue(t *testing.T) {
	s := &serveOne{long: 700 * time.Millisecond}
	var wg sync.WaitGroup
	bodies := make([]string, 3)
	for i := range bodies {
		p := newTestProber(t, nil, func(c *Config) { c.Run = s.run; c.Timeout = time.Minute })
		wg.Go(func() {
			bodies[i] = get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", "25").Body.String()
		})
	}
	wg.Wait()
	for i, b := range bodies {
		if !strings.Contains(b, `reason="error"`) {
			t.Errorf("prober %d did not run its test:\n%s", i, b)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ran) != 3 {
		t.Fatalf("%d tests ran, want 3", len(s.ran))
	}
	for i, a := range s.ran {
		for _, b := range s.ran[i+1:] {
			if a[0].Before(b[1]) && b[0].Before(a[1]) {
				t.Errorf("tests overlap: %v and %v", a, b)
			}
		}
	}
}

func metricValue(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			var x float64
			if _, err := fmt.Sscan(v, &x); err == nil {
				return x
			}
		}
	}
	t.Fatalf("no %s in:\n%s", name, body)
	return 0
}
