package linkemu

import (
	"math"
	"strings"
	"testing"
	"time"
)

// drainAll pops everything due by until, in order, returning the handles
// and due times of final pops.
func drainAll(t *testing.T, l *Link, until time.Duration) (handles []uint64, dues []time.Duration) {
	t.Helper()
	var last time.Duration
	for {
		h, v, ok := l.PopDue(until)
		if !ok {
			return handles, dues
		}
		if v.Due < last {
			t.Fatalf("PopDue went back in time: %v after %v", v.Due, last)
		}
		last = v.Due
		if v.Final {
			handles, dues = append(handles, h), append(dues, v.Due)
		}
	}
}

func TestPolicerPassesItsRateAndBurstWithoutQueue(t *testing.T) {
	const wire = 1500 + DefaultOverhead
	p := Policer{RateBps: 8e6, Burst: 4 * wire}
	l := mustNew(t, Config{Delay: 10 * time.Millisecond, Policer: p})
	// Offer 16 Mbit/s (one packet every 769 µs) for 10 s.
	gap := time.Duration(float64(wire*8) / 16e6 * float64(time.Second))
	var n int
	dur := 10 * time.Second
	for now := time.Duration(0); now < dur; now += gap {
		v := l.Enqueue(now, plain(1500), uint64(n))
		n++
		if !v.Dropped() && v.Due != now+10*time.Millisecond {
			t.Fatalf("a packet that passed the policer waited: due %v for arrival %v (a policer has no queue)", v.Due, now)
		}
	}
	st := l.Stats()
	want := p.RateBps/8*dur.Seconds() + float64(p.Burst)
	if got := float64(st.Bytes); math.Abs(got-want) > 2*wire {
		t.Errorf("passed %v wire bytes, want the bucket's rate x time + burst = %v", got, want)
	}
	if st.DropsPolicer == 0 || st.DropsPolicer+st.Segments != int64(n) || st.DropsQueue != 0 || st.DropsLoss != 0 {
		t.Errorf("drops: policer %d, queue %d, loss %d; accepted %d of %d offered", st.DropsPolicer, st.DropsQueue, st.DropsLoss, st.Segments, n)
	}
	if st.QueuePeakBytes != 0 {
		t.Errorf("queue peak %d bytes on a link without a rate", st.QueuePeakBytes)
	}
}

func TestPolicerBurstAtOnce(t *testing.T) {
	const wire = 1500 + DefaultOverhead
	l := mustNew(t, Config{Policer: Policer{RateBps: 1e6, Burst: 3*wire + wire/2}})
	// A GSO super-packet of 10 segments at time 0: the full bucket passes
	// three, the rest is over the contract.
	v := l.Enqueue(0, gso(10), 1)
	if v.Drops.Policer != 7 || len(v.Keep) != 1 || v.Keep[0].First != 0 || v.Keep[0].Count != 3 {
		t.Fatalf("verdict %+v, want the first 3 segments kept and 7 policed", v)
	}
	// Half a packet of tokens is left: the missing 769 bytes take 6.152 ms
	// to refill at 1 Mbit/s.
	if v := l.Enqueue(6*time.Millisecond, plain(1500), 2); !v.Dropped() {
		t.Errorf("a packet passed at 6 ms with %v", l.bucket.tokens)
	}
	if v := l.Enqueue(6200*time.Microsecond, plain(1500), 3); v.Dropped() {
		t.Errorf("a packet was policed at 6.2 ms with %v tokens", l.bucket.tokens)
	}
}

func TestPolicerBeforeTheQueue(t *testing.T) {
	// A 10 Mbit/s shaper with a deep queue behind a 5 Mbit/s policer: the
	// policer drops the excess, the queue never builds beyond the burst.
	const wire = 1500 + DefaultOverhead
	l := mustNew(t, Config{RateBps: 10e6, QueueBytes: 1000 * wire, Policer: Policer{RateBps: 5e6, Burst: 10 * wire}})
	gap := time.Duration(float64(wire*8) / 20e6 * float64(time.Second)) // 20 Mbit/s offered
	for i, now := 0, time.Duration(0); now < 5*time.Second; i, now = i+1, now+gap {
		l.Enqueue(now, plain(1500), uint64(i))
	}
	st := l.Stats()
	if st.DropsQueue != 0 || st.DropsPolicer == 0 {
		t.Errorf("drops: queue %d, policer %d: the policer must take the excess", st.DropsQueue, st.DropsPolicer)
	}
	if st.QueuePeakBytes > 11*wire {
		t.Errorf("queue peak %d bytes: more than the policer's burst reached the shaper", st.QueuePeakBytes)
	}
}

