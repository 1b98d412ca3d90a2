package linkemu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLossSplitsSuperPacket(t *testing.T) {
	const d = 10 * time.Millisecond
	tests := []struct {
		name     string
		cfg      Config
		arrivals []arrival
		want     []Verdict
	}{
		{
			// Lost segments take no serialization time: segments 4..9 follow
			// segments 0..2 directly, so the second run ends after 9 txFull.
			name:     "segment 3 lost keeps {0,3} and {4,6}",
			cfg:      Config{RateBps: gbit, Delay: d, Loss: dropSegs{3: true}},
			arrivals: []arrival{{0, gso(10)}},
			want: []Verdict{{
				Due: d + 9*txFull,
				Keep: []Run{
					{First: 0, Count: 3, Due: d + 3*txFull},
					{First: 4, Count: 6, Due: d + 9*txFull},
				},
				Drops: DropCounts{Loss: 1},
			}},
		},
		{
			name:     "first and last segments lost",
			cfg:      Config{RateBps: gbit, Loss: dropSegs{0: true, 9: true}},
			arrivals: []arrival{{0, gso(10)}},
			want: []Verdict{{
				Due:   8 * txFull,
				Keep:  []Run{{First: 1, Count: 8, Due: 8 * txFull}},
				Drops: DropCounts{Loss: 2},
			}},
		},
		{
			name:     "several losses make several runs",
			cfg:      Config{RateBps: gbit, Loss: dropSegs{2: true, 3: true, 5: true, 7: true}},
			arrivals: []arrival{{0, gso(8)}},
			want: []Verdict{{
				Due: 4 * txFull,
				Keep: []Run{
					{First: 0, Count: 2, Due: 2 * txFull},
					{First: 4, Count: 1, Due: 3 * txFull},
					{First: 6, Count: 1, Due: 4 * txFull},
				},
				Drops: DropCounts{Loss: 4},
			}},
		},
		{
			name:     "all segments lost",
			cfg:      Config{RateBps: gbit, Loss: dropSegs{0: true, 1: true, 2: true}},
			arrivals: []arrival{{0, gso(3)}, {0, plain(1500)}},
			want:     []Verdict{{Drops: DropCounts{Loss: 3}}, {Due: txFull, Whole: true}},
		},
		{
			name:     "plain packet lost, next one unaffected",
			cfg:      Config{RateBps: gbit, Loss: dropSegs{0: true}},
			arrivals: []arrival{{0, plain(1500)}, {0, plain(1500)}},
			want:     []Verdict{{Drops: DropCounts{Loss: 1}}, {Due: txFull, Whole: true}},
		},
		{
			// Loss is decided before the queue: a lost segment frees room.
			name:     "loss and queue drops in one super-packet",
			cfg:      Config{RateBps: gbit, QueuePackets: 4, Loss: dropSegs{1: true}},
			arrivals: []arrival{{0, gso(8)}},
			want: []Verdict{{
				Due: 4 * txFull,
				Keep: []Run{
					{First: 0, Count: 1, Due: txFull},
					{First: 2, Count: 3, Due: 4 * txFull},
				},
				Drops: DropCounts{Loss: 1, Queue: 3},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := enqueueAll(mustNew(t, tt.cfg), tt.arrivals)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJitterNeverReorders(t *testing.T) {
	cfg := Config{RateBps: gbit, Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 42}
	run := func(cfg Config) []time.Duration {
		l := mustNew(t, cfg)
		arr := rand.New(rand.NewPCG(7, 7))
		var now time.Duration
		var dues []time.Duration
		for i := range 100000 {
			now += time.Duration(arr.Int64N(int64(120 * time.Microsecond))) // ~85% load
			p := plain(1500)
			if i%3 == 0 {
				p = gso(1 + arr.IntN(20))
			}
			v := l.Enqueue(now, p, uint64(i))
			if !v.Whole {
				t.Fatalf("packet %d: not whole: %+v", i, v)
			}
			dues = append(dues, v.Due)
			for {
				if _, _, ok := l.PopDue(now); !ok {
					break
				}
			}
		}
		return dues
	}
	dues := run(cfg)
	noJitter := cfg
	noJitter.Jitter = 0
	base := run(noJitter)
	var sum time.Duration
	for i := range dues {
		if i > 0 && dues[i] < dues[i-1] {
			t.Fatalf("packet %d due %v before packet %d due %v", i, dues[i], i-1, dues[i-1])
		}
		// Clamped jitter: due = max over earlier packets of finish+delay+U,
		// so it lies between the jitter-free due and that plus Jitter.
		extra := dues[i] - base[i]
		if extra < 0 || extra > cfg.Jitter {
			t.Fatalf("packet %d: jitter added %v, want within [0, %v]", i, extra, cfg.Jitter)
		}
		sum += extra
	}
	if mean := sum / time.Duration(len(dues)); mean < cfg.Jitter/2 {
		t.Errorf("mean added jitter %v, want at least %v", mean, cfg.Jitter/2)
	}
	if diff := cmp.Diff(dues, run(cfg)); diff != "" {
		t.Errorf("same seed gave different due times (-first +second):\n%s", diff)
	}
}

func TestJitterBounds(t *testing.T) {
	// Packets far apart: no clamping, due - now - delay - serialization must
	// span [0, Jitter].
	cfg := Config{RateBps: gbit, Delay: 10 * time.Millisecond, Jitter: time.Millisecond, Seed: 1}
	l := mustNew(t, cfg)
	var lo, hi time.Duration = math.MaxInt64, -1
	for i := range 10000 {
		now := time.Duration(i) * 10 * time.Millisecond
		j := l.Enqueue(now, plain(1500), 0).Due - now - cfg.Delay - txFull
		lo, hi = min(lo, j), max(hi, j)
	}
	if lo < 0 || hi > cfg.Jitter || lo > 10*time.Microsecond || hi < cfg.Jitter-10*time.Microsecond {
		t.Errorf("jitter range [%v, %v], want about [0, %v]", lo, hi, cfg.Jitter)
	}
}

func TestBernoulliRate(t *testing.T) {
	const n = 100000
	for _, p := range []float64{0, 0.001, 0.01, 0.1, 0.5, 1} {
		t.Run("", func(t *testing.T) {
			l := mustNew(t, Config{Loss: Bernoulli{P: p}, Seed: 3})
			for i := range n {
				l.Enqueue(0, plain(100), uint64(i))
				l.PopDue(0)
			}
			got := l.Stats().DropsLoss
			mean := p * n
			tol := 5*math.Sqrt(n*p*(1-p)) + 1 // 5 sigma
			if math.Abs(float64(got)-mean) > tol {
				t.Errorf("p=%v: %d losses in %d segments, want %v ± %v", p, got, n, mean, tol)
			}
		})
	}
}

// burstStats returns the loss fraction and the mean length of runs of
// consecutive lost segments.
func burstStats(t *testing.T, m LossModel, n int) (rate, meanBurst float64) {
	t.Helper()
	l := mustNew(t, Config{Loss: m, Seed: 9})
	var lost, bursts int
	prev := false
	for i := range n / 10 {
		v := l.Enqueue(0, gso(10), uint64(i))
		for {
			if _, _, ok := l.PopDue(0); !ok {
				break
			}
		}
		kept := make([]bool, 10)
		if v.Whole {
			for j := range kept {
				kept[j] = true
			}
		}
		for _, r := range v.Keep {
			for j := r.First; j < r.First+r.Count; j++ {
				kept[j] = true
			}
		}
		for _, k := range kept {
			if !k {
				lost++
				if !prev {
					bursts++
				}
			}
			prev = !k
		}
	}
	if lost != int(l.Stats().DropsLoss) {
		t.Fatalf("runs say %d lost, stats say %d", lost, l.Stats().DropsLoss)
	}
	return float64(lost) / float64(n), float64(lost) / float64(max(bursts, 1))
}

func TestGilbertElliottBursty(t *testing.T) {
	const n = 200000
	ge := GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.25, LossGood: 0, LossBad: 1}
	rate, burst := burstStats(t, ge, n)
	if want := ge.MeanLoss(); math.Abs(rate-want) > 0.2*want {
		t.Errorf("gilbert-elliott loss rate %.4f, want %.4f ± 20%%", rate, want)
	}
	// Bad-state sojourns are geometric with mean 1/PBadToGood = 4.
	if burst <= 1 || math.Abs(burst-4) > 0.5 {
		t.Errorf("gilbert-elliott mean burst %.2f, want about 4 (> 1)", burst)
	}
	// Bernoulli at the same rate: bursts of about 1.
	_, bburst := burstStats(t, Bernoulli{P: ge.MeanLoss()}, n)
	if bburst > 1.1 {
		t.Errorf("bernoulli mean burst %.2f, want about 1", bburst)
	}
}

func TestGilbertElliottMeanLoss(t *testing.T) {
	tests := []struct {
		name string
		g    GilbertElliott
		want float64
	}{
		{"bad only loses", GilbertElliott{PGoodToBad: 0.01, PBadToGood: 0.09, LossBad: 1}, 0.1},
		{"both states lose", GilbertElliott{PGoodToBad: 0.5, PBadToGood: 0.5, LossGood: 0.1, LossBad: 0.3}, 0.2},
		{"never leaves good", GilbertElliott{LossGood: 0.05, LossBad: 1}, 0.05},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.MeanLoss(); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("MeanLoss = %v, want %v", got, tt.want)
			}
		})
	}
}
