package tcpflow

import "testing"

// TestOWDTrack: a sender's 1 kHz timestamps against arrival times: the
// clock is found after 100 ms, the samples before it replayed, and a
// queue that grows to 40 ms and drains reads as a 90th percentile near
// its top and, just after its peak, in the recent window; a clock that is
// none of the known ones (10 kHz) leaves the track unusable.
func TestOWDTrack(t *testing.T) {
	var o owdTrack
	const ms = int64(1e6)
	// 2 s of data every ms; the queue rises 0 -> 40 ms over 0.5-1.0 s and
	// drains by 1.5 s.
	queue := func(at int64) int64 {
		switch {
		case at < 500*ms || at >= 1500*ms:
			return 0
		case at < 1000*ms:
			return (at - 500*ms) * 40 / 500
		}
		return (1500*ms - at) * 40 / 500
	}
	base := uint32(4_000_000_000) // wraps
	for at := int64(0); at < 2000*ms; at += ms {
		o.add(at+queue(at)+30*ms, base+uint32(at/ms))
	}
	if !o.ok() || o.nsPerTS != 1e6 {
		t.Fatalf("clock %v ns per tick, ok %v", o.nsPerTS, o.ok())
	}
	if q := o.queue90(); q < 20*ms || q > 40*ms {
		t.Errorf("90th percentile queue %d ms, want 20-40", q/ms)
	}
	// The ring holds the last 64 samples: the queue drained.
	if q := o.recentQueue(2000*ms, 100*ms); q > ms {
		t.Errorf("recent queue %d ns after draining", q)
	}
	var mid owdTrack
	for at := int64(0); at <= 1000*ms; at += ms {
		mid.add(at+queue(at), uint32(at/ms))
	}
	if q := mid.recentQueue(1000*ms+40*ms, 200*ms); q < 35*ms {
		t.Errorf("recent queue at the top %d ms, want about 40", q/ms)
	}
	var odd owdTrack
	for at := int64(0); at < 500*ms; at += ms {
		odd.add(at, uint32(at/ms*10)) // 10 kHz
	}
	if odd.ok() {
		t.Errorf("a 10 kHz clock taken as %v ns", odd.nsPerTS)
	}
}
