//go:build linux

package probe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// Prober runs probes for the exporter's /probe handler.
//
// A probe passes two stages. Connecting: dialled, its target not yet
// proved a longhaul serve (the hello, the token's proof both ways);
// bounded by connectingMax, perSourceMax per scraper, and DialTimeout
// plus HelloTimeout per probe. Testing: the target proved itself
// (ClientOptions.Admit) and the test runs; bounded by --probe-concurrency.
// So a few scrapes of targets that blackhole, or accept and stay silent,
// hold no test slot at all, and hold a connecting slot for seconds only:
// the slots real tests need stay free.
type Prober struct {
	cfg Config
	sem chan struct{} // testing: Config.Concurrent
	// after runs a deferred probe (deferred.go) later: time.AfterFunc;
	// tests replace it before the first probe.
	after      func(time.Duration, func())
	connecting chan struct{} // connecting: connectingMax
	now        func() time.Time

	mu       sync.Mutex
	entries  map[string]*entry    // by the address dialled (ParseTarget's form)
	bySource map[netip.Prefix]int // connecting probes by scraper

	running               atomic.Int64
	runs, cached, refused prometheus.Counter
	failed                *prometheus.CounterVec
}

// entry is one target's running probe and last result.
type entry struct {
	done chan struct{} // closed when the running probe ends; nil when none runs
	last *result
	used time.Time
	// took is how long the target's last judged test took, its waits
	// for a busy target left out (0: none yet): what a probe of it needs
	// (queue.go). A failure since does not reset it.
	took time.Duration
}

// New returns a Prober (cfg must pass Validate).
func New(cfg Config) *Prober {
	cfg = cfg.withDefaults()
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return &Prober{cfg: cfg, sem: make(chan struct{}, cfg.Concurrent), connecting: make(chan struct{}, cfg.connectingMax()),
		now: time.Now, entries: map[string]*entry{}, bySource: map[netip.Prefix]int{},
		after:   func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		runs:    counter("longhaul_exporter_probes_total", "Probes run (tests against a target's longhaul serve)."),
		cached:  counter("longhaul_exporter_probe_results_reused_total", "Probe requests answered with a target's last result (younger than --probe-min-interval, or the probe already running)."),
		refused: counter("longhaul_exporter_probes_refused_total", "Probe requests refused: target not allowed, a bad query, or the exporter's probe slots full (--probe-concurrency tests running, or probes connecting to targets that have not answered)."),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "longhaul_exporter_probes_failed_total",
			Help: "Probes that failed, by reason (busy, timeout, unreachable, refused, error)."}, []string{"reason"}),
	}
}

// SetLog sets where failed probes are logged (before the first probe).
func (p *Prober) SetLog(l *slog.Logger) {
	if l != nil {
		p.cfg.Log = l
	}
}

// Ports are the ports probes dial (--probe-ports and the targets file's):
// the serves' ports, so the sockets that have one at either end are test
// traffic (this exporter's probes, or probers testing a serve here), not
// the host's own flows.
func (p *Prober) Ports() []uint16 {
	ports := slices.Clone(p.cfg.Allowed.ports())
	for _, t := range p.cfg.Allowed.Targets {
		if _, port, err := net.SplitHostPort(t.Addr); err == nil {
			if n, err := strconv.ParseUint(port, 10, 16); err == nil && !slices.Contains(ports, uint16(n)) {
				ports = append(ports, uint16(n))
			}
		}
	}
	return ports
}

// Timeout is the most one probe takes.
func (p *Prober) Timeout() time.Duration { return p.cfg.Timeout }

// Describe and Collect make the Prober's own counters part of /metrics.
func (p *Prober) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(p, ch) }

func (p *Prober) Collect(ch chan<- prometheus.Metric) {
	for _, c := range []prometheus.Collector{p.runs, p.cached, p.refused, p.failed} {
		c.Collect(ch)
	}
	ch <- prometheus.MustNewConstMetric(descRunning, prometheus.GaugeValue, float64(p.running.Load()))
}

var descRunning = prometheus.NewDesc("longhaul_exporter_probes_running", "Probes running now.", nil, nil)

// ServeHTTP answers GET /probe?target=HOST[:PORT]: the target's last
// result when young enough, else a new probe's. A bad or disallowed
// target is a 400 or 403 (Prometheus shows the scrape failed); a probe
// that fails is a 200 with longhaul_probe_success 0 and why.
func (p *Prober) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for k := range q {
		if k != "target" {
			p.refused.Inc()
			http.Error(w, fmt.Sprintf("unknown parameter %q: /probe takes target=HOST[:PORT] only", k), http.StatusBadRequest)
			return
		}
	}
	target, err := ParseTarget(q.Get("target"))
	if err == nil && len(q["target"]) != 1 {
		err = errors.New("give target once")
	}
	if err != nil {
		p.refused.Inc()
		http.Error(w, fmt.Sprintf("bad target: %v", err), http.StatusBadRequest)
		return
	}
	dial, err := p.cfg.Allowed.resolve(target)
	if err != nil {
		p.refused.Inc()
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.deadline(r))
	defer cancel()
	res := p.result(ctx, dial, sourceOf(r.RemoteAddr))
	reg := prometheus.NewRegistry()
	reg.MustRegister(res)
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}

