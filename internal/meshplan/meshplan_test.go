package meshplan

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
)

func base() Input {
	return Input{Sites: 30, Topology: Full, Interval: 5 * time.Minute, RTT: 50 * time.Millisecond, RateBps: 100e6, Streams: 4}
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want)) }

// The estimate against a hand computation: 30 sites, 50 ms at 100
// Mbit/s (94.148 Mbit/s of payload), phases of 40 round trips = 2 s.
func TestEstimateByHand(t *testing.T) {
	p, err := Estimate(base())
	if err != nil {
		t.Fatal(err)
	}
	// Set-up 1 + 4 x 0.05 + 10 x 0.1 = 2.2 s; a phase 2 + 1.5 + 3 x 0.05.
	if p.PhaseS != 2 || p.PhaseCut || !near(p.ProbeS, 2.2+3*3.65) {
		t.Errorf("phase %g s (cut %v), probe %g s; want 2 s, 13.15 s", p.PhaseS, p.PhaseCut, p.ProbeS)
	}
	// One stream: a window of 588,426.5 B; slow start from 14,480 B
	// takes 6 round trips (63 x 14,480 B), the other 34 carry the window.
	one := 14480*63 + 34*588426.53
	// Four streams: 147,106.6 B each, 4 round trips of slow start.
	four := 4 * (14480*15 + 36*147106.63)
	want := []float64{one, one, four}
	if len(p.Phases) != 3 {
		t.Fatalf("phases %+v", p.Phases)
	}
	for i, ph := range p.Phases {
		if math.Abs(ph.Bytes-want[i]) > 1 {
			t.Errorf("%s: %.0f bytes, want %.0f", ph.Name, ph.Bytes, want[i])
		}
	}
	if math.Abs(p.ProbeBytes-(2*one+four)) > 3 {
		t.Errorf("probe: %.0f bytes, want %.0f", p.ProbeBytes, 2*one+four)
	}
	// 870 probes every 5 min; a target is probed 29 times: 381.35 s of
	// every 300 s, so they cannot fit; 382 s would, 13 min keeps it
	// under half busy. 288 intervals a day.
	if p.Paths != 870 || p.Target.Probes != 29 || !near(p.Target.BusyShare, 29*p.ProbeS/300) || p.Fits ||
		p.ShortestS != 382 || p.SuggestedS != 780 {
		t.Errorf("load: %+v", p)
	}
	if !near(p.Target.BytesPerDay, 29*288*p.ProbeBytes) || !near(p.MeshBytesPerDay, 870*288*p.ProbeBytes) ||
		p.Link.Probes != 58 || p.Prober.Probes != 29 || p.ProberShortestS != 382 {
		t.Errorf("per day: target %g, mesh %g, link %d, prober %d", p.Target.BytesPerDay, p.MeshBytesPerDay, p.Link.Probes, p.Prober.Probes)
	}
	if !near(p.QueueS, 29.5-p.ProbeS) {
		t.Errorf("a probe may wait %g s for a busy target, want %g", p.QueueS, 29.5-p.ProbeS)
	}
}

// Hubs and partial meshes: who probes whom.
func TestEstimateTopologies(t *testing.T) {
	for _, tc := range []struct {
		mod                         func(*Input)
		paths, target, prober, link int
	}{
		{func(in *Input) { in.Topology, in.Hubs = Hub, 2 }, 58, 2, 29, 30},
		{func(in *Input) { in.Topology, in.Peers = Partial, 3 }, 90, 3, 3, 6},
		{func(in *Input) { in.Sites = 2 }, 2, 1, 1, 2},
	} {
		in := base()
		tc.mod(&in)
		p, err := Estimate(in)
		if err != nil || p.Paths != tc.paths || p.Target.Probes != tc.target || p.Prober.Probes != tc.prober || p.Link.Probes != tc.link {
			t.Errorf("%+v: %d paths, target %d, prober %d, link %d (%v); want %d, %d, %d, %d",
				in, p.Paths, p.Target.Probes, p.Prober.Probes, p.Link.Probes, err, tc.paths, tc.target, tc.prober, tc.link)
		}
		if !p.Fits && in.Topology != Full {
			t.Errorf("%s: %d probes of 13 s a target do not fit 5 min?", in.Topology, p.Target.Probes)
		}
	}
}

