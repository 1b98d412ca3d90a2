//go:build linux

package twohost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

func TestWrongTokenAndReplay(t *testing.T) {
	logs := &servertest.SyncBuf{}
	addr := servertest.Start(t, server.ServerConfig{Log: servertest.LogTo(logs)})
	t.Run("wrong token", func(t *testing.T) {
		_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: []byte("another-token-0123456789"), Download: true, Snapshot: servertest.FakeSnap, Rounds: 1})
		servertest.WantRefusal(t, err, wire.CodeAuth)
		if !strings.Contains(err.Error(), "wrong token") {
			t.Errorf("error %q does not say why", err)
		}
	})
	t.Run("replayed handshake", func(t *testing.T) {
		c1, h1 := servertest.RawConn(t, addr)
		a := servertest.AuthMsg(servertest.Token, h1)
		if err := wire.WriteMsg(c1, wire.TypeAuth, a); err != nil {
			t.Fatal(err)
		}
		if _, err := servertest.Next(t, c1); err != nil {
			t.Fatalf("the original handshake: %v", err)
		}
		c2, _ := servertest.RawConn(t, addr)
		if err := wire.WriteMsg(c2, wire.TypeAuth, a); err != nil { // the same bytes on a new connection
			t.Fatal(err)
		}
		_, err := servertest.Next(t, c2)
		servertest.WantRefusal(t, err, wire.CodeAuth)
	})
	if !strings.Contains(logs.String(), "reason=\"handshake: wrong token") {
		t.Errorf("refusals not logged:\n%s", logs)
	}
}

func TestServerProvesToken(t *testing.T) {
	// A server with another token cannot pass for the real one.
	addr := servertest.Start(t, server.ServerConfig{Token: []byte("the-impostor's-token-0123")})
	_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, Download: true, Snapshot: servertest.FakeSnap, Rounds: 1})
	if err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Fatalf("got %v; want an authentication failure", err)
	}
}

func TestSecondClientBusy(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{MaxClients: 1, Caps: testdoc.Caps{MaxDurationS: 30}})
	c, _ := servertest.StartSession(t, addr)
	_, err := Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, Download: true, Snapshot: servertest.FakeSnap, Rounds: 1})
	var re *wire.RemoteError
	if !errors.As(err, &re) || re.Code != wire.CodeBusy || re.RetryAfterS < 1 || re.RetryAfterS > 30 {
		t.Fatalf("got %v; want busy with a retry after 1..30 s", err)
	}
	if !strings.Contains(err.Error(), "retry after") {
		t.Errorf("%q does not say when to retry", err)
	}
	// Once the first test ends, the next one runs.
	_ = wire.WriteMsg(c, wire.TypeBye, nil)
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err = Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, Download: true, Duration: 300 * time.Millisecond, Snapshot: servertest.FakeSnap})
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("after the first test ended: %v", err)
	}
}