// deadline is how long a probe may take for this request.
func (p *Prober) deadline(r *http.Request) time.Duration {
	d := p.cfg.Timeout
	if s, err := strconv.ParseFloat(r.Header.Get("X-Prometheus-Scrape-Timeout-Seconds"), 64); err == nil && s > 0 {
		d = min(d, time.Duration(s*float64(time.Second))-scrapeMargin)
	}
	return max(d, time.Second)
}

// sourceOf is the scraper a request counts against: its address, or
// its /64 for IPv6 (one host's share of addresses).
func sourceOf(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	pfx, _ := a.Prefix(bits)
	return pfx
}

// result returns the target's last result if young enough, waits for
// its running probe, or starts one. Everything is keyed by the address
// dialled (dial.Addr, one form per target), never by the query's
// spelling.
func (p *Prober) result(ctx context.Context, dial Target, src netip.Prefix) *result {
	target := dial.Addr
	p.mu.Lock()
	e := p.entries[target]
	if e == nil {
		p.forgetOldest()
		e = &entry{}
		p.entries[target] = e
	}
	now := p.now()
	e.used = now
	if e.last != nil && (now.Before(e.last.until) || e.last.unseen) && e.done == nil {
		res := e.last.aged(now)
		e.last.unseen = false
		p.mu.Unlock()
		p.cached.Inc()
		return res
	}
	if e.done == nil {
		st, err := p.enter(src)
		if err != nil {
			p.mu.Unlock()
			p.refused.Inc()
			return &result{at: now, reason: reasonExporterBusy, err: err}
		}
		// The probe keeps the request's deadline (ServeHTTP sets one)
		// but not its cancellation: a scraper that gives up does not
		// waste the test, whose result the next scrape gets.
		deadline, _ := ctx.Deadline()
		pctx, cancel := context.WithDeadline(context.Background(), deadline)
		p.start(pctx, cancel, e, dial, st, 0)
	} else {
		p.cached.Inc()
	}
	done := e.done
	p.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return &result{at: p.now(), reason: reasonTimeout, err: errors.New("the target's probe did not end before this scrape's deadline")}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return e.last.aged(p.now())
}

// start runs a probe of dial for entry e (p.mu held, st entered) in
// the background: the result becomes e's last. deferred counts the
// tests this one follows that the target answered busy (deferred.go).
func (p *Prober) start(ctx context.Context, cancel context.CancelFunc, e *entry, dial Target, st *stage, deferred int) {
	e.done = make(chan struct{})
	p.running.Add(1)
	p.runs.Inc()
	go func(done chan struct{}) {
		defer cancel()
		res := p.probe(ctx, dial, st)
		if res.reason != "" {
			p.failed.WithLabelValues(res.reason).Inc()
			p.cfg.Log.Info("probe failed", "target", dial.Addr, "reason", res.reason, "err", res.err)
		}
		res.unseen = deferred > 0 && res.reason != reasonBusy
		p.mu.Lock()
		e.last, e.done = res, nil
		if res.doc != nil {
			e.took = res.took - res.waited
		}
		p.mu.Unlock()
		p.running.Add(-1)
		close(done)
		p.later(dial, res, deferred+1)
	}(e.done)
}

// errSlots: the exporter runs as many probes as it may (exporter-busy).
var errSlots = errors.New("the exporter is running as many probes as it may")

// stage is where a probe stands: connecting (its target not yet proved
// a serve) or testing (it holds one of the Concurrent slots).
type stage struct {
	p          *Prober
	src        netip.Prefix
	connecting bool
	testing    bool
}

// enter admits a new probe to the connecting stage (p.mu held). A full
// testing stage refuses at once too: no dial for a test that could not
// run.
func (p *Prober) enter(src netip.Prefix) (*stage, error) {
	switch {
	case len(p.sem) == cap(p.sem):
		return nil, fmt.Errorf("%w: %d probes are running (--probe-concurrency)", errSlots, p.cfg.Concurrent)
	case p.bySource[src] >= p.cfg.perSourceMax():
		return nil, fmt.Errorf("%w: this scraper has %d probes connecting to targets that have not answered yet", errSlots, p.bySource[src])
	}
	select {
	case p.connecting <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: %d probes are connecting to targets that have not answered yet", errSlots, cap(p.connecting))
	}
	p.bySource[src]++
	return &stage{p: p, src: src, connecting: true}, nil
}

