package linkemu

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	gbit = 1e9
	// txFull is the serialization time of a 1500-byte IP packet plus the
	// default 38 bytes of overhead at 1 Gbit/s: 1538*8/1e9 s.
	txFull = 12304 * time.Nanosecond
)

// plain is a one-segment packet of ipLen bytes.
func plain(ipLen int) Packet { return Packet{HeaderLen: ipLen} }

// gso is a super-packet of n full-sized TCP segments (52-byte headers with
// timestamps, 1448-byte payloads: 1500-byte IP packets).
func gso(n int) Packet {
	p := Packet{HeaderLen: 52, SegPayload: make([]int, n)}
	for i := range p.SegPayload {
		p.SegPayload[i] = 1448
	}
	return p
}

// dropSegs is a deterministic LossModel for tests: it loses the segments
// whose global arrival index (0, 1, 2, ... over all Enqueue calls, overload
// drops excluded) is in the set.
type dropSegs map[int]bool

func (d dropSegs) Validate() error    { return nil }
func (d dropSegs) Start() LossProcess { return &dropSegsProc{set: d} }

type dropSegsProc struct {
	set dropSegs
	n   int
}

func (p *dropSegsProc) Lost(*rand.Rand) bool {
	lost := p.set[p.n]
	p.n++
	return lost
}

func mustNew(t testing.TB, c Config) *Link {
	t.Helper()
	l, err := New(c)
	if err != nil {
		t.Fatalf("New(%+v): %v", c, err)
	}
	return l
}

type arrival struct {
	at time.Duration
	p  Packet
}

func enqueueAll(l *Link, arrivals []arrival) []Verdict {
	var got []Verdict
	for i, a := range arrivals {
		got = append(got, l.Enqueue(a.at, a.p, uint64(i)))
	}
	return got
}

