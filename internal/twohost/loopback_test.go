//go:build linux

package twohost

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

func TestLoopbackRun(t *testing.T) {
	addr := servertest.Start(t, server.ServerConfig{})
	raw, err := Run(context.Background(), ClientOptions{Addr: addr, Token: servertest.Token, Download: true, Upload: true, Streams: 2,
		Duration: 600 * time.Millisecond, Snapshot: servertest.FakeSnap, Rounds: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(raw.Phases) != 3 {
		t.Fatalf("%d phases", len(raw.Phases))
	}
	for _, p := range raw.Phases {
		t.Logf("%s: client %d bytes, server %d bytes (%s), %d client samples, %d server samples, %d loaded rtts",
			p.Grant.Name, p.ClientBytes, p.Done.Bytes, p.Done.Reason, len(p.Client), len(p.Server), len(p.LoadedRTTs))
		if p.ClientBytes == 0 || p.Done.Bytes == 0 || len(p.Client) == 0 || len(p.Server) == 0 {
			t.Errorf("%s: nothing measured", p.Grant.Name)
		}
	}
}

// slowConn delays its first read, as a long path delays a handshake's
// answer, so that the handshakes of a phase's streams overlap.
type slowConn struct {
	*net.TCPConn
	first bool
}

func (c *slowConn) Read(b []byte) (int, error) {
	if !c.first {
		c.first = true
		time.Sleep(50 * time.Millisecond)
	}
	return c.TCPConn.Read(b)
}

type slowListener struct{ net.Listener }

func (l slowListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowConn{TCPConn: c.(*net.TCPConn)}, nil
}

// A granted phase's streams handshake at once; on a long path their
// handshakes overlap, and the per-source cap on handshakes must not
// refuse them (it did: 8 streams against a cap of 4 failed every test
// over 100 ms with "closed the connection before its hello"). A stranger
// from another session's address still meets the cap.
func TestCapacityStreamsPassThePerSourceCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.NewServer(server.ServerConfig{Token: servertest.Token, Snapshot: servertest.FakeSnap,
		Limits: connlimit.Config{PerSource: 2, Penalty: time.Nanosecond, MaxPenalty: time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, slowListener{ln}) }()
	defer func() {
		cancel()
		<-done
	}()
	raw, err := Run(context.Background(), ClientOptions{Addr: ln.Addr().String(), Token: servertest.Token, Streams: 8,
		Duration: 500 * time.Millisecond, Snapshot: servertest.FakeSnap, Rounds: 10})
	if err != nil {
		t.Fatalf("8 streams against a per-source cap of 2: %v", err)
	}
	for _, p := range raw.Phases {
		if p.Grant.Name == wire.PhaseCapacity && (p.Grant.Streams != 8 || len(p.Server) == 0) {
			t.Errorf("capacity phase: %d streams granted, %d server samples", p.Grant.Streams, len(p.Server))
		}
	}
}
