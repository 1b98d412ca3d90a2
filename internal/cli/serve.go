//go:build linux && !longhaul_portable

package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
)

type serveArgs struct {
	listen, auth, tlsCert, tlsKey, netns string
	maxDuration, handshake, idle         units.Duration
	maxBytes                             units.Size
	maxRate                              units.Rate
	maxClients, maxStreams               int
	allow                                []string
	logJSON, noUDP                       bool
}

func newServeCmd() *cobra.Command {
	var a serveArgs
	c := &cobra.Command{
		Use:   "serve --auth TOKEN-FILE [flags]",
		Short: "The far end of longhaul test: answer authenticated tests on one TCP port",
		Long: `serve answers longhaul test from another host: both ends exchange their
settings, move data in each direction, sample tcp_info every 100 ms, and
the client explains which host and which setting limits the path.

One TCP port (default 9978) carries control and data; every connection
is opened by the client, so a client can never point the server at a
third party, and nothing a client sends makes the server open a
connection, read a file or run a command. Every connection authenticates
first: HMAC-SHA256 with the pre-shared token over a fresh nonce (a
replayed handshake fails); --tls-cert/--tls-key add TLS 1.3 (the client
pins the key fingerprint printed at start). The server enforces its caps
whatever the client asks: --max-duration and --max-bytes per test,
--max-rate (paced in the kernel), --max-clients tests at a time (1 by
default: tests sharing this host's link would measure each other) and
one per client address ("busy, retry after N s", N when the running test
expects to end), and timeouts on every read. Every test is logged (slog, key=value or --log-json) on stderr.

The same port number in UDP answers the datagram run of test's loss
probes (datagrams paced above the path's ceiling, to tell a queue from a
policer): only the hello of a run an authenticated session was granted,
from that session's host, gets datagrams, at the session's caps;
anything else gets nothing back. --no-udp turns it off.

Make a token with: head -c 32 /dev/urandom | base64 > token; chmod 600 token.
deploy/longhaul-serve.service is a systemd unit.`,
		Example: `  longhaul serve --auth /etc/longhaul/token
  longhaul serve --auth token --listen 203.0.113.7:9978 --allow 198.51.100.0/24 --max-rate 1Gbit/s
  longhaul serve --auth token --tls-cert cert.pem --tls-key key.pem`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runServe(c.Context(), a, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&a.listen, "listen", ":"+strconv.Itoa(wire.DefaultPort), "address and port to listen on (control and data)")
	f.StringVar(&a.auth, "auth", "", "file holding the pre-shared token (at least 16 bytes; required)")
	f.StringVar(&a.tlsCert, "tls-cert", "", "TLS certificate (PEM): serve TLS 1.3 only")
	f.StringVar(&a.tlsKey, "tls-key", "", "TLS private key (PEM), with --tls-cert")
	a.maxDuration = units.Duration{D: server.DefaultMaxDuration, Min: time.Second, Max: 24 * time.Hour}
	f.Var(&a.maxDuration, "max-duration", "longest test, all phases together (1s..24h)")
	a.maxBytes = units.Size{N: server.DefaultMaxBytes, Min: 1 << 20}
	f.Var(&a.maxBytes, "max-bytes", "most bytes one test may move, both directions together")
	a.maxRate = units.Rate{Min: 1e5, Max: 1e12}
	f.Var(&a.maxRate, "max-rate", "most bits/s a test may send or receive (default unlimited)")
	f.IntVar(&a.maxClients, "max-clients", server.DefaultMaxClients, "tests at a time (each client address runs one at a time); more than 1 makes concurrent tests share this host's link and skew each other's rates")
	f.IntVar(&a.maxStreams, "max-streams", 16, "most parallel streams of a test's capacity phase")
	f.StringArrayVar(&a.allow, "allow", nil, "only accept clients in this prefix (repeatable), e.g. 198.51.100.0/24")
	a.handshake = units.Duration{D: server.DefaultHandshakeTimeout, Min: 100 * time.Millisecond, Max: time.Minute}
	f.Var(&a.handshake, "handshake-timeout", "drop a connection that has not authenticated, or not started its test, within this")
	a.idle = units.Duration{D: server.DefaultIdleTimeout, Min: 100 * time.Millisecond, Max: time.Hour}
	f.Var(&a.idle, "idle-timeout", "drop a client that sends nothing for this long")
	f.StringVar(&a.netns, "netns", "", "listen, sample and read settings inside this network namespace (ip netns)")
	f.BoolVar(&a.logJSON, "log-json", false, "log JSON lines instead of key=value")
	f.BoolVar(&a.noUDP, "no-udp", false, "answer no datagram runs (test then tells a shallow queue from a policer by its pings alone)")
	return c
}

func (a serveArgs) config(stderr io.Writer) (server.ServerConfig, error) {
	cfg := server.ServerConfig{Netns: a.netns, MaxClients: a.maxClients, HandshakeTimeout: a.handshake.D, IdleTimeout: a.idle.D,
		Caps: testdoc.Caps{MaxDurationS: a.maxDuration.D.Seconds(), MaxBytes: a.maxBytes.N, MaxRateBps: a.maxRate.Bps, MaxStreams: a.maxStreams}}
	if a.auth == "" {
		return cfg, usagef("serve needs --auth TOKEN-FILE: every test authenticates with a pre-shared token (make one: head -c 32 /dev/urandom | base64 > token)")
	}
	var err error
	if cfg.Token, err = secret.ReadToken(a.auth); err != nil {
		return cfg, err // package secret marks what is the user's to fix
	}
	if a.maxClients < 1 || a.maxStreams < 1 || a.maxStreams > wire.MaxStreams {
		return cfg, usagef("--max-clients must be >= 1 and --max-streams 1..%d", wire.MaxStreams)
	}
	for _, p := range a.allow {
		pfx, err := netip.ParsePrefix(p)
		if err != nil {
			return cfg, usagef("--allow %q: write a prefix like 198.51.100.0/24 or 2001:db8::/32", p)
		}
		cfg.Allow = append(cfg.Allow, pfx.Masked())
	}
	var h slog.Handler = slog.NewTextHandler(stderr, nil)
	if a.logJSON {
		h = slog.NewJSONHandler(stderr, nil)
	}
	cfg.Log = slog.New(h)
	if w := secret.Warning(a.auth); w != "" {
		cfg.Log.Warn(w)
	}
	return cfg, nil
}

func runServe(ctx context.Context, a serveArgs, stdout, stderr io.Writer) error {
	cfg, err := a.config(stderr)
	if err != nil {
		return err
	}
	pin := ""
	if a.tlsCert != "" || a.tlsKey != "" {
		if a.tlsCert == "" || a.tlsKey == "" {
			return usagef("--tls-cert and --tls-key go together")
		}
		if cfg.TLS, pin, err = secret.ServerTLS(a.tlsCert, a.tlsKey); err != nil {
			return err
		}
	}
	var ln net.Listener
	var pc *net.UDPConn
	listen := func() error {
		var err error
		if ln, err = net.Listen("tcp", a.listen); err != nil || a.noUDP {
			return err
		}
		// The datagram port: the TCP port's number, on its address.
		addr, _ := ln.Addr().(*net.TCPAddr)
		if pc, err = net.ListenUDP("udp", &net.UDPAddr{IP: addr.IP, Port: addr.Port, Zone: addr.Zone}); err != nil {
			cfg.Log.Warn("no datagram runs: cannot listen on the UDP port", "err", err.Error())
		}
		return nil
	}
	if a.netns != "" {
		err = netns.Do(a.netns, listen)
	} else {
		err = listen()
	}
	if err != nil {
		return fmt.Errorf("serve: listen on %s: %w", a.listen, err)
	}
	srv, err := server.NewServer(cfg)
	if err != nil {
		ln.Close()
		if pc != nil {
			pc.Close()
		}
		return badinput.Wrap(err)
	}
	if pc != nil {
		go func() { _ = srv.ServeUDP(ctx, pc) }()
	}
	attrs := servingAttrs(ln.Addr().String(), cfg, a.logJSON)
	if pin != "" {
		attrs = append(attrs, "tls_pin", pin)
	}
	cfg.Log.Info("serving", attrs...)
	return stopped(ctx, srv.Serve(ctx, ln))
}

// servingAttrs are the start line's: in --log-json plain SI numbers for
// a machine, in the key=value log the caps as a person reads them.
func servingAttrs(addr string, cfg server.ServerConfig, json bool) []any {
	if json {
		return []any{"listen", addr, "max_duration_s", cfg.Caps.MaxDurationS, "max_bytes", cfg.Caps.MaxBytes,
			"max_rate_bps", cfg.Caps.MaxRateBps, "max_clients", cfg.MaxClients}
	}
	return []any{"listen", addr, "caps", cfg.Caps.Text(), "max_clients", cfg.MaxClients}
}