func TestReorderHoldsBackAShare(t *testing.T) {
	cfg := Config{Delay: 10 * time.Millisecond, Reorder: Reorder{Share: 0.1, Extra: 5 * time.Millisecond}, Seed: 7}
	l := mustNew(t, cfg)
	const n = 20000
	arrival := map[uint64]time.Duration{}
	for i := range n {
		now := time.Duration(i) * time.Millisecond
		arrival[uint64(i)] = now
		l.Enqueue(now, plain(1500), uint64(i))
	}
	handles, dues := drainAll(t, l, time.Hour)
	if len(handles) != n {
		t.Fatalf("%d of %d packets delivered", len(handles), n)
	}
	late, overtaken := 0, 0
	for i, h := range handles {
		switch extra := dues[i] - arrival[h] - cfg.Delay; extra {
		case 0:
		case cfg.Reorder.Extra:
			late++
		default:
			t.Fatalf("packet %d delayed by %v more than the link's delay", h, extra)
		}
		if i > 0 && h < handles[i-1] {
			overtaken++
		}
	}
	if st := l.Stats(); st.Reordered != int64(late) {
		t.Errorf("Stats.Reordered = %d, %d packets arrived late", st.Reordered, late)
	}
	// 10% ± 4 standard deviations of a binomial share.
	if sd := math.Sqrt(n * 0.1 * 0.9); math.Abs(float64(late)-0.1*n) > 4*sd {
		t.Errorf("%d of %d held back, want about 10%%", late, n)
	}
	// Each held-back packet is overtaken by the 4 or 5 sent in its 5 ms.
	if overtaken < late*9/10 {
		t.Errorf("only %d out-of-order deliveries for %d late packets", overtaken, late)
	}
	// The same seed reorders the same packets.
	l2 := mustNew(t, cfg)
	for i := range n {
		l2.Enqueue(time.Duration(i)*time.Millisecond, plain(1500), uint64(i))
	}
	h2, _ := drainAll(t, l2, time.Hour)
	for i := range h2 {
		if h2[i] != handles[i] {
			t.Fatalf("a second link with the same seed delivered %d at %d, the first %d", h2[i], i, handles[i])
		}
	}
}

func TestReorderKeepsASplitPacketsRunsTogether(t *testing.T) {
	// Every other segment lost and every packet held back: the runs of one
	// handle stay in order, the last one Final.
	l := mustNew(t, Config{Delay: time.Millisecond, Loss: dropSegs{1: true, 3: true}, Reorder: Reorder{Share: 0.999999, Extra: time.Millisecond}, Seed: 1})
	v := l.Enqueue(0, gso(5), 9)
	if len(v.Keep) != 3 || v.Due != 2*time.Millisecond {
		t.Fatalf("verdict %+v, want 3 runs due at 2 ms", v)
	}
	var firsts []int
	for {
		h, pv, ok := l.PopDue(time.Second)
		if !ok {
			break
		}
		if h != 9 || len(pv.Keep) != 1 {
			t.Fatalf("pop %d %+v", h, pv)
		}
		firsts = append(firsts, pv.Keep[0].First)
		if pv.Final != (len(firsts) == 3) {
			t.Errorf("run %d: Final %v", len(firsts), pv.Final)
		}
	}
	if len(firsts) != 3 || firsts[0] != 0 || firsts[1] != 2 || firsts[2] != 4 {
		t.Errorf("runs popped from segments %v, want 0, 2, 4", firsts)
	}
	if l.Pending() != 0 {
		t.Errorf("%d pending after every run was popped", l.Pending())
	}
}

func TestScheduleChangesTheRate(t *testing.T) {
	const wire = 1500 + DefaultOverhead
	cfg := Config{RateBps: 10e6, QueuePackets: 20,
		Schedule: []RateStep{{At: time.Second, RateBps: 2e6}, {At: 2 * time.Second, RateBps: 10e6}}}
	l := mustNew(t, cfg)
	// Offer 20 Mbit/s for 3 s; count departures per 100 ms. A segment's
	// departure is fixed when the queue takes it: the 20 queued at a step
	// leave at the old rate, so each second is judged after its first
	// 200 ms.
	gap := time.Duration(float64(wire*8) / 20e6 * float64(time.Second))
	per := make([]int, 31)
	for i, now := 0, time.Duration(0); now < 3*time.Second; i, now = i+1, now+gap {
		l.Enqueue(now, plain(1500), uint64(i))
		for {
			_, v, ok := l.PopDue(now)
			if !ok {
				break
			}
			per[min(int(v.Due/(100*time.Millisecond)), 30)]++
		}
	}
	for s, want := range []float64{10e6, 2e6, 10e6} {
		n := 0
		for _, c := range per[10*s+2 : 10*s+10] {
			n += c
		}
		got := float64(n*wire*8) / 0.8
		if math.Abs(got-want)/want > 0.05 {
			t.Errorf("second %d: %.3g bit/s departed, want %.3g", s, got, want)
		}
	}
	if r := cfg.RateAt(1500 * time.Millisecond); r != 2e6 {
		t.Errorf("RateAt(1.5s) = %v", r)
	}
	if r := cfg.MinRate(); r != 2e6 {
		t.Errorf("MinRate = %v", r)
	}
}