func TestDepartureTimes(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		arrivals []arrival
		want     []Verdict
	}{
		{
			name:     "1500 bytes + 38 overhead at 1 Gbit/s takes 12.304 us",
			cfg:      Config{RateBps: gbit},
			arrivals: []arrival{{0, plain(1500)}},
			want:     []Verdict{{Due: txFull, Whole: true}},
		},
		{
			name:     "back-to-back packets queue behind each other",
			cfg:      Config{RateBps: gbit},
			arrivals: []arrival{{0, plain(1500)}, {0, plain(1500)}, {time.Microsecond, plain(1500)}},
			want:     []Verdict{{Due: txFull, Whole: true}, {Due: 2 * txFull, Whole: true}, {Due: 3 * txFull, Whole: true}},
		},
		{
			name:     "packet after the link went idle starts at now",
			cfg:      Config{RateBps: gbit},
			arrivals: []arrival{{0, plain(1500)}, {time.Millisecond, plain(1500)}},
			want:     []Verdict{{Due: txFull, Whole: true}, {Due: time.Millisecond + txFull, Whole: true}},
		},
		{
			name:     "arrival exactly when the link frees starts then",
			cfg:      Config{RateBps: gbit},
			arrivals: []arrival{{0, plain(1500)}, {txFull, plain(1500)}},
			want:     []Verdict{{Due: txFull, Whole: true}, {Due: 2 * txFull, Whole: true}},
		},
		{
			name:     "delay added after serialization",
			cfg:      Config{RateBps: gbit, Delay: 100 * time.Millisecond},
			arrivals: []arrival{{0, plain(1500)}, {0, plain(1500)}},
			want: []Verdict{
				{Due: 100*time.Millisecond + txFull, Whole: true},
				{Due: 100*time.Millisecond + 2*txFull, Whole: true},
			},
		},
		{
			name:     "unlimited rate: due is now plus delay",
			cfg:      Config{Delay: 50 * time.Millisecond},
			arrivals: []arrival{{0, gso(40)}, {0, plain(1500)}, {time.Second, plain(64)}},
			want: []Verdict{
				{Due: 50 * time.Millisecond, Whole: true},
				{Due: 50 * time.Millisecond, Whole: true},
				{Due: time.Second + 50*time.Millisecond, Whole: true},
			},
		},
		{
			name:     "no overhead counts IP bytes only",
			cfg:      Config{RateBps: gbit, Overhead: NoOverhead},
			arrivals: []arrival{{0, plain(1500)}},
			want:     []Verdict{{Due: 12 * time.Microsecond, Whole: true}},
		},
		{
			name:     "custom overhead",
			cfg:      Config{RateBps: gbit, Overhead: 100},
			arrivals: []arrival{{0, plain(1500)}},
			want:     []Verdict{{Due: 12800 * time.Nanosecond, Whole: true}},
		},
		{
			name:     "small packet",
			cfg:      Config{RateBps: gbit},
			arrivals: []arrival{{0, plain(52)}},
			want:     []Verdict{{Due: 720 * time.Nanosecond, Whole: true}}, // 90 B
		},
		{
			name:     "gso super-packet whole, due at its last segment",
			cfg:      Config{RateBps: gbit, Delay: time.Millisecond},
			arrivals: []arrival{{0, gso(10)}, {0, plain(1500)}},
			want: []Verdict{
				{Due: time.Millisecond + 10*txFull, Whole: true},
				{Due: time.Millisecond + 11*txFull, Whole: true},
			},
		},
		{
			name:     "10 Mbit/s",
			cfg:      Config{RateBps: 10e6},
			arrivals: []arrival{{0, plain(1500)}},
			want:     []Verdict{{Due: 1230400 * time.Nanosecond, Whole: true}},
		},
		{
			// 1538*8/3e9 s = 4101.333 ns: due rounds up, rounding does not
			// accumulate (3 packets = 12304 ns exactly).
			name:     "fractional nanoseconds round up without accumulating",
			cfg:      Config{RateBps: 3e9},
			arrivals: []arrival{{0, plain(1500)}, {0, plain(1500)}, {0, plain(1500)}},
			want: []Verdict{
				{Due: 4102 * time.Nanosecond, Whole: true},
				{Due: 8203 * time.Nanosecond, Whole: true},
				{Due: 12304 * time.Nanosecond, Whole: true},
			},
		},
		{
			name:     "clock going backwards is treated as the last now",
			cfg:      Config{RateBps: gbit},
			arrivals: []arrival{{time.Millisecond, plain(1500)}, {0, plain(1500)}},
			want: []Verdict{
				{Due: time.Millisecond + txFull, Whole: true},
				{Due: time.Millisecond + 2*txFull, Whole: true},
			},
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

func TestQueueDrops(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		arrivals []arrival
		want     []Verdict
	}{
		{
			name: "packet limit drops the 4th back-to-back packet",
			cfg:  Config{RateBps: gbit, QueuePackets: 3},
			arrivals: []arrival{
				{0, plain(1500)}, {0, plain(1500)}, {0, plain(1500)}, {0, plain(1500)},
				// At txFull the first packet has left: room for one more.
				{txFull, plain(1500)}, {txFull, plain(1500)},
			},
			want: []Verdict{
				{Due: txFull, Whole: true},
				{Due: 2 * txFull, Whole: true},
				{Due: 3 * txFull, Whole: true},
				{Drops: DropCounts{Queue: 1}},
				{Due: 4 * txFull, Whole: true},
				{Drops: DropCounts{Queue: 1}},
			},
		},
		{
			name: "byte limit drops the packet that would exceed it",
			cfg:  Config{RateBps: gbit, QueueBytes: 2*1538 + 100},
			arrivals: []arrival{
				{0, plain(1500)}, {0, plain(1500)}, {0, plain(1500)},
				{0, plain(62)}, // 100 wire bytes: fits exactly
				{0, plain(1)},  // does not
			},
			want: []Verdict{
				{Due: txFull, Whole: true},
				{Due: 2 * txFull, Whole: true},
				{Drops: DropCounts{Queue: 1}},
				{Due: 2*txFull + 800*time.Nanosecond, Whole: true},
				{Drops: DropCounts{Queue: 1}},
			},
		},
		{
			name:     "10-segment gso packet with room for 6 keeps run {0,6}",
			cfg:      Config{RateBps: gbit, QueuePackets: 6},
			arrivals: []arrival{{0, gso(10)}},
			want: []Verdict{{
				Due:   6 * txFull,
				Keep:  []Run{{First: 0, Count: 6, Due: 6 * txFull}},
				Drops: DropCounts{Queue: 4},
			}},
		},
		{
			name:     "byte queue limit inside a super-packet",
			cfg:      Config{RateBps: gbit, QueueBytes: 6*1538 + 1000},
			arrivals: []arrival{{0, gso(10)}},
			want: []Verdict{{
				Due:   6 * txFull,
				Keep:  []Run{{First: 0, Count: 6, Due: 6 * txFull}},
				Drops: DropCounts{Queue: 4},
			}},
		},
		{
			name: "queue partly occupied by an earlier packet",
			cfg:  Config{RateBps: gbit, QueuePackets: 6, Delay: time.Millisecond},
			arrivals: []arrival{
				{0, plain(1500)}, {0, plain(1500)},
				// At 1.5 txFull the first has left, the second is on the wire:
				// room for 5 segments of the super-packet.
				{txFull + txFull/2, gso(8)},
			},
			want: []Verdict{
				{Due: time.Millisecond + txFull, Whole: true},
				{Due: time.Millisecond + 2*txFull, Whole: true},
				{
					Due:   time.Millisecond + 7*txFull,
					Keep:  []Run{{First: 0, Count: 5, Due: time.Millisecond + 7*txFull}},
					Drops: DropCounts{Queue: 3},
				},
			},
		},
		{
			name:     "segment larger than the byte queue is always dropped",
			cfg:      Config{RateBps: gbit, QueueBytes: 1538},
			arrivals: []arrival{{0, plain(9000)}, {0, plain(1500)}},
			want:     []Verdict{{Drops: DropCounts{Queue: 1}}, {Due: txFull, Whole: true}},
		},
		{
			name:     "no queue without a rate limit",
			cfg:      Config{QueuePackets: 1},
			arrivals: []arrival{{0, gso(10)}, {0, gso(10)}},
			want:     []Verdict{{Whole: true}, {Whole: true}},
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

func TestOverload(t *testing.T) {
	l := mustNew(t, Config{Delay: time.Millisecond, MaxPending: 3, Loss: dropSegs{}})
	var got []Verdict
	for i := range 3 {
		got = append(got, l.Enqueue(0, plain(1500), uint64(i)))
	}
	got = append(got, l.Enqueue(0, gso(5), 3))    // FIFO full: overload
	got = append(got, l.Enqueue(0, plain(60), 4)) // still full
	want := []Verdict{
		{Due: time.Millisecond, Whole: true},
		{Due: time.Millisecond, Whole: true},
		{Due: time.Millisecond, Whole: true},
		{Drops: DropCounts{Overload: 5}},
		{Drops: DropCounts{Overload: 1}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	// Overload drops do not advance the loss process.
	if n := l.loss.(*dropSegsProc).n; n != 3 {
		t.Errorf("loss process saw %d segments, want 3", n)
	}
	if _, _, ok := l.PopDue(time.Millisecond); !ok {
		t.Fatal("PopDue: nothing due")
	}
	if v := l.Enqueue(time.Millisecond, plain(1500), 5); !v.Whole {
		t.Errorf("after a pop: %+v, want accepted", v)
	}
	st := l.Stats()
	if diff := cmp.Diff(Stats{Packets: 4, Segments: 4, Bytes: 4 * 1538, DropsOverload: 6, Overloaded: true}, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestOverloadCountsSplitPacketOnce(t *testing.T) {
	// A split packet occupies one slot of MaxPending until its last run pops.
	l := mustNew(t, Config{MaxPending: 1, Loss: dropSegs{1: true}})
	if v := l.Enqueue(0, gso(3), 1); len(v.Keep) != 2 {
		t.Fatalf("want two runs, got %+v", v)
	}
	if v := l.Enqueue(0, plain(100), 2); v.Drops.Overload != 1 {
		t.Fatalf("want overload drop, got %+v", v)
	}
	if _, v, _ := l.PopDue(0); v.Final {
		t.Fatalf("first run popped as final: %+v", v)
	}
	if v := l.Enqueue(0, plain(100), 3); v.Drops.Overload != 1 {
		t.Fatalf("want overload drop with one run still pending, got %+v", v)
	}
	if _, v, _ := l.PopDue(0); !v.Final {
		t.Fatalf("second run not final: %+v", v)
	}
	if v := l.Enqueue(0, plain(100), 4); !v.Whole {
		t.Fatalf("want accepted, got %+v", v)
	}
}

func TestLateness(t *testing.T) {
	type lateness struct {
		P50, P99, Max time.Duration
		Delivered     int64
		LateOverMax   int64
		Overloaded    bool
	}
	tests := []struct {
		name  string
		cfg   Config
		lates []time.Duration
		want  lateness
	}{
		{
			name: "nothing delivered",
			want: lateness{},
		},
		{
			name:  "1..100 us",
			lates: seq(100, time.Microsecond),
			want:  lateness{P50: 50 * time.Microsecond, P99: 99 * time.Microsecond, Max: 100 * time.Microsecond, Delivered: 100},
		},
		{
			name:  "sub-microsecond lateness rounds up, early counts as 0",
			lates: []time.Duration{-time.Millisecond, 0, 1, 999, time.Microsecond + 1},
			want:  lateness{P50: time.Microsecond, P99: time.Microsecond + 1, Max: time.Microsecond + 1, Delivered: 5}, // p99 capped at max
		},
		{
			// 1..1000 ms: above 1 ms buckets are 1/512 of an octave wide;
			// the reported value is the bucket's upper bound.
			name:  "1..1000 ms over default max lateness",
			lates: seq(1000, time.Millisecond),
			want: lateness{
				P50: 500223 * time.Microsecond, P99: 990207 * time.Microsecond, Max: time.Second,
				Delivered: 1000, LateOverMax: 995, Overloaded: true,
			},
		},
		{
			name:  "exactly max lateness is fine",
			cfg:   Config{MaxLateness: 2 * time.Millisecond},
			lates: []time.Duration{2 * time.Millisecond, time.Millisecond},
			want:  lateness{P50: time.Millisecond, P99: 2 * time.Millisecond, Max: 2 * time.Millisecond, Delivered: 2},
		},
		{
			name:  "configured max lateness",
			cfg:   Config{MaxLateness: 500 * time.Microsecond},
			lates: []time.Duration{100 * time.Microsecond, 600 * time.Microsecond},
			want: lateness{P50: 100 * time.Microsecond, P99: 600 * time.Microsecond, Max: 600 * time.Microsecond,
				Delivered: 2, LateOverMax: 1, Overloaded: true},
		},
		{
			name:  "negative max lateness disables the check",
			cfg:   Config{MaxLateness: -1},
			lates: []time.Duration{time.Second},
			want:  lateness{P50: time.Second, P99: time.Second, Max: time.Second, Delivered: 1},
		},
		{
			name:  "beyond the histogram range",
			lates: []time.Duration{time.Minute},
			want:  lateness{P50: time.Minute, P99: time.Minute, Max: time.Minute, Delivered: 1, LateOverMax: 1, Overloaded: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustNew(t, tt.cfg)
			due := 10 * time.Second
			for _, late := range tt.lates {
				l.Delivered(due, due+late, 0)
			}
			s := l.Stats()
			got := lateness{s.LatenessP50, s.LatenessP99, s.LatenessMax, s.Delivered, s.LateOverMax, s.Overloaded}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lateness (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLatenessWaitBehindWrites(t *testing.T) {
	const ms = time.Millisecond
	due := 10 * time.Second
	type write struct{ due, start, prevEnd time.Duration }
	// Ten frames due at once, each write taking 1 ms, back to back: frame
	// i starts i ms late, all of it spent behind the writes before it.
	var burst []write
	for i := range 10 {
		start := due + time.Duration(i)*ms
		busy := time.Duration(0)
		if i > 0 {
			busy = start // the previous write ended as this one started
		}
		burst = append(burst, write{due, start, busy})
	}
	type counts struct {
		LateOverMax, SlipOverMax, OverMax int64
		WaitMax                           time.Duration
		Overloaded                        bool
	}
	tests := []struct {
		name   string
		rate   float64
		writes []write
		want   counts
	}{
		{
			name:   "unlimited: a burst written back to back is the data plane's rate",
			writes: burst,
			want:   counts{LateOverMax: 4, WaitMax: 9 * ms}, // 6..9 ms late, none of it slip
		},
		{
			name:   "rate-limited: the same burst means the writer cannot keep the rate",
			rate:   gbit,
			writes: burst,
			want:   counts{LateOverMax: 4, OverMax: 4, WaitMax: 9 * ms, Overloaded: true},
		},
		{
			name:   "unlimited: a late wake-up is slip",
			writes: []write{{due, due + 6*ms, 0}},
			want:   counts{LateOverMax: 1, SlipOverMax: 1, OverMax: 1, Overloaded: true},
		},
		{
			name:   "unlimited: a stall between writes is slip beyond the wait",
			writes: []write{{due, due + 8*ms, due + 1*ms}}, // 1 ms behind a write, then 7 ms idle
			want:   counts{LateOverMax: 1, SlipOverMax: 1, OverMax: 1, WaitMax: ms, Overloaded: true},
		},
		{
			name:   "unlimited: a write that ended before the due time explains nothing",
			writes: []write{{due, due + 6*ms, due - ms}},
			want:   counts{LateOverMax: 1, SlipOverMax: 1, OverMax: 1, Overloaded: true},
		},
		{
			name:   "unlimited: a previous write ending after the start is clamped to the start",
			writes: []write{{due, due + 6*ms, due + 9*ms}},
			want:   counts{LateOverMax: 1, WaitMax: 6 * ms},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := mustNew(t, Config{RateBps: tt.rate})
			for _, w := range tt.writes {
				l.Delivered(w.due, w.start, w.prevEnd)
			}
			s := l.Stats()
			got := counts{s.LateOverMax, s.SlipOverMax, s.OverMax, s.WaitMax, s.Overloaded}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if s.WaitP99 > s.WaitMax || s.WaitP50 > s.WaitP99 {
				t.Errorf("wait quantiles out of order: p50 %v p99 %v max %v", s.WaitP50, s.WaitP99, s.WaitMax)
			}
		})
	}
}

// seq returns 1*unit, 2*unit, ..., n*unit in a shuffled order.
func seq(n int, unit time.Duration) []time.Duration {
	s := make([]time.Duration, n)
	for i := range s {
		s[i] = time.Duration(i+1) * unit
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(n, func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<25; us += 1 + us/4096 {
		i := histIndex(us)
		if i < prev || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d after %d (buckets %d)", us, i, prev, histBuckets)
		}
		prev = i
		if us > histMaxValue {
			continue
		}
		up := histUpper(i)
		if up < us || float64(up-us) > float64(us)/512 {
			t.Fatalf("value %d µs: bucket %d upper bound %d", us, i, up)
		}
		if histIndex(up) != i || histIndex(up+1) != i+1 && up < histMaxValue {
			t.Fatalf("bucket %d: upper bound %d not at its edge", i, up)
		}
	}
	if got := histIndex(histMaxValue); got != histBuckets-1 {
		t.Errorf("histIndex(max) = %d, want %d", got, histBuckets-1)
	}
}

func TestPopDue(t *testing.T) {
	l := mustNew(t, Config{RateBps: gbit, Delay: time.Millisecond, Loss: dropSegs{3: true}})
	l.Enqueue(0, plain(1500), 10)
	l.Enqueue(0, gso(4), 11) // global segments 1..4, segment 3 = index 2 lost
	l.Enqueue(0, plain(1500), 12)

	if due, ok := l.NextDue(); !ok || due != time.Millisecond+txFull {
		t.Fatalf("NextDue = %v, %v; want %v, true", due, ok, time.Millisecond+txFull)
	}
	if h, _, ok := l.PopDue(time.Millisecond + txFull - 1); ok {
		t.Fatalf("PopDue before due returned handle %d", h)
	}

	type pop struct {
		Handle uint64
		V      Verdict
	}
	var got []pop
	// Pop everything at a late time: order must be by due time.
	for {
		h, v, ok := l.PopDue(time.Hour)
		if !ok {
			break
		}
		got = append(got, pop{h, v})
	}
	ms := time.Millisecond
	want := []pop{
		{10, Verdict{Due: ms + txFull, Whole: true, Final: true}},
		{11, Verdict{Due: ms + 3*txFull, Keep: []Run{{First: 0, Count: 2, Due: ms + 3*txFull}}}},
		{11, Verdict{Due: ms + 4*txFull, Keep: []Run{{First: 3, Count: 1, Due: ms + 4*txFull}}, Final: true}},
		{12, Verdict{Due: ms + 5*txFull, Whole: true, Final: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pops (-want +got):\n%s", diff)
	}
	if _, ok := l.NextDue(); ok {
		t.Error("NextDue after draining: ok")
	}
	if l.Pending() != 0 {
		t.Errorf("Pending = %d after draining", l.Pending())
	}
}

func TestPopDueStepByStep(t *testing.T) {
	// A long run through the ring (growth and wrap-around): each packet pops
	// exactly when due, in order.
	l := mustNew(t, Config{RateBps: gbit, Delay: 5 * time.Millisecond, Jitter: time.Millisecond, Seed: 5})
	var now time.Duration
	var next uint64
	var want uint64
	var last time.Duration
	for i := range 50000 {
		now += 10 * time.Microsecond
		if i%2 == 0 {
			l.Enqueue(now, plain(1500), next)
			next++
		}
		for {
			h, v, ok := l.PopDue(now)
			if !ok {
				break
			}
			if h != want {
				t.Fatalf("popped handle %d, want %d", h, want)
			}
			if v.Due > now || v.Due < last {
				t.Fatalf("handle %d: due %v at now %v (previous due %v)", h, v.Due, now, last)
			}
			want++
			last = v.Due
		}
		if due, ok := l.NextDue(); ok && due <= now {
			t.Fatalf("NextDue %v not after now %v after popping", due, now)
		}
	}
	if want == 0 || l.Pending() != int(next-want) {
		t.Errorf("popped %d of %d, Pending = %d", want, next, l.Pending())
	}
}

func TestStatsCounters(t *testing.T) {
	l := mustNew(t, Config{RateBps: gbit, QueuePackets: 12, Loss: dropSegs{1: true}})
	l.Enqueue(0, gso(10), 1)               // seg 1 lost, 9 accepted
	l.Enqueue(0, gso(5), 2)                // 3 accepted, 2 queue drops
	l.Enqueue(0, Packet{HeaderLen: 52}, 3) // queue drop
	want := Stats{
		Packets: 2, Segments: 12, Bytes: 12 * 1538,
		DropsQueue: 3, DropsLoss: 1,
		QueuePeakBytes: 12 * 1538, QueuePeakPackets: 12,
	}
	if diff := cmp.Diff(want, l.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{"zero value", Config{}, ""},
		{"typical", Config{Delay: 100 * time.Millisecond, Jitter: time.Millisecond, RateBps: gbit,
			QueueBytes: BDPQueue(1, gbit, 200*time.Millisecond), Loss: Bernoulli{P: 0.001}}, ""},
		{"packet queue", Config{RateBps: gbit, QueuePackets: 1000}, ""},
		{"minimum byte queue", Config{RateBps: gbit, QueueBytes: 1538}, ""},
		{"minimum byte queue without overhead", Config{RateBps: gbit, QueueBytes: 1500, Overhead: NoOverhead}, ""},
		{"negative delay", Config{Delay: -1}, "delay must not be negative"},
		{"negative jitter", Config{Jitter: -time.Millisecond}, "jitter must not be negative"},
		{"negative rate", Config{RateBps: -1}, "rate must not be negative"},
		{"nan rate", Config{RateBps: math.NaN()}, "rate must be a finite number"},
		{"infinite rate", Config{RateBps: math.Inf(1)}, "rate must be a finite number"},
		{"tiny rate", Config{RateBps: 10}, "below the minimum of 1000 bit/s"},
		{"both queue limits", Config{QueueBytes: 1 << 20, QueuePackets: 100}, "set at most one queue limit"},
		{"negative queue bytes", Config{QueueBytes: -1}, "queue bytes must not be negative"},
		{"negative queue packets", Config{QueuePackets: -1}, "queue packets must not be negative"},
		{"byte queue below one packet", Config{QueueBytes: 1537}, "the minimum is 1538 bytes"},
		{"byte queue below one packet, custom overhead", Config{QueueBytes: 1500, Overhead: 24}, "the minimum is 1524 bytes"},
		{"negative max pending", Config{MaxPending: -1}, "max pending must not be negative"},
		{"loss above 1", Config{Loss: Bernoulli{P: 1.5}}, "loss probability must be in [0,1]"},
		{"loss below 0", Config{Loss: Bernoulli{P: -0.1}}, "loss probability must be in [0,1]"},
		{"loss nan", Config{Loss: Bernoulli{P: math.NaN()}}, "loss probability must be in [0,1]"},
		{"ge transition", Config{Loss: GilbertElliott{PGoodToBad: 2}}, "good-to-bad probability must be in [0,1]"},
		{"ge bad loss", Config{Loss: GilbertElliott{LossBad: -1}}, "bad-state loss must be in [0,1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			_, newErr := New(tt.cfg)
			if tt.wantErr == "" {
				if err != nil || newErr != nil {
					t.Fatalf("Validate = %v, New = %v; want valid", err, newErr)
				}
				return
			}
			if err == nil || newErr == nil {
				t.Fatalf("Validate = %v, New = %v; want error containing %q", err, newErr, tt.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantErr) {
				t.Errorf("error %q does not contain %q", msg, tt.wantErr)
			}
			if strings.Contains(msg, "\n") || msg[:1] != strings.ToLower(msg[:1]) {
				t.Errorf("error %q is not one lowercase line", msg)
			}
		})
	}
}

func TestBDPQueue(t *testing.T) {
	tests := []struct {
		name string
		n    float64
		rate float64
		rtt  time.Duration
		want int64
	}{
		{"1 Gbit/s x 200 ms", 1, gbit, 200 * time.Millisecond, 25_000_000},
		{"half a BDP", 0.5, gbit, 200 * time.Millisecond, 12_500_000},
		{"100 Mbit/s x 80 ms", 1, 100e6, 80 * time.Millisecond, 1_000_000},
		{"floored at 100 packets", 1, 1e6, time.Millisecond, MinBDPQueue},
		{"unlimited rate", 1, 0, time.Second, 0},
		{"zero rtt", 1, gbit, 0, MinBDPQueue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := BDPQueue(tt.n, tt.rate, tt.rtt); got != tt.want {
				t.Errorf("BDPQueue(%v, %v, %v) = %d, want %d", tt.n, tt.rate, tt.rtt, got, tt.want)
			}
		})
	}
}

func TestStatsJSON(t *testing.T) {
	s := Stats{
		Packets: 1, Segments: 2, Bytes: 3, DropsQueue: 4, DropsLoss: 5, DropsOverload: 6,
		QueuePeakBytes: 7, QueuePeakPackets: 8, Delivered: 9,
		LatenessP50: 1500 * time.Microsecond, LatenessP99: 20 * time.Millisecond, LatenessMax: time.Second,
		LateOverMax: 10, WaitP50: 250 * time.Microsecond, WaitP99: 3 * time.Millisecond, WaitMax: 4 * time.Millisecond,
		SlipOverMax: 11, OverMax: 12, Overloaded: true,
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	wantMap := map[string]any{
		"packets": 1.0, "segments": 2.0, "bytes": 3.0,
		"drops_queue": 4.0, "drops_loss": 5.0, "drops_overload": 6.0,
		"queue_peak_bytes": 7.0, "queue_peak_packets": 8.0, "delivered": 9.0,
		"lateness_p50_s": 0.0015, "lateness_p99_s": 0.02, "lateness_max_s": 1.0,
		"late_over_max": 10.0, "wait_p50_s": 0.00025, "wait_p99_s": 0.003, "wait_max_s": 0.004,
		"slip_over_max": 11.0, "over_max": 12.0, "overloaded": true,
	}
	if diff := cmp.Diff(wantMap, m); diff != "" {
		t.Errorf("json (-want +got):\n%s", diff)
	}
	var back Stats
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(s, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestWholePathDoesNotAllocate(t *testing.T) {
	l := mustNew(t, Config{RateBps: gbit, Delay: time.Millisecond, QueueBytes: 1 << 20, Loss: Bernoulli{P: 0}})
	p := gso(10)
	var now time.Duration
	step := func() {
		now += 10 * txFull
		l.Enqueue(now, p, 1)
		for {
			h, v, ok := l.PopDue(now)
			if !ok {
				break
			}
			l.Delivered(v.Due, now, 0)
			_ = h
		}
	}
	for range 10000 { // warm up the rings
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("%v allocs per enqueue/pop, want 0", a)
	}
}

func benchmarkEnqueuePop(b *testing.B, cfg Config, p Packet) {
	l := mustNew(b, cfg)
	// One packet per serialization time: the link stays just busy.
	var wire int64
	for i := range p.NumSegments() {
		wire += int64(p.segIP(i) + DefaultOverhead)
	}
	step := time.Duration(float64(wire) * 8 / cfg.RateBps * 1e9)
	var now time.Duration
	run := func(n int) {
		for i := 0; i < n; i++ {
			now += step
			l.Enqueue(now, p, uint64(i))
			for {
				_, v, ok := l.PopDue(now)
				if !ok {
					break
				}
				l.Delivered(v.Due, now, 0)
			}
		}
	}
	run(int(2 * cfg.Delay / step)) // fill the delay line, grow the rings
	b.ReportAllocs()
	b.SetBytes(wire)
	b.ResetTimer()
	run(b.N)
	if s := l.Stats(); s.DropsQueue+s.DropsOverload > 0 {
		b.Fatalf("unexpected drops: %+v", s)
	}
}

func BenchmarkEnqueuePop(b *testing.B) {
	cfg := Config{RateBps: 10 * gbit, Delay: 100 * time.Millisecond, Jitter: 100 * time.Microsecond,
		QueueBytes: BDPQueue(1, 10*gbit, 200*time.Millisecond), Loss: Bernoulli{P: 0}, Seed: 1,
		MaxPending: 1 << 18} // 10 Gbit/s x 100 ms of 1538-byte frames is ~81k packets in flight
	b.Run("plain", func(b *testing.B) { benchmarkEnqueuePop(b, cfg, plain(1500)) })
	b.Run("gso44", func(b *testing.B) { benchmarkEnqueuePop(b, cfg, gso(44)) })
	lossy := cfg
	lossy.Loss = Bernoulli{P: 1e-4}
	b.Run("gso44-loss1e-4", func(b *testing.B) { benchmarkEnqueuePop(b, lossy, gso(44)) })
}
