//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Spellings of one target are one target: one probe at a time, one
// result reused, for an address of a prefix and a name of the targets
// file alike (each spelling used to start a test of its own).
func TestProbeIdentityIsTheAddressDialled(t *testing.T) {
	f := &fakeRun{gate: make(chan struct{})}
	p := newTestProber(t, f, func(c *Config) {
		c.MinInterval = time.Minute
		c.Allowed.Prefixes = append(c.Allowed.Prefixes, netip.MustParsePrefix("127.0.0.0/8"))
	})
	for _, tc := range []struct {
		dial      string
		spellings []string
	}{
		{"127.0.0.1:9978", []string{"127.0.0.1", "127.0.0.1:09978", "[::ffff:7f00:1]:9978", "[::FFFF:127.0.0.1]", "127.0.0.1:9978", "[::ffff:127.0.0.1]:0009978"}},
		{"far.example:9000", []string{"far.example:9000", "FAR.example:9000", "far.example.:9000", "Far.Example:09000"}},
	} {
		before := f.n.Load()
		var wg sync.WaitGroup
		codes := make([]int, len(tc.spellings))
		for i, s := range tc.spellings {
			wg.Go(func() { codes[i] = get(p, "target="+s).Code })
		}
		waitFor(t, "the first probe", func() bool { return f.n.Load() > before })
		time.Sleep(50 * time.Millisecond) // the other spellings join the running probe
		f.gate <- struct{}{}
		wg.Wait()
		for _, s := range tc.spellings { // and reuse its result
			if c := get(p, "target="+s).Code; c != 200 {
				t.Errorf("%s answered %d", s, c)
			}
		}
		if n := f.n.Load() - before; n != 1 || fmt.Sprint(codes) != fmt.Sprint(slicesOf(200, len(codes))) {
			t.Errorf("%d spellings of %s: %d tests (want 1), codes %v", len(tc.spellings), tc.dial, n, codes)
		}
		f.mu.Lock()
		if o := f.calls[len(f.calls)-1]; o.Addr != tc.dial || (o.TLS != nil) != (tc.dial == "far.example:9000") {
			t.Errorf("dialled %s (TLS %v), want %s", o.Addr, o.TLS != nil, tc.dial)
		}
		f.mu.Unlock()
	}
}

// waitFor waits up to 10 s for cond (a goroutine's step): a test that
// fails must not hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within 10 s", what)
		}
	}
}

