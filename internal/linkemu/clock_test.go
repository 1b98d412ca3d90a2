package linkemu

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

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

// Behind is the time the link spent more than MaxLateness behind, as a
// union of spans: a stall that made many frames late counts once, for
// its length; lateness under MaxLateness, and on an unlimited link the
// wait behind earlier writes, count nothing.
func TestBehindSpansStalls(t *testing.T) {
	const ms = time.Millisecond
	due := 100 * ms
	type write struct{ due, start, prevEnd time.Duration }
	for _, tt := range []struct {
		name   string
		rate   float64
		writes []write
		want   time.Duration
	}{
		{"one stall, ten frames due in it", 100e6, func() []write {
			var w []write
			for i := range 10 {
				w = append(w, write{due + time.Duration(i)*ms, due + 20*ms, 0}) // 20..11 ms late
			}
			return w
		}(), 15 * ms},
		{"two stalls", 100e6, []write{{due, due + 20*ms, 0}, {due + ms, due + 20*ms, 0}, {due + 100*ms, due + 110*ms, 0}}, 20 * ms},
		{"late but within the bound", 100e6, []write{{due, due + 4*ms, 0}, {due + ms, due + 5*ms, 0}}, 0},
		{"overlapping spans", 100e6, []write{{due, due + 10*ms, 0}, {due + 2*ms, due + 14*ms, 0}}, 9 * ms},
		{"unlimited: the wait is not behind", 0, []write{{due, due + 10*ms, due + 8*ms}}, 0},
		{"unlimited: the slip is", 0, []write{{due, due + 10*ms, 0}}, 5 * ms},
	} {
		l := mustNew(t, Config{RateBps: tt.rate})
		for _, w := range tt.writes {
			l.Delivered(w.due, w.start, w.prevEnd)
		}
		if got := l.Stats().Behind; got != tt.want {
			t.Errorf("%s: behind %v, want %v", tt.name, got, tt.want)
		}
	}
}
