//go:build linux

package twohost

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
)

// A server full of authenticated idle connections drops them for a
// test, and does not penalize their source for it (here the test's own:
// a penalty would refuse the test's connections).
func TestAuthenticatedIdleMakesRoom(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{HandshakeTimeout: 10 * time.Second,
		Limits: connlimit.Config{PerSource: 16, Start: 4, Full: 4, Penalty: time.Minute}})
	var held []net.Conn
	for range 4 {
		held = append(held, servertest.AuthIdle(t, addr))
	}
	_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, Download: true,
		Duration: 300 * time.Millisecond, Snapshot: servertest.FakeSnap})
	if err != nil {
		t.Fatalf("a test against a server full of authenticated idle connections: %v", err)
	}
	dropped := 0
	for _, c := range held {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			dropped++
		}
	}
	if dropped != 1 {
		t.Errorf("%d idle connections dropped, want 1 (for the test's control; its stream found room)", dropped)
	}
}