func slicesOf(v, n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// A busy answer is served again for about a probe's length, not for the
// far serve's retry-after (114 s once made a path read busy for 114 s).
func TestProbeBusyKeptForAProbesLength(t *testing.T) {
	f := &fakeRun{err: fmt.Errorf("test: x: %w", &wire.RemoteError{Code: wire.CodeBusy, Message: "a test is running", RetryAfterS: 114})}
	p := newTestProber(t, f, func(c *Config) { c.MinInterval = 0 })
	if b := get(p, "target=198.51.100.5").Body.String(); !strings.Contains(b, "longhaul_probe_target_busy 1") {
		t.Fatalf("busy target:\n%s", b)
	}
	// 3 phases of 2 s and the handshakes: well under 30 s.
	p.now = func() time.Time { return time.Now().Add(30 * time.Second) }
	get(p, "target=198.51.100.5")
	if n := f.n.Load(); n != 2 {
		t.Errorf("30 s after a busy answer with retry-after 114 s: %d tests, want 2 (asked again)", n)
	}
}

// stallRun is a Run whose targets in stall accept and never answer (no
// hello: the probe is never admitted) until release is closed; the
// others are serves that admit the probe and fail its test at once.
type stallRun struct {
	stall   func(addr string) bool
	release chan struct{}
	stalled atomic.Int64 // runs stalling now
	runs    atomic.Int64
	hello   atomic.Int64 // the largest HelloTimeout asked, ns
}

func (s *stallRun) run(ctx context.Context, o twohost.ClientOptions) (*judge.Raw, error) {
	s.runs.Add(1)
	if h := int64(o.HelloTimeout + o.DialTimeout); h > s.hello.Load() {
		s.hello.Store(h)
	}
	if s.stall(o.Addr) {
		s.stalled.Add(1)
		defer s.stalled.Add(-1)
		select {
		case <-s.release:
		case <-ctx.Done():
		}
		return nil, fmt.Errorf("test: %s sent no longhaul hello: %w", o.Addr, context.DeadlineExceeded)
	}
	if o.Admit != nil {
		if err := o.Admit(); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("fake: no test")
}

func getFrom(p *Prober, from, query string) string {
	r := httptest.NewRequest("GET", "/probe?"+query, nil)
	r.RemoteAddr = from
	w := httptest.NewRecorder()
	p.ServeHTTP(w, r)
	return w.Body.String()
}

// Scrapes of targets that accept and never answer hold no test slot:
// with --probe-concurrency of them stalling, a real target's probe runs
// (it was exporter-busy until the stalls' deadline). One scraper can
// fill only its share of the connecting stage; a stalled target is not
// dialled again at once; and the connection's hello deadline is seconds.
func TestProbeStalledTargetsHoldNoSlots(t *testing.T) {
	s := &stallRun{release: make(chan struct{}), stall: func(a string) bool { return a != "198.51.100.5:9978" }}
	p := newTestProber(t, nil, func(c *Config) { c.Run = s.run; c.MinInterval = 0 })
	var wg sync.WaitGroup
	defer func() {
		close(s.release)
		wg.Wait()
	}()
	for i := range p.cfg.Concurrent {
		wg.Go(func() { getFrom(p, "192.0.2.1:1000", fmt.Sprintf("target=198.51.100.%d", 100+i)) })
	}
	waitFor(t, "the stalls", func() bool { return s.stalled.Load() >= int64(p.cfg.Concurrent) })
	if b := getFrom(p, "192.0.2.1:1000", "target=198.51.100.5"); !strings.Contains(b, `longhaul_probe_failure_info{reason="error"} 1`) {
		t.Errorf("a serve's probe with %d stalled targets:\n%s", p.cfg.Concurrent, b)
	}
	if h := time.Duration(s.hello.Load()); h <= 0 || h > 10*time.Second {
		t.Errorf("a probe's dial and hello may take %s, want a few seconds", h)
	}

	// One scraper fills at most its share of the connecting stage.
	for i := p.cfg.Concurrent; i < 50; i++ {
		wg.Go(func() { getFrom(p, "192.0.2.1:1000", fmt.Sprintf("target=198.51.100.%d", 100+i)) })
	}
	waitFor(t, "the scraper's share", func() bool { return s.runs.Load() >= int64(p.cfg.perSourceMax())+1 })
	time.Sleep(100 * time.Millisecond) // the rest are refused
	if n := s.stalled.Load(); n != int64(p.cfg.perSourceMax()) {
		t.Errorf("one scraper has %d probes stalling, want its share %d", n, p.cfg.perSourceMax())
	}
	if b := getFrom(p, "[2001:db8::1]:1000", "target=198.51.100.5"); !strings.Contains(b, `reason="error"`) {
		t.Errorf("another scraper's probe:\n%s", b)
	}
}

// A target that stalled is not dialled again at once, even with
// --probe-min-interval 0: a few scrapes cannot keep it connecting.
func TestProbeStalledTargetNotRedialled(t *testing.T) {
	s := &stallRun{release: make(chan struct{}), stall: func(string) bool { return true }}
	p := newTestProber(t, nil, func(c *Config) { c.Run = s.run; c.MinInterval = 0 })
	for range 3 {
		get(p, "target=198.51.100.60", "X-Prometheus-Scrape-Timeout-Seconds", "1.1")
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("3 scrapes of a stalled target dialled it %d times, want 1", n)
	}
}

// The real handshake gives up on a host that accepts and stays silent
// after the probe's hello deadline, not the 10 s of longhaul test.
func TestProbeSilentHostHelloDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	p := newTestProber(t, &fakeRun{}, func(c *Config) {
		c.Run = nil // twohost.Run
		c.Allowed.Targets = []Target{{Addr: ln.Addr().String()}}
	})
	start := time.Now()
	b := get(p, "target="+ln.Addr().String()).Body.String()
	took := time.Since(start)
	if !strings.Contains(b, `reason="timeout"`) || took > 8*time.Second {
		t.Errorf("a silent host answered after %s (want the probe's hello deadline, a few seconds):\n%s", took.Round(time.Millisecond), b)
	}
}

// /probe is no port scanner: a port that is not a serve port is refused
// before any dial, the same answer whatever listens there.
func TestProbeOnlyServePorts(t *testing.T) {
	f := &fakeRun{}
	p := newTestProber(t, f, nil)
	var bodies []string
	for _, port := range []int{22, 80, 7000, 9979} {
		w := get(p, fmt.Sprintf("target=198.51.100.5:%d", port))
		if w.Code != 403 {
			t.Errorf("port %d: %d", port, w.Code)
		}
		bodies = append(bodies, strings.ReplaceAll(w.Body.String(), fmt.Sprint(port), "N"))
	}
	if n := f.n.Load(); n != 0 {
		t.Errorf("probes of non-serve ports dialled %d times", n)
	}
	for _, b := range bodies[1:] {
		if b != bodies[0] {
			t.Errorf("answers differ by port: %q, %q", bodies[0], b)
		}
	}

	// --probe-ports names the serve ports; the targets file's lines
	// keep theirs.
	p = newTestProber(t, f, func(c *Config) { c.Allowed.Ports = []uint16{7000, 7001} })
	for q, code := range map[string]int{"198.51.100.6:7000": 200, "198.51.100.6:07001": 200, "198.51.100.6": 403, "far.example:9000": 200} {
		if w := get(p, "target="+q); w.Code != code {
			t.Errorf("--probe-ports 7000,7001: %s answered %d, want %d", q, w.Code, code)
		}
	}
}

// A --probe-allow that covers most of a family is refused at start.
func TestProbeAllowTooWide(t *testing.T) {
	for _, s := range []string{"0.0.0.0/0", "::/0", "0.0.0.0/1", "128.0.0.0/4", "2000::/3", "::ffff:0.0.0.0/96", "::ffff:198.51.100.0/120"} {
		c := Config{Allowed: Allowed{Prefixes: []netip.Prefix{netip.MustParsePrefix(s).Masked()}}, Token: []byte("x")}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "--probe-allow") || strings.Contains(err.Error(), "\n") {
			t.Errorf("--probe-allow %s: %v", s, err)
		}
	}
	for _, s := range []string{"10.0.0.0/8", "198.18.0.0/15", "2001:db8::/32"} {
		c := Config{Allowed: Allowed{Prefixes: []netip.Prefix{netip.MustParsePrefix(s)}}, Token: []byte("x")}
		if err := c.Validate(); err != nil {
			t.Errorf("--probe-allow %s: %v", s, err)
		}
	}
}

