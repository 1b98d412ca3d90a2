package diagnose

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestExtendIsAdd feeds random sample streams (a sender that sends,
// gets ACKs, meets its window, loses and recovers, goes idle) to a
// timeline and, before each sample without flags, runs Extend on one
// copy and AddSample on another: when Extend takes it, both copies must
// be equal field for field; when it refuses, its copy must be
// unchanged. (A sample Extend must refuse, another Delivered say, shows
// as a difference: AddSample keeps what Extend's checks read.)
func TestExtendIsAdd(t *testing.T) {
	taken, refused := 0, 0
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		tl := &Timeline{MSS: []int{0, 1448, 536}[seed%3], DrainIsApp: seed%4 != 0}
		// Half the streams offer small windows only, which the flight
		// fills: rwnd-limited samples, then room again as SACKs come.
		windows := [][]int64{{0, 1000, 16 << 10, 64 << 10, 1 << 20, -1}, {0, 1000, 12 << 10, 16 << 10, -1}}[seed%2]
		var s Sample
		s.Rwnd = windows[3]
		for range 2000 {
			s.T += time.Duration(r.IntN(3000)-100) * time.Microsecond
			s.RTT = time.Duration(1+r.IntN(50)) * time.Millisecond
			s.Stalled, s.ProbeWait, s.SendGap, s.Turn = false, false, false, false
			s.InRecovery, s.TimeoutRecovery, s.AppLimited = false, false, false
			// Each of these on its own, so that any two come together.
			if r.IntN(10) < 6 { // more data: the candidates
				s.Sent += int64(1 + r.IntN(3*1448))
			}
			if r.IntN(10) < 3 { // an ACK
				s.Delivered = min(s.Sent, s.Delivered+int64(r.IntN(4*1448)))
			}
			if r.IntN(10) == 0 {
				s.Rwnd = windows[r.IntN(len(windows))]
			}
			if r.IntN(30) == 0 {
				s.Retrans++
			}
			switch r.IntN(40) {
			case 0:
				s.InRecovery = true
			case 1:
				s.Stalled, s.TimeoutRecovery, s.InRecovery = true, true, true
			case 2:
				s.SendGap = true
			case 3:
				s.Turn = true
			case 4, 5:
				s.Delivered = s.Sent // everything delivered: idle or a drain
			case 6:
				s.AppLimited = true // tcp_info's: application-limited with data out
			}
			s.Inflight = max(s.Sent-s.Delivered-int64(r.IntN(2))*int64(r.IntN(3000)), 0)
			if r.IntN(50) == 0 {
				s.Inflight = 0
			}
			flagless := !s.Stalled && !s.ProbeWait && !s.SendGap && !s.Turn && !s.InRecovery && !s.TimeoutRecovery && !s.AppLimited
			if flagless {
				ext, add := *tl, *tl
				c := s
				add.add(&c)
				if ext.Extend(s.T, s.Sent, s.Delivered, s.Inflight, s.Rwnd, s.Retrans, s.RTT) {
					taken++
					if !reflect.DeepEqual(ext, add) {
						t.Fatalf("seed %d: Extend gave\n%+v\nAddSample\n%+v", seed, ext, add)
					}
				} else {
					refused++
					if !reflect.DeepEqual(ext, *tl) {
						t.Fatalf("seed %d: Extend refused but changed the timeline", seed)
					}
				}
			}
			tl.add(&s)
		}
	}
	// Both answers must be common, or the test proves little.
	if taken < 10000 || refused < 5000 {
		t.Fatalf("Extend took %d candidates and refused %d: the streams do not exercise it", taken, refused)
	}
	t.Logf("Extend took %d candidates, refused %d", taken, refused)
}

// TestExtendKeepsNoSeries: a timeline that keeps a series takes every
// sample through AddSample (each may be a point).
func TestExtendKeepsNoSeries(t *testing.T) {
	tl := &Timeline{MaxPoints: 100, DrainIsApp: true}
	tl.Add(Sample{T: 0, Sent: 1448, Inflight: 1448, Rwnd: 1 << 20})
	tl.Add(Sample{T: time.Millisecond, Sent: 2896, Inflight: 2896, Rwnd: 1 << 20})
	if tl.Extend(2*time.Millisecond, 4344, 0, 4344, 1<<20, 0, time.Millisecond) {
		t.Fatal("Extend took a sample of a timeline that keeps a series")
	}
	tl.MaxPoints = 0
	if !tl.Extend(2*time.Millisecond, 4344, 0, 4344, 1<<20, 0, time.Millisecond) {
		t.Fatal("Extend refused a data segment in slow start, far below the window")
	}
}
