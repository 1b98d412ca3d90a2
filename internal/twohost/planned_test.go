//go:build linux

package twohost

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// startFrom authenticates from the local address from and sends st; it
// returns the connection and the server's answer (a refusal as
// *RemoteError).
func startFrom(t *testing.T, addr, from string, st wire.Start) (net.Conn, error) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f, err := next(t, c)
	var h wire.Hello
	if err != nil || wire.Decode(f, wire.TypeHello, &h) != nil {
		t.Fatalf("hello: %v", err)
	}
	if err := wire.WriteMsg(c, wire.TypeAuth, authMsg(testToken, h)); err != nil {
		t.Fatal(err)
	}
	if _, err := next(t, c); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteMsg(c, wire.TypeStart, st); err != nil {
		t.Fatal(err)
	}
	_, err = next(t, c)
	return c, err
}

// By default serve runs one test at a time, whoever asks (tests sharing
// its link measure each other), and tells the others to come back when
// the running test is expected to end: its client's planned length, not
// the --max-duration cap; the cap when the client planned nothing (an
// older client) or planned past it; a few seconds once it overran.
func TestServeOneTestRetryAfterPlanned(t *testing.T) {
	for _, tc := range []struct {
		name     string
		planned  float64
		wait     time.Duration // before the second client asks
		min, max int
	}{
		{"planned 20 s", 20, 0, 19, 20},
		{"no plan (older client)", 0, 0, 119, 120},
		{"planned past the cap", 500, 0, 119, 120},
		{"overran its plan", 0.5, 1200 * time.Millisecond, 4, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startServer(t, ServerConfig{}) // the defaults: 120 s a test, 1 at a time
			first, err := startFrom(t, addr, "127.0.0.1", wire.Start{Software: "test", PlannedS: tc.planned})
			if err != nil {
				t.Fatalf("first test: %v", err)
			}
			time.Sleep(tc.wait)
			_, err = startFrom(t, addr, "127.0.0.2", wire.Start{Software: "test"})
			var re *wire.RemoteError
			if !errors.As(err, &re) || re.Code != wire.CodeBusy || re.RetryAfterS < tc.min || re.RetryAfterS > tc.max {
				t.Fatalf("a second client while a test runs: %v; want busy, retry after %d..%d s", err, tc.min, tc.max)
			}
			// Once the first ends, the second runs.
			_ = wire.WriteMsg(first, wire.TypeBye, nil)
			first.Close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				_, err = startFrom(t, addr, "127.0.0.2", wire.Start{Software: "test"})
				if err == nil || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err != nil {
				t.Errorf("after the first test ended: %v", err)
			}
		})
	}
}

// Start's planned length is checked like every field: negative, over a
// day, not a number or out of float range is a malformed start.
func TestStartPlannedValidation(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"software":"x"}`:                       true,
		`{"software":"x","planned_s":0}`:         true,
		`{"software":"x","planned_s":30.5}`:      true,
		`{"software":"x","planned_s":86400}`:     true,
		`{"software":"x","planned_s":null}`:      true,
		`{"software":"x","planned_s":-1}`:        false,
		`{"software":"x","planned_s":-0.001}`:    false,
		`{"software":"x","planned_s":86400.5}`:   false,
		`{"software":"x","planned_s":1e308}`:     false,
		`{"software":"x","planned_s":1e400}`:     false,
		`{"software":"x","planned_s":"10"}`:      false,
		`{"software":"x","planned_s":"NaN"}`:     false,
		`{"software":"x","planned_s":[1]}`:       false,
		`{"software":"x","planned_s":{"s":1}}`:   false,
		`{"software":"x","planned_s":true}`:      false,
		`{"software":"x","planned_s":-1e-320}`:   false,
		`{"software":"x","planned_s":123456789}`: false,
	} {
		var st wire.Start
		err := wire.Decode(wire.Frame{V: wire.ProtoVersion, Type: wire.TypeStart, Body: json.RawMessage(body)}, wire.TypeStart, &st)
		if (err == nil) != ok || (err != nil && !errors.Is(err, wire.ErrFrame)) {
			t.Errorf("%s: %v (want accepted: %v)", body, err, ok)
		}
	}
	// An old client's start is byte for byte what it was: the field is
	// left out when not set.
	b, _ := json.Marshal(wire.Start{Software: "longhaul 1.0"})
	if strings.Contains(string(b), "planned") {
		t.Errorf("a start without a plan encodes as %s", b)
	}
}

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
