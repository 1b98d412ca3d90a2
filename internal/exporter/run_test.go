//go:build linux

package exporter

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Run serves plain HTTP and says so: run under -race (make race), this
// caught the log line reading the server's TLSConfig while Serve set one
// for HTTP/2 (the line said https on a plain port, 2 starts in 27).
func TestRunServesAndLogsItsScheme(t *testing.T) {
	logs := &lockedWriter{w: &strings.Builder{}}
	ready := make(chan net.Addr, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt := Options{Listen: "127.0.0.1:0", Interval: 100 * time.Millisecond, Config: Config{MaxSeries: 10},
		Log: slog.New(slog.NewTextHandler(logs, nil)), Ready: func(a net.Addr) { ready <- a }}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, opt) }()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		t.Skipf("exporter cannot run here: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not ready in 10 s")
	}
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if !strings.Contains(logs.String(), "url=http://") {
		t.Errorf("log does not give the plain URL:\n%s", logs.String())
	}
}

// lockedWriter serializes writes from the exporter's goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.(*strings.Builder).String()
}
