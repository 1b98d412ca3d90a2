//go:build linux

package server_test

import (
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/server"
	"github.com/longhaul/longhaul/internal/twohost/server/servertest"
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
	f, err := servertest.Next(t, c)
	var h wire.Hello
	if err != nil || wire.Decode(f, wire.TypeHello, &h) != nil {
		t.Fatalf("hello: %v", err)
	}
	if err := wire.WriteMsg(c, wire.TypeAuth, servertest.AuthMsg(servertest.Token, h)); err != nil {
		t.Fatal(err)
	}
	if _, err := servertest.Next(t, c); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteMsg(c, wire.TypeStart, st); err != nil {
		t.Fatal(err)
	}
	_, err = servertest.Next(t, c)
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
			addr := servertest.Start(t, server.ServerConfig{}) // the defaults: 120 s a test, 1 at a time
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