func TestKnobsParseAndValidate(t *testing.T) {
	if p, err := ParsePolicer("50Mbit/s/64KB"); err != nil || p != (Policer{RateBps: 50e6, Burst: 64000}) {
		t.Errorf("ParsePolicer: %+v, %v", p, err)
	}
	if r, err := ParseReorder("1%/5ms"); err != nil || r != (Reorder{Share: 0.01, Extra: 5 * time.Millisecond}) {
		t.Errorf("ParseReorder: %+v, %v", r, err)
	}
	if s, err := ParseSchedule("20Mbit/s@5s, 100Mbit/s@10s"); err != nil || len(s) != 2 || s[1] != (RateStep{At: 10 * time.Second, RateBps: 100e6}) {
		t.Errorf("ParseSchedule: %+v, %v", s, err)
	}
	bad := map[string]func() error{
		"policer without burst":   func() error { _, err := ParsePolicer("50Mbit/s"); return err },
		"policer tiny burst":      func() error { _, err := ParsePolicer("50Mbit/s/1KB"); return err },
		"policer slow":            func() error { _, err := ParsePolicer("10bit/s/64KB"); return err },
		"reorder 100%":            func() error { _, err := ParseReorder("100%/5ms"); return err },
		"reorder no delay":        func() error { _, err := ParseReorder("1%/0s"); return err },
		"reorder no slash":        func() error { _, err := ParseReorder("1%"); return err },
		"schedule out of order":   func() error { _, err := ParseSchedule("20Mbit/s@5s,10Mbit/s@1s"); return err },
		"schedule no at":          func() error { _, err := ParseSchedule("20Mbit/s"); return err },
		"schedule without rate":   func() error { return Config{Schedule: []RateStep{{At: time.Second, RateBps: 1e6}}}.Validate() },
		"schedule to zero":        func() error { return Config{RateBps: 1e6, Schedule: []RateStep{{At: time.Second}}}.Validate() },
		"policer burst in config": func() error { return Config{Policer: Policer{RateBps: 1e6, Burst: 100}}.Validate() },
	}
	for name, f := range bad {
		err := f()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), "\n") || err.Error() != strings.ToLower(err.Error()[:1])+err.Error()[1:] {
			t.Errorf("%s: %q is not one lowercase line", name, err)
		}
	}
}

func TestKnobsDoNotAllocateOnTheWholePath(t *testing.T) {
	l := mustNew(t, Config{RateBps: 1e9, QueueBytes: 1 << 20, Policer: Policer{RateBps: 5e8, Burst: 1 << 20},
		Reorder: Reorder{Share: 0.5, Extra: time.Millisecond}, Schedule: []RateStep{{At: time.Second, RateBps: 5e8}},
		Cross: Cross{RateBps: 1e8, On: time.Millisecond, Off: time.Millisecond}})
	now := time.Duration(0)
	step := func() {
		now += 20 * time.Microsecond
		l.Enqueue(now, plain(1500), 1)
		for {
			if _, _, ok := l.PopDue(now); !ok {
				break
			}
		}
	}
	for range 10000 { // reach the rings' working size
		step()
	}
	if a := testing.AllocsPerRun(1000, step); a != 0 {
		t.Errorf("%v allocations per packet", a)
	}
}

// offer sends 1500-byte packets at rate for d and returns the delays
// (due - arrival) of those that were not dropped.
func offer(l *Link, rate float64, d time.Duration) (delays []time.Duration) {
	const wire = 1500 + DefaultOverhead
	gap := time.Duration(float64(wire*8) / rate * float64(time.Second))
	for i, now := 0, time.Duration(0); now < d; i, now = i+1, now+gap {
		if v := l.Enqueue(now, plain(1500), uint64(i)); !v.Dropped() {
			delays = append(delays, v.Due-now)
		}
		for {
			if _, _, ok := l.PopDue(now); !ok {
				break
			}
		}
	}
	return delays
}

