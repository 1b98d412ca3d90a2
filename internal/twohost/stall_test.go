//go:build linux

package twohost

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// The far end stalls (issue 51: a serve held to a few % of a core) after
// the first phase, in the ways a client sees it: the server reads a
// stream's proof of the token past its handshake timeout and refuses it
// (before: "authentication: the server refused (request): expected an
// auth message", after the server's 10 s attach window), it sends no
// grant for the next phase, or nothing at all on the control
// connection. Each way the download measured before survives, with an
// error that names the phase and says the server may be overloaded,
// never "authentication".

// stallListener hands out connections; from the after-th on, the
// server's first read of each comes late (late > the handshake
// timeout), as on a server starved of CPU between its hello and the
// client's proof.
type stallListener struct {
	net.Listener
	after int32
	late  time.Duration
	n     atomic.Int32
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.n.Add(1) < l.after {
		return c, err
	}
	return &lateConn{TCPConn: c.(*net.TCPConn), late: l.late}, nil
}

type lateConn struct {
	*net.TCPConn
	late time.Duration
	once sync.Once
}

func (c *lateConn) Read(b []byte) (int, error) {
	c.once.Do(func() { time.Sleep(c.late) })
	return c.TCPConn.Read(b)
}

// muteListener's first connection (the control connection) stops
// answering once it has sent the first phase's end: what it writes
// after is lost, as from a server that no longer runs.
type muteListener struct {
	net.Listener
	first atomic.Bool
}

func (l *muteListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || l.first.Swap(true) {
		return c, err
	}
	return &muteConn{TCPConn: c.(*net.TCPConn)}, nil
}

type muteConn struct {
	*net.TCPConn
	mute atomic.Bool
}

func (c *muteConn) Write(b []byte) (int, error) {
	if c.mute.Load() {
		return len(b), nil
	}
	if bytes.Contains(b, []byte(`"type":"`+wire.TypePhaseDone+`"`)) {
		c.mute.Store(true)
	}
	return c.TCPConn.Write(b)
}

// serveOn runs a server on ln for the test's life.
func serveOn(t *testing.T, ln net.Listener, cfg server.ServerConfig) {
	t.Helper()
	cfg.Token, cfg.Snapshot = servertest.Token, servertest.FakeSnap
	s, err := server.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func TestServerStallsAfterTheDownload(t *testing.T) {
	oldIdle, oldSilence := clientIdle, controlSilence
	t.Cleanup(func() { clientIdle, controlSilence = oldIdle, oldSilence })
	cases := []struct {
		name          string
		idle, silence time.Duration
		ln            func(net.Listener) net.Listener
		says          []string
	}{
		// the control connection, then the download's stream; the
		// upload's stream is read 600 ms late, its handshake timeout
		// 300 ms
		{"proof read late", time.Second, time.Minute, func(ln net.Listener) net.Listener {
			return &stallListener{Listener: ln, after: 3, late: 600 * time.Millisecond}
		},
			[]string{"test: upload phase: stream 0:", "did not read this host's proof of the token in time", "no auth message read within the handshake timeout (300 ms)", "it may be overloaded (CPU)"}},
		{"no grant", time.Second, time.Minute, func(ln net.Listener) net.Listener { return &muteListener{Listener: ln} },
			[]string{"test: upload phase: the server did not answer the upload phase's start within 1 s: it may be overloaded (CPU)"}},
		// silent longer than the control connection may be, before the
		// grant's wait ends (measured on loopback with a serve stopped
		// by SIGSTOP: "control connection: read tcp ...: i/o timeout")
		{"control silent", 5 * time.Second, time.Second, func(ln net.Listener) net.Listener { return &muteListener{Listener: ln} },
			[]string{"test: upload phase: the server sent nothing on the control connection for 1 s, no answer to this host's pings either: it may be overloaded (CPU)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clientIdle, controlSilence = c.idle, c.silence
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			serveOn(t, c.ln(ln), server.ServerConfig{HandshakeTimeout: 300 * time.Millisecond})
			raw, err := Run(context.Background(), ClientOptions{Addr: ln.Addr().String(), Token: servertest.Token, Download: true, Upload: true, Streams: 2,
				Duration: 300 * time.Millisecond, Snapshot: servertest.FakeSnap})
			var part *PartialError
			if !errors.As(err, &part) {
				t.Fatalf("got %v; want a partial result", err)
			}
			msg := err.Error()
			for _, s := range c.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not say %q", msg, s)
				}
			}
			if strings.Contains(msg, "authentication") {
				t.Errorf("%q calls a stalled server's answer authentication", msg)
			}
			if raw == nil || len(raw.Phases) != 1 || raw.Phases[0].Grant.Name != wire.PhaseDownload || len(raw.Phases[0].Server) == 0 {
				t.Fatalf("the download measured before the stall was not kept: %+v", raw)
			}
			note := part.Note()
			if !strings.Contains(note, "not measured: the upload and capacity phases") || !strings.Contains(note, "overloaded (CPU)") {
				t.Errorf("note %q does not name the phases missing and why", note)
			}
		})
	}
}
