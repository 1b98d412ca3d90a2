package lab

import (
	"math"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/results"
)

// samples builds a socket's counter growing at rate bytes/s after a
// slow start of the first second.
func samples(end, sock string, rate float64, n int) []results.Sample {
	var out []results.Sample
	var acked float64
	for i := 0; i < n; i++ {
		t := float64(i) * 0.1
		r := rate
		if t < 1 {
			r = rate / 10
		}
		acked += r * 0.1
		out = append(out, results.Sample{T: t, End: end, Sock: sock, BytesAcked: int64(acked)})
	}
	// The socket idles after the transfer: the counter stops.
	last := out[len(out)-1]
	for i := 1; i <= 5; i++ {
		last.T += 0.1
		out = append(out, last)
	}
	return out
}

func TestSteadyRate(t *testing.T) {
	var ss []results.Sample
	ss = append(ss, samples("server", "a", 10e6, 80)...)
	ss = append(ss, samples("server", "b", 5e6, 80)...)
	ss = append(ss, samples("client", "c", 99e6, 80)...)
	got, ok := SteadyRate(ss, "server")
	if !ok {
		t.Fatal("no rate")
	}
	near(t, "steady rate", got, 15e6*8, 0.01)
	if _, ok := SteadyRate(ss[:2], "server"); ok {
		t.Error("two samples gave a rate")
	}
}

func TestETA(t *testing.T) {
	if got := eta(0, 10, 0, 100*time.Second); got != 100*time.Second {
		t.Errorf("start: %v", got)
	}
	if got := eta(10, 10, time.Minute, time.Minute); got != 0 {
		t.Errorf("done: %v", got)
	}
	// Half done in 100 s against an estimate of 100 s: the pace says
	// 100 s more, the estimate 50 s; weighted half and half.
	if got := eta(5, 10, 100*time.Second, 100*time.Second); got != 75*time.Second {
		t.Errorf("half: %v", got)
	}
}

// During loss recovery bytes_acked stalls behind the hole and then jumps;
// the delivered count (SACKed included) keeps the true rate.
func TestSteadyRateUsesDelivered(t *testing.T) {
	var ss []results.Sample
	for i := 0; i <= 100; i++ {
		tt := float64(i) * 0.1
		delivered := int64(1e6 * tt) // 1 MB/s
		acked := delivered
		if i >= 45 && i < 60 {
			acked = int64(1e6 * 4.5) // a hole from t=4.5 s, repaired at 6 s
		}
		ss = append(ss, results.Sample{T: tt, End: "server", Sock: "s", BytesAcked: acked, Delivered: delivered})
	}
	got, ok := SteadyRate(ss, "server")
	if !ok {
		t.Fatal("no rate")
	}
	near(t, "steady rate", got, 8e6, 0.01)
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %g, want %g within %.1f%%", what, got, want, tol*100)
	}
}
