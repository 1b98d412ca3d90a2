package wire

import (
	"bytes"
	"testing"
	"time"
)

func TestUDPWire(t *testing.T) {
	tok := bytes.Repeat([]byte{7}, UDPTokenLen)
	got, ok := ParseUDPHello(UDPHello(tok))
	if !ok || !bytes.Equal(got[:], tok) {
		t.Errorf("hello round trip: %x, %v", got, ok)
	}
	for _, b := range [][]byte{nil, []byte("LHU1"), append([]byte("LHU2"), tok...), append(UDPHello(tok), 0)} {
		if _, ok := ParseUDPHello(b); ok {
			t.Errorf("hello %q accepted", b)
		}
	}
	b := make([]byte, UDPMinSize)
	PutUDPData(b, 4_000_000_000, int64(1500*time.Millisecond))
	seq, sent, ok := ParseUDPData(b)
	if !ok || seq != 4_000_000_000 || sent != int64(1500*time.Millisecond) {
		t.Errorf("data round trip: %d %d %v", seq, sent, ok)
	}
	PutUDPData(b, 1, -1)
	if _, _, ok := ParseUDPData(b); ok {
		t.Error("a negative send time accepted")
	}
	if _, _, ok := ParseUDPData(b[:udpHeaderLen-1]); ok {
		t.Error("a short datagram accepted")
	}
}

// link simulates datagrams sent at pace (bits/s, in bursts of burst)
// through a token bucket (policer bits/s with bucket bytes; 0 none),
// then a link of rate bits/s with a drop-tail queue of queue datagrams,
// over 2 s: their arrivals, 50 ms of delay added to the link's.
func link(size int, pace float64, burst time.Duration, policer float64, bucket int, rate float64, queue int) []UDPArrival {
	var out []UDPArrival
	each := float64(size*8) / pace * 1e9
	serve := float64(size*8) / rate * 1e9
	tokens, last := float64(bucket), 0.0
	var departs []float64 // of the datagrams in the queue
	free := 0.0           // when the link finishes its last datagram
	for i := 0; float64(i)*each < 2e9; i++ {
		at := float64(i) * each
		if burst > 0 {
			at -= float64(int64(at) % int64(burst)) // sent at the start of its burst
		}
		if policer > 0 {
			tokens = min(tokens+(at-last)/1e9*policer/8, float64(bucket))
			last = at
			if tokens < float64(size) {
				continue
			}
			tokens -= float64(size)
		}
		for len(departs) > 0 && departs[0] <= at {
			departs = departs[1:]
		}
		if len(departs) >= queue {
			continue
		}
		free = max(free, at) + serve
		departs = append(departs, free)
		out = append(out, UDPArrival{Seq: uint32(i), Sent: int64(at), Recv: int64(free) + int64(50*time.Millisecond)})
	}
	return out
}

// A link's queue stands full under datagrams paced above its rate; a
// policer drops their excess and queues nothing, even in front of a
// faster link with a deep queue.
func TestUDPStatsQueueOrPolicer(t *testing.T) {
	size := 1460
	for _, tc := range []struct {
		name               string
		arr                []UDPArrival
		wantBps            float64
		minQueue, maxQueue time.Duration
	}{
		// 21 datagrams at 100 Mbit/s: 2.45 ms, at most 2 datagrams
		// drained between the sender's bursts.
		{"shallow queue", link(size, 125e6, 250*time.Microsecond, 0, 0, 100e6, 21), 100e6, 2100 * time.Microsecond, 2500 * time.Microsecond},
		{"policer", link(size, 62.5e6, 250*time.Microsecond, 50e6, 64<<10, 100e6, 400), 50e6, 0, 200 * time.Microsecond},
		{"policer, paced evenly", link(size, 62.5e6, 0, 50e6, 64<<10, 100e6, 400), 50e6, 0, 50 * time.Microsecond},
		{"under the rate", link(size, 80e6, 250*time.Microsecond, 0, 0, 100e6, 400), 80e6, 0, 200 * time.Microsecond},
		// A sender whose timer fires every millisecond (a busy host):
		// each burst of 11 datagrams finds 12 of the 21 still queued;
		// behind the policer the 4 that pass find the link empty.
		{"shallow queue, bursts of 1 ms", link(size, 125e6, time.Millisecond, 0, 0, 100e6, 21), 100e6, 1700 * time.Microsecond, 2500 * time.Microsecond},
		{"policer, bursts of 1 ms", link(size, 62.5e6, time.Millisecond, 50e6, 64<<10, 100e6, 400), 50e6, 0, 400 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := UDPStatsOf(tc.arr, size)
			t.Logf("%d arrived, %.4g bit/s, queue %s", st.Received, st.Bps, st.Queue)
			if st.Bps < 0.97*tc.wantBps || st.Bps > 1.03*tc.wantBps {
				t.Errorf("arrived at %.4g bit/s, want %.4g", st.Bps, tc.wantBps)
			}
			if st.Queue < tc.minQueue || st.Queue > tc.maxQueue {
				t.Errorf("queue %s, want %s..%s", st.Queue, tc.minQueue, tc.maxQueue)
			}
		})
	}
	dup := link(size, 62.5e6, 0, 0, 0, 100e6, 400)
	if st := UDPStatsOf(append(dup, dup[:10]...), size); st.Received != int64(len(dup)) {
		t.Errorf("duplicates counted: %d of %d", st.Received, len(dup))
	}
	if st := UDPStatsOf(dup[:10], size); st.Received != 10 || st.Bps != 0 || st.Queue != 0 {
		t.Errorf("10 datagrams measured something: %+v", st)
	}
}

// FuzzUDPDatagram: no datagram makes the parsers panic, and what they
// accept writes back the same.
func FuzzUDPDatagram(f *testing.F) {
	b := make([]byte, udpHeaderLen)
	PutUDPData(b, 3, 12345)
	f.Add(b)
	f.Add(UDPHello(bytes.Repeat([]byte{1}, UDPTokenLen)))
	f.Add([]byte("LHD1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if tok, ok := ParseUDPHello(b); ok && !bytes.Equal(UDPHello(tok[:]), b) {
			t.Errorf("hello %x read as %x", b, tok)
		}
		if seq, sent, ok := ParseUDPData(b); ok {
			w := make([]byte, udpHeaderLen)
			PutUDPData(w, seq, sent)
			if !bytes.Equal(w, b[:udpHeaderLen]) {
				t.Errorf("data %x read as %d %d", b, seq, sent)
			}
		}
	})
}
