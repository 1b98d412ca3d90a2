package judge

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// rateAt is a sender's rate at t seconds.
type rateAt func(t float64) float64

// shaped is one sender socket's samples every 100 ms for secs seconds,
// delivering rate(t), in flight what that rate holds at rtt, with share
// of each interval limited by its send buffer; nothing lost.
func shaped(port uint16, rtt time.Duration, secs, sndShare float64, rate rateAt) []flows.Sample {
	k := flows.Sock{Local: netip.MustParseAddrPort("198.18.0.2:9978"), Remote: netip.AddrPortFrom(netip.MustParseAddr("198.18.0.1"), port),
		State: "ESTABLISHED", MSS: 1448, SndWnd: 64 << 20, WindowScale: true, RTT: rtt, MinRTT: rtt, CC: "cubic", Ssthresh: 1 << 30}
	var out []flows.Sample
	dt := 0.1
	for i := 0; float64(i)*dt <= secs+1e-9; i++ {
		t := float64(i) * dt
		if i > 0 {
			b := int64(rate(t) * dt / 8)
			k.BytesAcked += b
			k.DataSegsOut += b / 1448
			k.Busy += 100 * time.Millisecond
			k.SndbufLimited += time.Duration(sndShare * float64(100*time.Millisecond))
		}
		k.Inflight = int64(rate(t) * rtt.Seconds() / 8)
		k.Cwnd = 2 * k.Inflight
		out = append(out, flows.Sample{T: t, Sock: k})
	}
	return out
}

// doubling is slow start on a path of rtt: the rate doubles every round
// trip from 1 Mbit/s, up to top.
func doubling(rtt time.Duration, top float64) rateAt {
	return func(t float64) float64 {
		r := 1e6
		for x := 0.0; x < t && r < top; x += rtt.Seconds() {
			r *= 2
		}
		return min(r, top)
	}
}

