//go:build linux

package twohost

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/connlimit"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

var testToken = []byte("0123456789abcdef0123456789abcdef")

func fakeSnap() (*snapshot.Snapshot, error) {
	return &snapshot.Snapshot{Source: "test", Sysctls: map[string]string{
		"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}, PageSize: 4096}, nil
}

// startServer runs a server on loopback for the test's life.
func startServer(t *testing.T, cfg ServerConfig) string {
	t.Helper()
	return startServerUDP(t, cfg, false)
}

// startServerUDP runs a server on loopback, answering datagram runs on
// its port number when udp.
func startServerUDP(t *testing.T, cfg ServerConfig, udp bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Token == nil {
		cfg.Token = testToken
	}
	if cfg.Snapshot == nil {
		cfg.Snapshot = fakeSnap
	}
	if cfg.Limits == (connlimit.Config{}) {
		// The tests' clients all come from 127.0.0.1, many failing on
		// purpose: no penalties, room for each test's connections. The
		// flood tests set limits of their own.
		cfg.Limits = connlimit.Config{PerSource: 64, Penalty: time.Nanosecond, MaxPenalty: time.Microsecond}
	}
	s, err := NewServer(cfg)
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
		waitFor(t, func() bool { return s.udpPort() != nil })
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

func TestLoopbackRun(t *testing.T) {
	addr := startServer(t, ServerConfig{})
	raw, err := Run(context.Background(), ClientOptions{Addr: addr, Token: testToken, Download: true, Upload: true, Streams: 2,
		Duration: 600 * time.Millisecond, Snapshot: fakeSnap, Rounds: 10})
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
	s, err := NewServer(ServerConfig{Token: testToken, Snapshot: fakeSnap,
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
	raw, err := Run(context.Background(), ClientOptions{Addr: ln.Addr().String(), Token: testToken, Streams: 8,
		Duration: 500 * time.Millisecond, Snapshot: fakeSnap, Rounds: 10})
	if err != nil {
		t.Fatalf("8 streams against a per-source cap of 2: %v", err)
	}
	for _, p := range raw.Phases {
		if p.Grant.Name == wire.PhaseCapacity && (p.Grant.Streams != 8 || len(p.Server) == 0) {
			t.Errorf("capacity phase: %d streams granted, %d server samples", p.Grant.Streams, len(p.Server))
		}
	}
}
