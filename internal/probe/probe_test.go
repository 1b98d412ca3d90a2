//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// fakeRun records what a probe asked and answers with a fixed outcome.
// Its target is a serve: it admits the probe (ClientOptions.Admit) as
// twohost.Run does once the handshake proved the token.
type fakeRun struct {
	mu    sync.Mutex
	calls []twohost.ClientOptions
	dls   []time.Time
	n     atomic.Int64
	gate  chan struct{} // if set, each run waits for it (or its ctx)
	err   error
}

func (f *fakeRun) run(ctx context.Context, o twohost.ClientOptions) (*judge.Raw, error) {
	f.n.Add(1)
	f.mu.Lock()
	f.calls = append(f.calls, o)
	dl, _ := ctx.Deadline()
	f.dls = append(f.dls, dl)
	f.mu.Unlock()
	if o.Admit != nil {
		if err := o.Admit(); err != nil {
			return nil, err
		}
	}
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return nil, errors.New("fake: no test")
}

func newTestProber(t *testing.T, f *fakeRun, mod func(*Config)) *Prober {
	t.Helper()
	cfg := Config{Allowed: Allowed{Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		Targets: []Target{{Addr: "far.example:9000", Pin: "sha256:" + strings.Repeat("ab", 32)}}},
		Token: []byte("0123456789abcdef0123"), Run: f.run}
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := New(cfg)
	// No deferred probes (deferred.go) unless a test asks for them: a
	// real timer would run one after its test has ended.
	p.after = func(time.Duration, func()) {}
	return p
}

func get(p *Prober, query string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/probe?"+query, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	return w
}

// A query cannot point the probe outside the allowed targets: not by
// address, not by a port other than serve's, not by a name the targets
// file lacks (names are never looked up).
func TestProbeSteering(t *testing.T) {
	f := &fakeRun{}
	p := newTestProber(t, f, nil)
	for _, tc := range []struct {
		query string
		code  int
		dial  string
	}{
		{"target=198.51.100.5", 200, "198.51.100.5:9978"},
		{"target=198.51.100.6:9978", 200, "198.51.100.6:9978"},
		{"target=198.51.100.6:7000", 403, ""}, // not a --probe-ports port
		{"target=good.example", 403, ""},      // a name the targets file lacks
		{"target=far.example:9000", 200, "far.example:9000"},
		{"target=far.example", 403, ""}, // the file names port 9000 only
		{"target=evil.example", 403, ""},
		{"target=10.1.2.3", 403, ""},
		{"target=[::ffff:10.1.2.3]:9978", 403, ""},
		{"target=198.51.101.1", 403, ""},
		{"target=nowhere.example", 403, ""},
		{"target=", 400, ""},
		{"", 400, ""},
		{"target=198.51.100.5&target=10.1.2.3", 400, ""},
		{"target=198.51.100.5&duration=1h", 400, ""},
		{"target=198.51.100.5:0", 400, ""},
		{"target=a/b", 400, ""},
		{"target=" + strings.Repeat("a", 300), 400, ""},
	} {
		before := f.n.Load()
		w := get(p, tc.query)
		if w.Code != tc.code {
			t.Errorf("%q: code %d, want %d (%s)", tc.query, w.Code, tc.code, w.Body)
			continue
		}
		if tc.code != 200 {
			if f.n.Load() != before {
				t.Errorf("%q: refused but a probe ran", tc.query)
			}
			continue
		}
		f.mu.Lock()
		o := f.calls[len(f.calls)-1]
		f.mu.Unlock()
		if o.Addr != tc.dial {
			t.Errorf("%q dialled %s, want %s", tc.query, o.Addr, tc.dial)
		}
		// TLS with the pin the targets file gives; plain otherwise.
		if (o.TLS != nil) != strings.HasPrefix(tc.dial, "far.example") {
			t.Errorf("%q: TLS %v", tc.query, o.TLS != nil)
		}
	}
}