// A phase that ends while its rate still doubles is slow start, whatever
// the socket's windows said (a long path's probe cut to 2 s read
// "limited by the path" at a tenth of its rate, or named a buffer
// autotuning was still growing); the same phase run until the rate
// levels names the buffer, and only it sizes plans.
func TestJudgeRampIsSlowStart(t *testing.T) {
	rtt := 170 * time.Millisecond
	big := "4096 131072 67108864"
	run := func(secs float64) *testdoc.Doc {
		t.Helper()
		p := PhaseRaw{Grant: wire.Grant{Phase: 1, Name: wire.PhaseDownload, Streams: 1, DurationS: secs}, Done: wire.PhaseDone{Phase: 1, Reason: "duration"}}
		p.Server = shaped(40000, rtt, secs, 0.6, doubling(rtt, 150e6))
		c := PhaseRaw{Grant: wire.Grant{Phase: 2, Name: wire.PhaseCapacity, Streams: 2, DurationS: secs}, Done: wire.PhaseDone{Phase: 2, Reason: "duration"}}
		for i := range 2 {
			c.Server = append(c.Server, shaped(uint16(40001+i), rtt, secs, 0, doubling(rtt, 450e6))...)
		}
		raw := rawWith(host(big, big), host(big, "4096 16384 4194304"), p, c)
		raw.IdleRTTs = []time.Duration{rtt}
		if secs < 3 {
			raw.PhaseCut = "phases cut to 1 s to end within the deadline"
		}
		d, err := Judge(raw, JudgeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	short := run(1)
	dir := short.Directions[0]
	if dir.Flow.Verdict.Verdict != diagnose.SlowStart || dir.Limit.Host != testdoc.HostTest || !strings.Contains(dir.Limit.Text, "still speeding up") ||
		!strings.Contains(dir.Limit.Text, "cut to 1 s") {
		t.Errorf("cut short: %s, limit %+v", dir.Flow.Verdict.Verdict, dir.Limit)
	}
	if c := short.Capacity; c == nil || !c.Ramping || !c.AtLeast || !strings.Contains(short.PathRateBasis, "still speeding up") {
		t.Errorf("cut short: capacity %+v, basis %q", c, short.PathRateBasis)
	}
	if short.Plans != nil || !strings.Contains(strings.Join(short.Notes, "\n"), "no plans: the phases ended while the flows were still speeding up") {
		t.Errorf("cut short: plans sized from a ramp (notes %q)", short.Notes)
	}

	long := run(8)
	dir = long.Directions[0]
	if dir.Flow.Verdict.Verdict == diagnose.SlowStart || dir.Limit.Setting != "net.ipv4.tcp_wmem" || dir.Limit.Host != testdoc.HostServer {
		t.Errorf("long enough: %s, limit %+v", dir.Flow.Verdict.Verdict, dir.Limit)
	}
	if c := long.Capacity; c == nil || c.Ramping || c.Bps < 0.97*900e6 || c.Bps > 1.03*900e6 || long.Plans == nil {
		t.Errorf("long enough: capacity %+v (want the 900 Mbit/s plateau), plans %v", c, long.Plans != nil)
	}
}

// The capacity is the plateau the streams held, not an average that
// takes in slow start or a dip: 2 s of ramp, then 930 Mbit/s with a
// 200 ms dip to 300 Mbit/s every 2.5 s, over a 6 s phase (the second
// half's average sits under the plateau).
func TestCapacityIsThePlateau(t *testing.T) {
	rtt := 170 * time.Millisecond
	ramp := doubling(rtt, 930e6)
	rate := func(t float64) float64 {
		if t < 2 {
			return min(ramp(t), 600e6)
		}
		if x := t - 2; x-2.5*float64(int(x/2.5)) < 0.2 {
			return 300e6
		}
		return 930e6
	}
	samples := shaped(40000, rtt, 6, 0, rate)
	s := seriesOf(samples)
	avg := AggregateRate(samples)
	if p, _ := s.plateau(); p < 0.97*930e6 || p > 930e6*1.01 || avg >= 0.97*930e6 {
		t.Errorf("plateau %.1f Mbit/s, second half's average %.1f: want the plateau at 930 and the average under it", p/1e6, avg/1e6)
	}
	if r := s.ramp(""); r == nil || r.Ramping() {
		t.Errorf("a phase at its plateau reads as ramping: %+v", r)
	}
}

// A download "rwnd-limited" part of the time at 80% of a measured path
// rate, while its window (seen and allowed) carries more than the path:
// the path held it, not the client's tcp_rmem; with a tcp_rmem whose
// window carries less than the path, the client's setting.
func TestWindowAbovePathIsNotTheLimit(t *testing.T) {
	rtt := 170 * time.Millisecond
	flat := func(r float64) rateAt { return func(float64) float64 { return r } }
	judge := func(rmem string, window int64) testdoc.Direction {
		t.Helper()
		p := PhaseRaw{Grant: wire.Grant{Phase: 1, Name: wire.PhaseDownload, Streams: 1, DurationS: 6}, Done: wire.PhaseDone{Phase: 1, Reason: "duration"}}
		p.Server = shaped(40000, rtt, 6, 0, flat(760e6))
		for i := range p.Server {
			p.Server[i].Sock.SndWnd = window
			p.Server[i].Sock.RwndLimited = p.Server[i].Sock.Busy * 6 / 10
		}
		c := PhaseRaw{Grant: wire.Grant{Phase: 2, Name: wire.PhaseCapacity, Streams: 2, DurationS: 6}, Done: wire.PhaseDone{Phase: 2, Reason: "duration"}}
		for i := range 2 {
			c.Server = append(c.Server, shaped(uint16(40001+i), rtt, 6, 0, flat(470e6))...)
		}
		big := "4096 131072 67108864"
		raw := rawWith(host(rmem, big), host(big, big), p, c)
		raw.IdleRTTs = []time.Duration{rtt}
		d, err := Judge(raw, JudgeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Directions[0]
	}
	if dir := judge("4096 131072 67108864", 24<<20); dir.Flow.Verdict.Verdict != diagnose.RwndLimited || dir.Limit.Host != testdoc.HostPath || !strings.Contains(dir.Limit.Text, "would not help") {
		t.Errorf("64 MiB, a 24 MiB window: %s, limit %+v", dir.Flow.Verdict.Verdict, dir.Limit)
	}
	if dir := judge("4096 131072 16777216", 11<<20); dir.Limit.Host != testdoc.HostClient || dir.Limit.Setting != "net.ipv4.tcp_rmem" {
		t.Errorf("16 MiB, an 11 MiB window under the BDP: limit %+v", dir.Limit)
	}
}
