package flows

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestSamplerTakesWhatTheSourceReturns: every read's sockets are kept
// once, stamped with the time since Start; Take hands them over once;
// Stop takes a last read; failed reads are counted, not kept.
func TestSamplerTakesWhatTheSourceReturns(t *testing.T) {
	var reads atomic.Int64
	src := func() ([]Sock, error) {
		n := reads.Add(1)
		if n == 2 {
			return nil, errors.New("dump failed")
		}
		return []Sock{{Cookie: uint64(n)}, {Cookie: uint64(100 + n)}}, nil
	}
	s := NewSampler(src, 5*time.Millisecond)
	s.Start(time.Now())
	deadline := time.Now().Add(5 * time.Second)
	for reads.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	first := s.Take()
	rest := s.Stop()
	all := append(first, rest...)
	n := reads.Load()
	if want := 2 * (int(n) - 1); len(all) != want {
		t.Fatalf("%d samples from %d reads (one failed): want %d", len(all), n, want)
	}
	seen := map[uint64]bool{}
	last := -1.0
	for _, x := range all {
		if seen[x.Sock.Cookie] {
			t.Fatalf("socket %d taken twice", x.Sock.Cookie)
		}
		seen[x.Sock.Cookie] = true
		if x.T < last || x.T < 0 {
			t.Fatalf("times out of order: %v after %v", x.T, last)
		}
		last = x.T
	}
	if seen[2] || seen[102] {
		t.Fatal("the failed read's sockets were kept")
	}
	if s.Errors() != 1 {
		t.Fatalf("%d errors counted, want 1", s.Errors())
	}
	if got := s.Take(); len(got) != 0 {
		t.Fatalf("Take after Stop returned %d samples", len(got))
	}
}
