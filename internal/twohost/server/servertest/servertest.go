//go:build linux

package servertest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Token is the tests' pre-shared token.
var Token = []byte("0123456789abcdef0123456789abcdef")

// FakeSnap is a host's snapshot without reading the host.
func FakeSnap() (*snapshot.Snapshot, error) {
	return &snapshot.Snapshot{Source: "test", Sysctls: map[string]string{
		"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}, PageSize: 4096}, nil
}

// Start runs a server on loopback for the test's life and returns its
// address.
func Start(t *testing.T, cfg server.ServerConfig) string {
	t.Helper()
	return StartUDP(t, cfg, false)
}

// StartUDP runs a server on loopback, answering datagram runs on its
// port number when udp; it returns once sessions are offered them.
func StartUDP(t *testing.T, cfg server.ServerConfig, udp bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token == nil {
		cfg.Token = Token
	}
	if cfg.Snapshot == nil {
		cfg.Snapshot = FakeSnap
	}
	if cfg.Limits == (connlimit.Config{}) {
		// The tests' clients all come from 127.0.0.1, many failing on
		// purpose: no penalties, room for each test's connections. The
		// flood tests set limits of their own.
		cfg.Limits = connlimit.Config{PerSource: 64, Penalty: time.Nanosecond, MaxPenalty: time.Microsecond}
	}
	s, err := server.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- s.Serve(ctx, ln) }()
	servers := 1
	if udp {
		pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(ln.Addr().String())))
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- s.ServeUDP(ctx, pc) }()
		servers++
		waitUDP(t, ln.Addr().String())
	}
	t.Cleanup(func() {
		cancel()
		for range servers {
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	})
	return ln.Addr().String()
}

// waitUDP waits until the server at addr offers datagram runs (its
// ServeUDP runs): a session is started and ended until its caps say so.
// The server closes a session's connection after releasing it, so the
// test's own session is not refused as a second one.
func waitUDP(t *testing.T, addr string) {
	t.Helper()
	WaitFor(t, func() bool {
		c, acc := StartSession(t, addr)
		_ = wire.WriteMsg(c, wire.TypeBye, nil)
		_, _ = io.Copy(io.Discard, c)
		c.Close()
		return acc.Caps.UDP
	})
}

// WaitFor polls cond for up to 2 s.
func WaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 2 s")
}

// SyncBuf is a log sink safe for the server's goroutines.
type SyncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// LogTo is a server's log written to b.
func LogTo(b *SyncBuf) *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// RawConn dials addr and reads the hello.
func RawConn(t *testing.T, addr string) (net.Conn, wire.Hello) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.ReadFrame(c, wire.MaxPreAuthFrame)
	if err != nil {
		t.Fatal(err)
	}
	var h wire.Hello
	if err := wire.Decode(f, wire.TypeHello, &h); err != nil {
		t.Fatal(err)
	}
	return c, h
}

// AuthMsg is a valid control auth for a hello.
func AuthMsg(token []byte, h wire.Hello) wire.Auth {
	a := wire.Auth{Purpose: wire.PurposeControl, ClientNonce: wire.NewNonce()}
	a.MAC = wire.ClientMAC(token, h.Nonce, a)
	return a
}

// Next reads the server's next frame (an error frame as *RemoteError).
func Next(t *testing.T, c net.Conn) (wire.Frame, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := wire.ReadFrame(c, wire.MaxServerFrame)
	if err != nil {
		return f, err
	}
	if re := wire.AsError(f); re != nil {
		return f, re
	}
	return f, nil
}

// WantRefusal fails the test unless err is the server's refusal code.
func WantRefusal(t *testing.T, err error, code string) {
	t.Helper()
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != code {
		t.Fatalf("got %v; want a %q refusal", err, code)
	}
}

// StartSession authenticates and starts a session on a raw connection.
func StartSession(t *testing.T, addr string) (net.Conn, wire.Accepted) {
	t.Helper()
	c, h := RawConn(t, addr)
	if err := wire.WriteMsg(c, wire.TypeAuth, AuthMsg(Token, h)); err != nil {
		t.Fatal(err)
	}
	if _, err := Next(t, c); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteMsg(c, wire.TypeStart, wire.Start{Software: "test"}); err != nil {
		t.Fatal(err)
	}
	f, err := Next(t, c)
	if err != nil {
		t.Fatal(err)
	}
	var acc wire.Accepted
	if err := wire.Decode(f, wire.TypeAccepted, &acc); err != nil {
		t.Fatal(err)
	}
	return c, acc
}

// AuthIdle authenticates a control connection and sends nothing more.
func AuthIdle(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, h := RawConn(t, addr)
	if err := wire.WriteMsg(c, wire.TypeAuth, AuthMsg(Token, h)); err != nil {
		t.Fatal(err)
	}
	if f, err := Next(t, c); err != nil || f.Type != wire.TypeWelcome {
		t.Fatalf("no welcome: %v", err)
	}
	return c
}
