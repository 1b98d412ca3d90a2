//go:build linux

package server_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// emfileListener fails its first n accepts with "too many open files".
type emfileListener struct {
	net.Listener
	n atomic.Int32
}

func (l *emfileListener) Accept() (net.Conn, error) {
	if l.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	return l.Listener.Accept()
}

// Out of descriptors, the server waits and accepts again: it used to
// return from Serve, ending longhaul serve.
func TestServeSurvivesAcceptErrors(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	ln := &emfileListener{Listener: inner}
	ln.n.Store(5)
	s, err := server.NewServer(server.ServerConfig{Token: servertest.Token, Snapshot: servertest.FakeSnap})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	c, err := net.DialTimeout("tcp", inner.Addr().String(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := wire.ReadFrame(c, wire.MaxPreAuthFrame); err != nil {
		t.Errorf("no hello after 5 accept errors: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Serve returned on accept errors: %v", err)
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after cancel: %v", err)
	}
}

// A handshake whose auth is not read within the handshake timeout is
// refused saying so (issue 51): a server starved of CPU reads late, and
// its client, which sent its proof at once, was told "expected an auth
// message", read as a refused authentication.
func TestHandshakeTimeoutSaysSo(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{HandshakeTimeout: 200 * time.Millisecond})
	c, _ := servertest.RawConn(t, addr)
	time.Sleep(400 * time.Millisecond)
	_, err := servertest.Next(t, c)
	servertest.WantRefusal(t, err, wire.CodeRequest)
	if want := "no auth message read within the handshake timeout (200 ms)"; !strings.Contains(err.Error(), want) {
		t.Errorf("got %v; want it to say %q", err, want)
	}
}