func TestCrossTrafficTakesItsShare(t *testing.T) {
	const wire = 1500 + DefaultOverhead
	// 4 Mbit/s of cross traffic on 10 Mbit/s: a 5 Mbit/s flow still fits,
	// whole, and the cross traffic gets all it sends.
	l := mustNew(t, Config{RateBps: 10e6, QueuePackets: 100, Cross: Cross{RateBps: 4e6}})
	own := offer(l, 5e6, 5*time.Second)
	st := l.Stats()
	if st.DropsQueue != 0 || st.CrossDrops != 0 {
		t.Errorf("drops: own %d, cross %d on a link with room", st.DropsQueue, st.CrossDrops)
	}
	if got := float64(st.CrossBytes*8) / 5; math.Abs(got-4e6) > 0.02*4e6 {
		t.Errorf("cross traffic carried %.3g bit/s, want 4e6", got)
	}
	if len(own) == 0 {
		t.Fatal("nothing carried")
	}
	// Saturated: the link's own traffic and the cross traffic fill it.
	l = mustNew(t, Config{RateBps: 10e6, QueuePackets: 100, Cross: Cross{RateBps: 4e6}})
	own = offer(l, 20e6, 5*time.Second)
	st = l.Stats()
	total := float64(len(own)*wire*8+int(st.CrossBytes)*8) / 5
	if math.Abs(total-10e6) > 0.03*10e6 || st.DropsQueue == 0 || st.CrossDrops == 0 {
		t.Errorf("saturated: %.3g bit/s accepted in all (own %d packets, cross %d bytes), drops own %d cross %d",
			total, len(own), st.CrossBytes, st.DropsQueue, st.CrossDrops)
	}
}

func TestCrossTrafficBursts(t *testing.T) {
	// Bursts at the link's full rate, 100 ms of every 500 ms: with a
	// 5 Mbit/s flow, 15 Mbit/s arrive at 10 Mbit/s during a burst, so the
	// queue grows 500 kbit in 100 ms (50 ms of delay); between bursts the
	// flow is alone (1.23 ms to serialize a packet).
	l := mustNew(t, Config{RateBps: 10e6, QueueBytes: 10 << 20, Cross: Cross{RateBps: 10e6, On: 100 * time.Millisecond, Off: 400 * time.Millisecond}})
	own := offer(l, 5e6, 5*time.Second)
	lo, hi := own[0], own[0]
	for _, d := range own {
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > 2*time.Millisecond || hi < 45*time.Millisecond || hi > 60*time.Millisecond {
		t.Errorf("delays from %v to %v, want about 1.2 ms between bursts and 50 ms at a burst's end", lo, hi)
	}
	if got, want := float64(l.Stats().CrossBytes*8)/5, 10e6*0.2; math.Abs(got-want) > 0.05*want {
		t.Errorf("bursts carried %.3g bit/s on average, want %.3g", got, want)
	}
	if _, err := ParseCross("80Mbit/s/200ms/800ms"); err != nil {
		t.Error(err)
	}
	if c, err := ParseCross("30Mbit/s"); err != nil || c != (Cross{RateBps: 30e6}) {
		t.Errorf("ParseCross: %+v %v", c, err)
	}
	for _, bad := range []string{"30Mbit/s/200ms", "x", "30Mbit/s/0s/1s"} {
		if _, err := ParseCross(bad); err == nil {
			t.Errorf("ParseCross(%q) accepted", bad)
		}
	}
	if err := (Config{Cross: Cross{RateBps: 1e6}}).Validate(); err == nil {
		t.Error("cross traffic without a link rate accepted")
	}
}

func TestCrossTrafficAfterAnIdleHour(t *testing.T) {
	// An hour without the link's own traffic is accounted at once, not
	// played packet by packet; the link behaves as before afterwards.
	l := mustNew(t, Config{RateBps: 1e9, QueuePackets: 100, Cross: Cross{RateBps: 5e8}})
	l.Enqueue(0, plain(1500), 1)
	v := l.Enqueue(time.Hour, plain(1500), 2)
	if v.Dropped() {
		t.Fatal("a packet after an idle hour was dropped")
	}
	if got, want := float64(l.Stats().CrossBytes*8)/3600, 5e8; math.Abs(got-want) > 0.01*want {
		t.Errorf("cross traffic over the hour: %.4g bit/s, want %.4g", got, want)
	}
}
