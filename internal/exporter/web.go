package exporter

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
)

// Web is how the metrics server is reached: a bearer token checked before
// any work, TLS, and a cap on open connections.
type Web struct {
	TokenFile         string // file holding the token scrapers must send (Authorization: Bearer ...)
	CertFile, KeyFile string // PEM certificate and key: serve HTTPS (TLS 1.3)
}

// limits are the exporter's connection limits: scrapers hold one
// keep-alive connection each, a Prometheus pair two.
var limits = connlimit.Config{PerSource: 4, Start: 16, Full: 64}

// ProbeSourceConns is how many connections one source may hold when
// /probe is served: Prometheus scrapes each probe target over its own
// connection, all from its one address.
const ProbeSourceConns = 64

// connLimits are the limits for a server with perSource connections per
// source (0: limits'): the totals grow with it.
func connLimits(perSource int) connlimit.Config {
	c := limits
	if perSource > 0 {
		c.PerSource = perSource
		c.Start = max(c.Start, 2*perSource)
		c.Full = max(c.Full, 4*perSource)
	}
	return c
}

// requireToken answers 401 to requests without the token, before any
// other work. Comparing hashes keeps the comparison constant-time
// whatever the length sent.
func requireToken(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte("Bearer " + token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := sha256.Sum256([]byte(r.Header.Get("Authorization")))
		if subtle.ConstantTimeCompare(want[:], got[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="longhaul"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardListener admits connections through a connlimit.Limiter: a few
// per source, a bounded number in all; a refused connection is closed at
// once (never left waiting in the backlog, where 16 idle keep-alives
// used to block every scrape). When the server (or the source's network)
// is full, a connection is closed to make room: first the oldest that
// has not sent a request after the limiter's grace (a scraper sends its
// request at once; silent connections from 80 addresses used to fail 7
// scrapes of 10), else the longest-idle keep-alive: an idle connection
// costs its scraper one reconnect, a refused one costs a scrape.
type guardListener struct {
	net.Listener
	lim *connlimit.Limiter
	log *slog.Logger
	// silent is how long a connection must have stayed without a
	// request to penalize its source: the server's header timeout, which
	// closes it. A connection its client closes unused sooner (an HTTP
	// client's spare dial, which lost the race to an idle keep-alive, as
	// Prometheus's do when it scrapes many probe targets at once) held
	// nothing for long and is not a fault.
	silent time.Duration
}

func newGuardListener(l net.Listener, lim *connlimit.Limiter, silent time.Duration, log *slog.Logger) *guardListener {
	return &guardListener{Listener: l, lim: lim, log: log, silent: silent}
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err // http.Server backs off on temporary errors (EMFILE)
		}
		a := netip.IPv4Unspecified()
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			a = ta.AddrPort().Addr().Unmap()
		}
		t, why := l.lim.Admit(a) // when full, the limiter closes a silent connection or an idle keep-alive for it
		if t == nil {
			l.lim.Refused(l.log, a, why.Reason)
			c.Close()
			continue
		}
		// Until its first request (StateActive), which ends this.
		t.Unproven(func() { c.Close() })
		return &guardConn{Conn: c, l: l, ticket: t, opened: time.Now()}, nil
	}
}

// connState is the http.Server's ConnState hook: it tracks keep-alive
// connections and which connections ever made a request.
func (l *guardListener) connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	g, ok := c.(*guardConn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		g.active.Store(true)
		if !g.ticket.Active() {
			g.Conn.Close() // dropped to make room as it woke
		}
	case http.StateIdle:
		// A keep-alive between two scrapes: the limiter may close it to
		// make room for a new connection (its slot goes to that one).
		g.ticket.Idle(func() { g.Conn.Close() })
	}
}

// guardConn gives its slot back when closed; a connection that made no
// request while the server waited for one (a silent or half-open one, a
// TLS handshake that never ended) penalizes its source.
type guardConn struct {
	net.Conn
	l      *guardListener
	ticket *connlimit.Ticket
	active atomic.Bool
	opened time.Time
}

func (c *guardConn) Close() error {
	err := c.Conn.Close()
	c.ticket.Done(!c.active.Load() && time.Since(c.opened) >= c.l.silent)
	return err
}