// The caps: --probe-max-bytes paces a phase at bytes x 8 / length, a
// window bounds each stream, no capacity phase without streams.
func TestEstimateCaps(t *testing.T) {
	in := base()
	in.MaxBytes = 5e6 // 20 Mbit/s over 2 s
	p, _ := Estimate(in)
	// One stream at 20 Mbit/s: a window of 125,000 B, 4 round trips of
	// slow start; four at 5 Mbit/s: 31,250 B each, 2 round trips.
	one, four := 14480*15+36*125000.0, 4*(14480*3+38*31250.0)
	if math.Abs(p.Phases[0].Bytes-one) > 1 || math.Abs(p.Phases[2].Bytes-four) > 1 || p.Phases[0].Bytes > 5e6 {
		t.Errorf("--probe-max-bytes 5MB: %+v, want %.0f and %.0f", p.Phases, one, four)
	}
	in = base()
	in.Window = 256 << 10 // 41.9 Mbit/s at 50 ms
	p, _ = Estimate(in)
	if w := 14480*31 + 35*262144.0; math.Abs(p.Phases[1].Bytes-w) > 1 {
		t.Errorf("--window 256KiB: upload %.0f bytes, want %.0f", p.Phases[1].Bytes, w)
	}
	in = base()
	in.Streams = 1
	if p, _ = Estimate(in); len(p.Phases) != 2 || !near(p.ProbeS, 2.2+2*3.65) {
		t.Errorf("--probe-streams 1: %d phases, %g s", len(p.Phases), p.ProbeS)
	}
}

// Long paths: phases of 40 round trips are cut to the deadline as the
// client cuts them; a path whose probe cannot fit it, or a fixed phase
// that does not, is refused in one line.
func TestEstimateDeadline(t *testing.T) {
	in := base()
	in.RTT = 170 * time.Millisecond
	p, err := Estimate(in)
	// Set-up 3.88 s; 29.5 - 3.88 - 0.5 = 25.12 s for 3 phases of 2.01
	// s overhead: 6.36 s each, cut to 6.3 s from the 6.8 s asked.
	if err != nil || !p.PhaseCut || p.PhaseS != 6.3 || p.ProbeS > 29.5 {
		t.Errorf("170 ms: phase %g s (cut %v), probe %g s, %v", p.PhaseS, p.PhaseCut, p.ProbeS, err)
	}
	for _, tc := range []struct {
		mod  func(*Input)
		want string
	}{
		{func(in *Input) { in.RTT = 2 * time.Second }, "raise the scrape timeout"},
		{func(in *Input) { in.Phase = 20 * time.Second }, "--probe-phase 20s"},
		{func(in *Input) { in.Sites = 1 }, "--sites"},
		{func(in *Input) { in.Topology = "star" }, "--topology"},
		{func(in *Input) { in.Topology = Hub }, "--hubs"},
		{func(in *Input) { in.Topology, in.Hubs = Hub, 30 }, "--hubs"},
		{func(in *Input) { in.Hubs = 2 }, "--hubs is for --topology hub"},
		{func(in *Input) { in.Topology, in.Peers = Partial, 30 }, "--peers"},
		{func(in *Input) { in.Peers = 2 }, "--peers is for"},
		{func(in *Input) { in.Interval = 5 * time.Second }, "--interval"},
		{func(in *Input) { in.RateBps = 0 }, "--path"},
		{func(in *Input) { in.RateBps = math.NaN() }, "--path"},
		{func(in *Input) { in.Streams = 65 }, "--probe-streams"},
		{func(in *Input) { in.MaxBytes = -1 }, "negative"},
	} {
		in := base()
		tc.mod(&in)
		_, err := Estimate(in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !badinput.Is(err) {
			t.Errorf("%+v: %v, want one line of bad input naming %q", in, err, tc.want)
		}
	}
}