// The caps come from the flags whatever the query says, and the probe's
// deadline from --probe-timeout shortened by the scrape's timeout.
func TestProbeCaps(t *testing.T) {
	f := &fakeRun{}
	p := newTestProber(t, f, func(c *Config) {
		c.Phase, c.Timeout, c.MaxRateBps, c.MaxBytes, c.Streams = 3*time.Second, 30*time.Second, 50e6, 1<<20, 4
	})
	start := time.Now()
	get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", "12")
	get(p, "target=198.51.100.6", "X-Prometheus-Scrape-Timeout-Seconds", "1e9")
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.calls {
		if o.Duration != 3*time.Second || o.Streams != 4 || !o.Download || !o.Upload || len(o.CCs) != 0 {
			t.Errorf("probe %d asked %+v", i, o)
		}
		// The rate cap as the pace; the byte cap per phase, which the
		// client turns into a pace once it knows the phase's length
		// (ClientOptions.phaseRate: 1 MiB in 3 s is 2.8 Mbit/s).
		if o.RateBps != 50e6 || o.MaxPhaseBytes != 1<<20 || o.Rounds != DefaultRounds {
			t.Errorf("probe %d paced at %g, %d bytes a phase, %d rounds", i, o.RateBps, o.MaxPhaseBytes, o.Rounds)
		}
	}
	if d := f.dls[0].Sub(start); d > 12*time.Second-scrapeMargin+time.Second/10 || d < 11*time.Second {
		t.Errorf("deadline with a 12 s scrape timeout: %s", d)
	}
	if d := f.dls[1].Sub(start); d > 30*time.Second+time.Second/10 || d < 29*time.Second {
		t.Errorf("deadline with a huge scrape timeout: %s, want the 30 s cap", d)
	}
}

// One probe per target at a time, and results reused while young: many
// scrapes of one target run one test.
func TestProbeOnePerTargetAndReuse(t *testing.T) {
	f := &fakeRun{gate: make(chan struct{})}
	p := newTestProber(t, f, func(c *Config) { c.MinInterval = time.Minute })
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range bodies {
		wg.Go(func() { bodies[i] = get(p, "target=198.51.100.5").Body.String() })
	}
	for f.n.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the others join the running probe
	close(f.gate)
	wg.Wait()
	if n := f.n.Load(); n != 1 {
		t.Fatalf("8 concurrent scrapes of one target ran %d tests, want 1", n)
	}
	for _, b := range bodies {
		if !strings.Contains(b, `longhaul_probe_failure_info{reason="error"} 1`) {
			t.Errorf("a scrape did not get the probe's result:\n%s", b)
		}
	}
	b := get(p, "target=198.51.100.5").Body.String()
	if f.n.Load() != 1 || !strings.Contains(b, "longhaul_probe_result_age_seconds") || strings.Contains(b, "longhaul_probe_result_age_seconds 0\n") {
		t.Errorf("a scrape within --probe-min-interval ran a test or served age 0:\n%s", b)
	}
	// Past the interval, a new test.
	p.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	get(p, "target=198.51.100.5")
	if n := f.n.Load(); n != 2 {
		t.Errorf("after --probe-min-interval: %d tests, want 2", n)
	}
}

// At most --probe-concurrency probes at once: the next target is told
// the exporter is busy, at once.
func TestProbeConcurrency(t *testing.T) {
	f := &fakeRun{gate: make(chan struct{})}
	p := newTestProber(t, f, func(c *Config) { c.Concurrent = 2 })
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() { get(p, fmt.Sprintf("target=198.51.100.%d", i+1)) })
	}
	for f.n.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	b := get(p, "target=198.51.100.3").Body.String()
	if !strings.Contains(b, `reason="exporter-busy"`) || time.Since(start) > time.Second || f.n.Load() != 2 {
		t.Errorf("a third probe with two running: %d tests, after %s:\n%s", f.n.Load(), time.Since(start), b)
	}
	close(f.gate)
	wg.Wait()
}

// A target whose serve is busy is reported busy and not asked again
// for about a probe's length (no retry storm), even with
// --probe-min-interval 0.
func TestProbeBusyTarget(t *testing.T) {
	f := &fakeRun{err: fmt.Errorf("test: x: %w", &wire.RemoteError{Code: wire.CodeBusy, Message: "a test is running", RetryAfterS: 30})}
	p := newTestProber(t, f, nil) // no --probe-min-interval: the busy answer is kept anyway
	for range 5 {
		b := get(p, "target=198.51.100.5").Body.String()
		if !strings.Contains(b, "longhaul_probe_target_busy 1") || !strings.Contains(b, "longhaul_probe_success 0") {
			t.Fatalf("busy target:\n%s", b)
		}
	}
	if n := f.n.Load(); n != 1 {
		t.Errorf("5 scrapes of a busy target ran %d tests, want 1", n)
	}
}

