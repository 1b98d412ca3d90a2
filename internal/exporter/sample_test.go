//go:build linux

package exporter

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

// A transfer that starts between two full dumps is counted while it
// runs: the exporter used to find new sockets only at its full dump
// (every 10th sample), so an 8 s transfer was never seen while it ran.
func TestIntegrationNewSocketsBetweenFullDumps(t *testing.T) {
	ns := nstest.New(t)
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v %s", err, out)
	}
	var ln net.Listener
	if err := netns.Do(ns, func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	dial := func() net.Conn {
		var c net.Conn
		if err := netns.Do(ns, func() (err error) { c, err = net.Dial("tcp", ln.Addr().String()); return err }); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// Idle connections, so that the sampler looks up rather than dumps.
	for range 20 {
		defer dial().Close()
	}
	d, err := flows.OpenRaw(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tr := NewTracker(Config{MaxSeries: 1000}) // room for per-subnet groups
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sample(ctx, d, tr, 100*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	time.Sleep(350 * time.Millisecond) // past the two first (full) samples
	c := dial()
	buf := make([]byte, 64<<10)
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(250 * time.Millisecond) // still before the 10th sample's dump
	v := tr.View(0)
	cancel()
	<-done
	c.Close()
	// Counted in the peer's own group, not in "other" (where the issue
	// saw a missed transfer's time go).
	var sent float64
	for _, g := range v.Groups {
		switch g.Name {
		case "127.0.0.0/24":
			sent += g.Sent
		case Other:
			if g.Sent > 0 {
				t.Errorf("%.0f bytes counted under %q", g.Sent, Other)
			}
		}
	}
	if full := v.Self.FullDumps; full > 2 {
		t.Fatalf("%v full dumps: the test meant to look between them", full)
	}
	if sent < 1<<20 {
		t.Errorf("%.0f bytes counted of a transfer that ran between two full dumps", sent)
	}
	t.Logf("counted %.0f bytes before the next full dump (%v samples, %v full)", sent, v.Self.Samples, v.Self.FullDumps)
}