// Two lines of one target are refused, whichever comes first: a plain
// line used to win over a pinned one (the probe ran without TLS).
func TestReadTargetsDuplicates(t *testing.T) {
	pin := "sha256:" + strings.Repeat("0f", 32)
	for _, in := range []string{
		"198.51.100.5 " + pin + "\n# x\n[::ffff:198.51.100.5]:9978\n",
		"far.example:9978\n\nFAR.example. " + pin + "\n",
	} {
		_, err := ReadTargets(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), "lines 1 and 3") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// A query's name is never looked up: names are probed only as the
// targets file names them (a scraper made the exporter query DNS for
// any name). localhost resolves to 127.0.0.1 (allowed here) without
// DNS; good.example did in the tests' resolver.
func TestProbeQueryNamesNotResolved(t *testing.T) {
	f := &fakeRun{}
	p := newTestProber(t, f, func(c *Config) {
		c.Allowed.Prefixes = append(c.Allowed.Prefixes, netip.MustParsePrefix("127.0.0.0/8"))
	})
	for _, q := range []string{"localhost", "good.example", "127.1", "0x7f000001", "127.000.000.001"} {
		if w := get(p, "target="+q); w.Code/100 != 4 {
			t.Errorf("%s: %d %s", q, w.Code, w.Body)
		}
	}
	if n := f.n.Load(); n != 0 {
		t.Errorf("names not in the targets file: %d probes", n)
	}
}

// TestProberPorts: the ports the exporter leaves out of the host's flows
// are those probes dial, --probe-ports' and the targets file's.
func TestProberPorts(t *testing.T) {
	p := New(Config{Allowed: Allowed{Ports: []uint16{9978, 7001},
		Targets: []Target{{Addr: "sin.example.net:7002"}, {Addr: "198.51.100.9:9978"}}}, Token: []byte("t")})
	if got, want := p.Ports(), []uint16{9978, 7001, 7002}; !slices.Equal(got, want) {
		t.Errorf("Ports() = %v, want %v", got, want)
	}
	if got := New(Config{Allowed: Allowed{Targets: []Target{{Addr: "a.example:9978"}}}, Token: []byte("t")}).Ports(); !slices.Equal(got, []uint16{9978}) {
		t.Errorf("default: Ports() = %v, want [9978]", got)
	}
}
