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
		Packets: 1, Segments: 2, Bytes: 3, DropsQueue: 4, DropsLoss: 5, DropsOverload: 6, DropsPolicer: 13, Reordered: 14, CrossBytes: 15, CrossDrops: 16,
		QueuePeakBytes: 7, QueuePeakPackets: 8, Delivered: 9,
		LatenessP50: 1500 * time.Microsecond, LatenessP99: 20 * time.Millisecond, LatenessMax: time.Second,
		LateOverMax: 10, WaitP50: 250 * time.Microsecond, WaitP99: 3 * time.Millisecond, WaitMax: 4 * time.Millisecond,
		SlipOverMax: 11, OverMax: 12, Behind: 17 * time.Millisecond, Overloaded: true,
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
		"drops_queue": 4.0, "drops_loss": 5.0, "drops_overload": 6.0, "drops_policer": 13.0, "reordered": 14.0, "cross_bytes": 15.0, "cross_drops": 16.0,
		"queue_peak_bytes": 7.0, "queue_peak_packets": 8.0, "delivered": 9.0,
		"lateness_p50_s": 0.0015, "lateness_p99_s": 0.02, "lateness_max_s": 1.0,
		"late_over_max": 10.0, "wait_p50_s": 0.00025, "wait_p99_s": 0.003, "wait_max_s": 0.004,
		"slip_over_max": 11.0, "over_max": 12.0, "behind_s": 0.017, "overloaded": true,
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