// admit is the probe's ClientOptions.Admit: its target proved it is a
// serve holding the token, so the probe may take a testing slot (none
// free: exporter-busy, and the serve's connection is closed before its
// test starts).
func (s *stage) admit() error {
	if s.testing {
		return nil
	}
	select {
	case s.p.sem <- struct{}{}:
	default:
		return fmt.Errorf("%w: %d probes are running (--probe-concurrency)", errSlots, s.p.cfg.Concurrent)
	}
	s.testing = true
	s.leaveConnecting()
	return nil
}

func (s *stage) leaveConnecting() {
	if !s.connecting {
		return
	}
	s.connecting = false
	<-s.p.connecting
	s.p.mu.Lock()
	if s.p.bySource[s.src]--; s.p.bySource[s.src] <= 0 {
		delete(s.p.bySource, s.src)
	}
	s.p.mu.Unlock()
}

func (s *stage) release() {
	s.leaveConnecting()
	if s.testing {
		s.testing = false
		<-s.p.sem
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// forgetOldest makes room for a new target (p.mu held).
func (p *Prober) forgetOldest() {
	if len(p.entries) < maxEntries {
		return
	}
	var oldest string
	var at time.Time
	for k, e := range p.entries {
		if e.done == nil && (oldest == "" || e.used.Before(at)) {
			oldest, at = k, e.used
		}
	}
	delete(p.entries, oldest)
}

// probe runs one test against dial and judges it.
func (p *Prober) probe(ctx context.Context, dial Target, st *stage) *result {
	start := p.now()
	var cfg *tls.Config
	if dial.Pin != "" {
		cfg, _ = secret.ClientTLS(dial.Pin) // checked when the targets file was read
	}
	o := twohost.ClientOptions{Addr: dial.Addr, TLS: cfg, Token: p.cfg.Token, Netns: p.cfg.Netns, Download: true, Upload: true,
		Streams: p.cfg.Streams, Duration: p.cfg.Phase, Rounds: p.cfg.Rounds, RateBps: p.cfg.MaxRateBps, MaxPhaseBytes: p.cfg.MaxBytes,
		DialTimeout: DialTimeout, HelloTimeout: HelloTimeout, Admit: st.admit}
	raw, waited, err := p.runQueued(ctx, o, st)
	admitted := st.testing
	st.release()
	var doc *testdoc.Doc
	if err == nil {
		doc, err = judge.Judge(raw, judge.JudgeOptions{})
	}
	end := p.now()
	res := &result{at: end, until: end.Add(p.cfg.MinInterval), took: end.Sub(start), doc: doc, err: err}
	res.waited = waited
	var re *wire.RemoteError
	switch {
	case errors.As(err, &re) && re.Code == wire.CodeBusy:
		// Busy for about a probe's length, not the far serve's
		// retry-after (see probeLen).
		res.until = end.Add(p.cfg.probeLen())
	case errors.Is(err, errSlots):
		res.until = end // the exporter's state, not the target's: not kept
	case err != nil && !admitted:
		res.until = maxTime(res.until, end.Add(p.cfg.probeLen()))
	}
	if err != nil && ctx.Err() != nil {
		res.err = fmt.Errorf("the probe's deadline passed (%s): %w", res.took.Round(time.Millisecond), err)
	}
	if err != nil {
		res.doc = nil
		res.reason = reasonOf(ctx, err)
	}
	return res
}

// Failure reasons: bounded label values.
const (
	reasonBusy         = "busy"
	reasonExporterBusy = "exporter-busy"
	reasonTimeout      = "timeout"
	reasonUnreachable  = "unreachable"
	reasonRefused      = "refused"
	reasonReset        = "reset"
	reasonError        = "error"
)

func reasonOf(ctx context.Context, err error) string {
	var re *wire.RemoteError
	var op *net.OpError
	switch {
	case errors.As(err, &re) && re.Code == wire.CodeBusy:
		return reasonBusy
	case errors.Is(err, errSlots):
		return reasonExporterBusy
	case errors.As(err, &re):
		return reasonRefused
	case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded):
		return reasonTimeout
	case errors.Is(err, syscall.ECONNRESET):
		return reasonReset
	case errors.As(err, &op) && op.Op == "dial", errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH):
		return reasonUnreachable
	}
	return reasonError
}

// Caps says in one line what a probe may do, for the log.
func (p *Prober) Caps() string {
	c := p.cfg
	length := fmt.Sprintf("%d round trips (at least %s)", c.Rounds, twohost.MinPhase)
	if c.Phase > 0 {
		length = c.Phase.String()
	}
	s := fmt.Sprintf("%d phases of %s, timeout %s, %d at once, results reused for %s, serve ports %s", c.phases(), length, c.Timeout, c.Concurrent, c.MinInterval, portList(c.Allowed.ports()))
	if r := c.MaxRateBps; r > 0 {
		s += ", paced at most " + units.FormatRate(r)
	}
	if c.MaxBytes > 0 {
		s += ", at most " + units.FormatBytes(float64(c.MaxBytes)) + " a phase"
	}
	return s
}