// A probe that outlives the scrape's deadline answers timeout; the
// running test ends at its own deadline; goroutines and remembered
// targets stay bounded over many probes.
func TestProbeDeadlineAndBounds(t *testing.T) {
	f := &fakeRun{gate: make(chan struct{})} // never opened: every run waits for its deadline
	p := newTestProber(t, f, func(c *Config) { c.MinInterval = 0; c.Concurrent = 64 })
	start := time.Now()
	b := get(p, "target=198.51.100.5", "X-Prometheus-Scrape-Timeout-Seconds", "1.6").Body.String()
	if !strings.Contains(b, `reason="timeout"`) || time.Since(start) > 3*time.Second {
		t.Errorf("a stalled probe after %s:\n%s", time.Since(start), b)
	}
	for p.running.Load() > 0 { // the stalled test ends at its own deadline
		time.Sleep(10 * time.Millisecond)
	}
	g0 := runtime.NumGoroutine()
	f.gate = nil
	for i := range 1000 {
		get(p, fmt.Sprintf("target=198.51.100.%d", i%250+1))
	}
	time.Sleep(100 * time.Millisecond)
	if g := runtime.NumGoroutine(); g > g0+5 {
		t.Errorf("goroutines %d -> %d over 1000 probes", g0, g)
	}
	if n := len(p.entries); n > 251 {
		t.Errorf("%d targets remembered, want at most 251", n)
	}
}

func TestReadTargets(t *testing.T) {
	pin := "sha256:" + strings.Repeat("0f", 32)
	got, err := ReadTargets(strings.NewReader("# mesh\nfra.example\n\n  sin.example:7000 \n[2001:db8::1] " + pin + "\n"))
	want := []Target{{Addr: "fra.example:9978"}, {Addr: "sin.example:7000"}, {Addr: "[2001:db8::1]:9978", Pin: pin}}
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ReadTargets = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"ok.example\nbad/host\n", "ok.example\nx.example sha256:12\n", "ok.example\nx.example " + pin + " more\n"} {
		if _, err := ReadTargets(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Allowed: Allowed{Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}, Token: []byte("x")}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Allowed = Allowed{} }, "--probe-allow"},
		{func(c *Config) { c.Token = nil }, "--probe-auth"},
		{func(c *Config) { c.Phase = time.Second }, "--probe-phase"},
		{func(c *Config) { c.Rounds = -1 }, "--probe-rounds"},
		{func(c *Config) { c.Rounds = MaxRounds + 1 }, "--probe-rounds"},
		{func(c *Config) { c.Timeout = 5 * time.Second }, "--probe-timeout"},
		{func(c *Config) { c.Concurrent = 100 }, "--probe-concurrency"},
		{func(c *Config) { c.Allowed.Ports = make([]uint16, 65) }, "--probe-ports"},
		{func(c *Config) { c.Allowed.Ports = []uint16{9978, 0} }, "--probe-ports"},
	} {
		c := ok
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}

var _ http.Handler = (*Prober)(nil)

// ParseTarget takes whatever a query holds: it never panics, and what it
// accepts is a HOST:PORT it accepts again unchanged.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"198.51.100.5", "h.example:1", "[2001:db8::1]:9978", "[::1", "a:b:c", ":9978", "x:99999", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTarget(s)
		if err != nil {
			return
		}
		again, err := ParseTarget(got)
		if err != nil || again != got {
			t.Errorf("ParseTarget(%q) = %q, which parses to %q, %v", s, got, again, err)
		}
	})
}

// Every longhaul_probe_ metric the deployment files (rules, their tests,
// dashboards) use is one a probe answers with.
func TestDeployProbeNames(t *testing.T) {
	var have []string
	for _, d := range []*prometheus.Desc{descSuccess, descDuration, descAge, descBusy, descFailure, descRate, descRetrans, descRTT, descPathRate, descAfterPlan, descLimit} {
		have = append(have, strings.Split(d.String(), `"`)[1])
	}
	files, _ := filepath.Glob("../../deploy/*/*")
	used := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range regexp.MustCompile(`\blonghaul_probe_[a-z_]+\b`).FindAllString(string(b), -1) {
			used++
			if !slices.Contains(have, n) {
				t.Errorf("%s uses %s, which a probe does not answer with", f, n)
			}
		}
	}
	if used < 10 {
		t.Errorf("the deployment files use %d probe metrics: the glob found %v", used, files)
	}
}
