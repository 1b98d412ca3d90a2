package tcpflow

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
)

// TestSilentAckTimes: for the ACKs a one-way transfer's data segments
// carry, silentAckTimes leaves the silent direction exactly as ackTimes
// does, ACK after ACK, with or without the handshake's RTT, with the
// sender at the capture or away from it, and from a first ACK before or
// after one RTT into the capture.
func TestSilentAckTimes(t *testing.T) {
	seg := &capture.Segment{IPVersion: 4, SrcPort: 50000, DstPort: 443, Flags: capture.FlagACK}
	for _, tc := range []struct {
		name      string
		handshake bool  // the handshake gives the RTT (else 0: unknown)
		lag       int64 // the silent direction's sender lag (record's ring when > 0)
		start     int64
	}{
		{"no handshake", false, 0, 0},
		{"handshake", true, 0, 0},
		{"handshake, late start", true, 0, int64(3 * time.Second)},
		{"handshake, lagged sender", true, int64(20 * time.Millisecond), 0},
		{"no handshake, lagged sender", false, int64(5 * time.Millisecond), int64(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &Options{}
			flows := [2]*Flow{newFlow(1, seg, 0, opts), newFlow(1, seg, 0, opts)}
			for _, f := range flows {
				if tc.handshake {
					f.synT, f.synAckT, f.ackT = 0, int64(30*time.Millisecond), int64(50*time.Millisecond)
					f.setHandshakeRTT()
				}
				f.dir[1].d = tc.lag
			}
			if tc.handshake && flows[0].hsRTT != int64(50*time.Millisecond) {
				t.Fatalf("hsRTT %d, want 50 ms", flows[0].hsRTT)
			}
			rng := rand.New(rand.NewPCG(1, uint64(len(tc.name))))
			at := tc.start
			for n := range 5000 {
				// Gaps from 0 to 150 ms: bursts, pauses past the RTT, and
				// exactly the RTT or half of it (the windows' edges).
				switch rng.IntN(6) {
				case 0:
				case 1:
					at += rng.Int64N(int64(time.Millisecond))
				case 2:
					at += rng.Int64N(int64(20 * time.Millisecond))
				case 3:
					at += int64(50 * time.Millisecond)
				case 4:
					at += int64(25 * time.Millisecond)
				default:
					at += rng.Int64N(int64(150 * time.Millisecond))
				}
				a, b := &flows[0].dir[1], &flows[1].dir[1]
				if !a.silent() {
					t.Fatalf("ACK %d: the direction is not silent", n)
				}
				flows[0].ackTimes(a, at)
				flows[1].silentAckTimes(b, at)
				if !reflect.DeepEqual(*a, *b) {
					t.Fatalf("ACK %d at %v: silentAckTimes left\n%+v\nackTimes\n%+v", n, time.Duration(at), b.ct, a.ct)
				}
			}
		})
	}
}

// TestKeptValues: what a flow keeps instead of working out per packet
// (effMSS's eff, the handshake's hsRTT) is what it would work out, at the
// end of every truth capture's analysis.
func TestKeptValues(t *testing.T) {
	for _, p := range truthPaths(t) {
		a := followed(t, p)
		for _, f := range a.flows {
			want := int64(0)
			if h1, h2, ok := f.halves(); ok {
				want = h1 + h2
			}
			if f.hsRTT != want {
				t.Errorf("%s flow %d: hsRTT %d, handshake %d", filepath.Base(p), f.ID, f.hsRTT, want)
			}
			for i := range f.dir {
				if d := &f.dir[i]; d.effMSS() != d.calcMSS() {
					t.Errorf("%s flow %d dir %d: kept MSS %d, worked out %d", filepath.Base(p), f.ID, i, d.effMSS(), d.calcMSS())
				}
			}
		}
		if len(a.flows) == 0 {
			t.Errorf("%s: no flows", p)
		}
	}
}

// truthPaths lists the truth captures (testdata/truth).
func truthPaths(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob("testdata/truth/*.pcap.gz")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no truth captures (%v)", err)
	}
	return paths
}

// followed runs an analyzer over the capture at path and returns it
// before Finish, its flows' state as the last packet left it.
func followed(t *testing.T, path string) *Analyzer {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	rd, err := capture.Open(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	a := New(Options{})
	a.clock.floor = rd.Unit()
	_ = a.run(rd)
	return a
}

// TestExtendSameTimelines: every flow direction's timeline of every
// truth capture is the same, field for field, whether addSample gives
// the plain samples to Timeline.Extend or every sample to
// AddSample (Extend's own test holds the two to one result for any
// sample stream; this one holds addSample to Extend's terms: no flag
// set on a sample it hands over).
func TestExtendSameTimelines(t *testing.T) {
	for _, p := range truthPaths(t) {
		ext := followed(t, p)
		extendOff = true
		all := followed(t, p)
		extendOff = false
		if len(ext.flows) != len(all.flows) {
			t.Fatalf("%s: %d flows with Extend, %d without", filepath.Base(p), len(ext.flows), len(all.flows))
		}
		for k, f := range ext.flows {
			for i := range f.dir {
				if a, b := &f.dir[i].tl, &all.flows[k].dir[i].tl; !reflect.DeepEqual(a, b) {
					t.Errorf("%s flow %d dir %d: timeline with Extend\n%+v\nwithout\n%+v", filepath.Base(p), f.ID, i, *a, *b)
				}
			}
		}
	}
}

// TestSilent: a direction is silent until any of the seven counts
// silent reads is set, each on its own enough (the counts are ORed
// together, a term dropped would pass for silent).
func TestSilent(t *testing.T) {
	sets := map[string]func(d *direction){
		"segs":        func(d *direction) { d.segs = 1 },
		"sndMax":      func(d *direction) { d.sndMax = 1448 },
		"nsack":       func(d *direction) { d.nsack = 1 },
		"sacked":      func(d *direction) { d.sacked = 1448 },
		"retrans":     func(d *direction) { d.retrans = 1 },
		"delivered":   func(d *direction) { d.ct.delivered = 1448 },
		"ivDelivered": func(d *direction) { d.ct.ivDelivered = 1448 },
		"sndMax<0":    func(d *direction) { d.sndMax = -1 },
	}
	if d := (&direction{}); !d.silent() {
		t.Fatal("a new direction is not silent")
	}
	for name, set := range sets {
		d := &direction{}
		set(d)
		if d.silent() {
			t.Errorf("%s set: still silent", name)
		}
	}
}
