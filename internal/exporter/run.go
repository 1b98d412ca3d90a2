//go:build linux

package exporter

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/probe"
	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// Options run the exporter.
type Options struct {
	Config
	Listen   string        // address of the HTTP server (":9979")
	Interval time.Duration // between sock_diag dumps
	Netns    string        // namespace whose sockets to read ("": own)
	Web      Web
	// Paths are the peer groups' paths the audit judges buffers against.
	Paths []PeerPath
	// Probe, if set, serves /probe?target=HOST[:PORT]: a test against
	// that host's longhaul serve (package probe).
	Probe *probe.Prober
	// PerSource is how many connections one address may hold (0: 4, or
	// ProbeSourceConns with Probe).
	PerSource int
	Version   string // longhaul's version for longhaul_build_info ("": the module's)
	Log       *slog.Logger
	// Ready, if set, is called with the listening address once the
	// server accepts connections.
	Ready func(addr net.Addr)
}

// hostEvery is how often the host's settings are gathered again.
const hostEvery = 5 * time.Minute

// The HTTP server's limits: the exporter is written as if exposed.
const (
	readHeaderTimeout = 5 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 8 << 10
	maxInFlight       = 4
	scrapeTimeout     = 10 * time.Second
)

// Run serves the metrics until ctx ends.
func Run(ctx context.Context, opt Options) error {
	if opt.Probe != nil {
		opt.Probe.SetLog(opt.Log)
	}
	if opt.Probe != nil {
		opt.Config.TestPorts = append(slices.Clone(opt.Config.TestPorts), opt.Probe.Ports()...)
	}
	t := NewTracker(opt.Config)
	c := NewCollector(t)
	if opt.Version != "" {
		c.build[0] = opt.Version
	}
	// The token and TLS files first: a bad one is the user's to fix
	// (exit 2), whatever else could fail.
	srv, err := newServer(c, opt.Probe, opt.Web, opt.Log)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	d, err := flows.OpenRaw(opt.Netns)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	defer d.Close()
	ln, err := net.Listen("tcp", opt.Listen)
	if err != nil {
		return fmt.Errorf("exporter: %w", err)
	}
	// The scheme is decided before Serve runs: Serve sets a TLSConfig of
	// its own (for HTTP/2) on a plain server (a data race, and "https" in
	// the log line of a plain port).
	scheme := "http://"
	if srv.TLSConfig != nil {
		scheme = "https://"
	}
	per := opt.PerSource
	if per == 0 && opt.Probe != nil {
		per = ProbeSourceConns
	}
	guard := newGuardListener(ln, connlimit.New(connLimits(per).FitFDs(connlimit.FDBudget(), 32)), srv.ReadHeaderTimeout, opt.Log)
	srv.ConnState = guard.connState
	ln = guard
	if srv.TLSConfig != nil {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var wg sync.WaitGroup // the goroutines using d and dl end before they close
	if dl, err := flows.ListenDestroy(opt.Netns); err != nil {
		opt.Log.Warn("sockets that close between two samples lose their last interval", "err", err)
	} else {
		wg.Go(func() { listenDestroy(ctx, dl, t, opt.Log) })
	}
	wg.Go(func() { gatherHost(ctx, opt.Netns, opt.Paths, c, opt.Log) })
	wg.Go(func() { sample(ctx, d, t, opt.Interval, opt.Log) })
	opt.Log.Info("serving metrics", "url", scheme+ln.Addr().String()+"/metrics", "interval", opt.Interval,
		"token", opt.Web.TokenFile != "")
	if opt.Probe != nil {
		opt.Log.Info("serving probes", "url", scheme+ln.Addr().String()+"/probe?target=HOST[:PORT]", "caps", opt.Probe.Caps())
	}
	if opt.Ready != nil {
		opt.Ready(ln.Addr())
	}
	select {
	case err = <-errc:
		err = fmt.Errorf("exporter: serve: %w", err)
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		err = nil
	}
	cancel()
	wg.Wait()
	return err
}

func newServer(c *Collector, p *probe.Prober, web Web, log *slog.Logger) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	index := "longhaul exporter: metrics at /metrics"
	wt := writeTimeout
	if p != nil {
		reg.MustRegister(p)
		mux.Handle("GET /probe", p)
		index += ", probes at /probe?target=HOST[:PORT]"
		wt = max(wt, p.Timeout()+5*time.Second) // a probe's answer comes when its test ends
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		MaxRequestsInFlight: maxInFlight, Timeout: scrapeTimeout, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, index)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readHeaderTimeout,
		WriteTimeout: wt, IdleTimeout: idleTimeout, MaxHeaderBytes: maxHeaderBytes,
		// Failed handshakes and bad requests from whoever reaches the
		// port are not worth a line each.
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	if web.TokenFile != "" {
		tok, err := secret.ReadToken(web.TokenFile)
		if err != nil {
			return nil, err // package secret marks what is the user's to fix
		}
		srv.Handler = requireToken(string(tok), mux)
	}
	if web.CertFile != "" || web.KeyFile != "" {
		cfg, _, err := secret.ServerTLS(web.CertFile, web.KeyFile)
		if err != nil {
			return nil, err // package secret marks what is the user's to fix
		}
		srv.TLSConfig = cfg
	}
	return srv, nil
}

// listenDestroy folds the final counters of closing sockets.
func listenDestroy(ctx context.Context, l *flows.DestroyListener, t *Tracker, log *slog.Logger) {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		socks, err := l.Read()
		if errors.Is(err, flows.ErrOverrun) {
			t.Overrun()
			continue
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("destroy notifications stopped", "err", err)
			}
			return
		}
		now := time.Now()
		for _, s := range socks {
			t.Closed(now, s)
		}
	}
}

// gatherHost reads the host's settings now and every hostEvery.
func gatherHost(ctx context.Context, ns string, paths []PeerPath, c *Collector, log *slog.Logger) {
	for {
		if h, err := HostOf(ns, paths); err != nil {
			log.Warn("host settings not gathered", "err", err)
		} else {
			c.SetHost(h)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(hostEvery):
		}
	}
}

// HostOf gathers the host's (or namespace's) settings and judges them,
// against each peer path too.
func HostOf(ns string, paths []PeerPath) (Host, error) {
	snap, err := snapshot.Gather(snapshot.Options{Netns: ns})
	if err != nil {
		return Host{}, err
	}
	return HostFrom(snap, paths), nil
}
