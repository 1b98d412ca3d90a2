//go:build linux

package twohost

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// TestLength against a hand computation (its parts are the client's own
// budget: client.go and phaseplan.go use the same constants).
func TestTestLength(t *testing.T) {
	// 170 ms, 3 phases of 6.8 s: set-up 1 + 4 x 0.17 + 10 x (0.17 +
	// 0.05) = 3.88 s; a phase 6.8 + 1.5 + 3 x 0.17 = 8.81 s.
	if got, want := TestLength(3, 6800*time.Millisecond, 170*time.Millisecond), 30310*time.Millisecond; got != want {
		t.Errorf("TestLength(3, 6.8s, 170ms) = %s, want %s", got, want)
	}
	// No path delay, 2 phases of 2 s: 1 + 0.5 + 2 x 3.5 = 8.5 s.
	if got := TestLength(2, 2*time.Second, 0); got != 8500*time.Millisecond {
		t.Errorf("TestLength(2, 2s, 0) = %s, want 8.5s", got)
	}
	if got := PlannedSeconds(1e6 * time.Hour); got != wire.MaxPlannedS {
		t.Errorf("PlannedSeconds of a million hours = %g, want the cap %d", got, wire.MaxPlannedS)
	}
}

// A client plans its phases from its options and the control
// connection's RTT, within its deadline.
func TestClientPlanned(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			_, _ = c.Read(make([]byte, 1))
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bg := context.Background()
	for _, tc := range []struct {
		o    ClientOptions
		want float64 // loopback: RTT ~0, so phases of Rounds x RTT are MinPhase
	}{
		// 1.5 s set-up, 3 phases of 2 + 1.5 s.
		{ClientOptions{Download: true, Upload: true, Streams: 4, Rounds: 40}, 12},
		// 1.5 s, 4 phases (download, 2 congestion controls, capacity) of 5 + 1.5 s.
		{ClientOptions{Download: true, Streams: 8, Duration: 5 * time.Second, CCs: []string{"bbr", "reno"}}, 27.5},
		{ClientOptions{Upload: true, Streams: 1, Rounds: 60}, 5},
	} {
		if got := tc.o.planned(bg, c); got < tc.want || got > tc.want+0.2 {
			t.Errorf("%+v: planned %g s, want %g", tc.o, got, tc.want)
		}
	}
	ctx, cancel := context.WithTimeout(bg, 3*time.Second)
	defer cancel()
	if got := (ClientOptions{Download: true, Upload: true, Rounds: 40}).planned(ctx, c); got > 3 || got < 2.5 {
		t.Errorf("with 3 s to its deadline: planned %g s", got)
	}
}
