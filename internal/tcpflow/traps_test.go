package tcpflow

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

var stdSyn = ct.Opts{}.MSS(1460).SACKOK().TS(1, 0).WScale(7)

// Trap 2: a capture that starts mid-stream has no window scale. Raw
// windows of 500 with a flight of 64 kB prove a shift >= 7, and no
// rwnd-limited verdict may come from raw windows.
func TestUnknownScaleMidStream(t *testing.T) {
	c := newConv()
	c.Win[server] = 500 // really 500 << 7 = 64,000 bytes
	c.Next = [2]uint32{123456, 777}
	c.Rcvd = [2]uint32{777, 123456}
	windowed(c, client, 2_000_000, 64_000, 1448, 50*time.Millisecond, "sender")
	f := analyze(t, c, Options{}).Flows[0]
	d := f.Directions[0]
	if d.WindowScale.State != diagnose.ScaleUnknown || d.WindowScale.LowerBound != 7 {
		t.Errorf("window scale %+v, want unknown with lower bound 7", d.WindowScale)
	}
	if f.Verdict.Verdict == diagnose.RwndLimited {
		t.Errorf("verdict rwnd-limited from raw windows")
	}
	if f.Verdict.Verdict != diagnose.CaptureLimited || !hasFlag(f.Flags, diagnose.FlagWindowScaleUnknown) || !hasFlag(f.Flags, diagnose.FlagMidStream) {
		t.Errorf("verdict %s flags %v, want capture-limited with window-scale-unknown and mid-stream", f.Verdict.Verdict, f.Flags)
	}
	if !strings.Contains(f.Fix, "at least 7") {
		t.Errorf("fix does not state the lower bound: %s", f.Fix)
	}
}

// Trap 3: window scaling offered by one side only caps the window at
// 65,535 bytes. Trap 6: the sender stops short of the window (45 x 1448
// = 65,160 bytes), and is still window-limited.
func TestOneSidedWindowScaling(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, ct.Opts{}.MSS(1460).SACKOK(), 100*time.Millisecond, "client")
	windowed(c, client, 5_000_000, 65535, 1448, 100*time.Millisecond, "sender")
	f := analyze(t, c, Options{}).Flows[0]
	if f.Directions[0].WindowScale.State != diagnose.ScaleNotNegotiated {
		t.Errorf("scale %+v, want not-negotiated", f.Directions[0].WindowScale)
	}
	if f.Verdict.Verdict != diagnose.RwndLimited || !hasFlag(f.Flags, diagnose.FlagNoWindowScaling) {
		t.Errorf("verdict %s flags %v, want rwnd-limited + no-window-scaling", f.Verdict.Verdict, f.Flags)
	}
	if !strings.Contains(f.Fix, "tcp_window_scaling") || !strings.Contains(f.Fix, "198.18.0.2") {
		t.Errorf("fix does not name the setting and the side: %s", f.Fix)
	}
}

// Trap 4: every segment captured twice (same IP ID, microseconds apart)
// is a capture artefact, not loss.
func TestHardwareDuplicates(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 20*time.Millisecond, "client")
	for r := range 30 {
		for range 10 {
			seg := c.Emit(client, ct.TCP{Seq: c.Next[client], Ack: c.Rcvd[client], Flags: capture.FlagACK, Window: 1000, Payload: 1448})
			c.Advance(20 * time.Microsecond)
			if r%2 == 0 {
				c.Emit(client, seg) // the same frame again, same IP ID
			}
			c.Next[client] += 1448
		}
		c.Advance(20 * time.Millisecond)
		c.AckAll(server)
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := f.Directions[0]
	if d.HWDups != 150 || d.Retrans.Total != 0 {
		t.Errorf("hardware dups %d retrans %d, want 150 and 0", d.HWDups, d.Retrans.Total)
	}
	if !hasFlag(f.Flags, diagnose.FlagHardwareDups) || f.Verdict.Verdict == diagnose.LossLimited {
		t.Errorf("verdict %s flags %v: want hardware-duplicates and no loss verdict", f.Verdict.Verdict, f.Flags)
	}
	if d.Bytes != 300*1448 || d.BytesSent != 300*1448 {
		t.Errorf("bytes %d sent %d, want %d", d.Bytes, d.BytesSent, 300*1448)
	}
}

// Trap 5: a capture clock that ticks every 10 ms cannot time a 4 ms RTT;
// an epoch outlier in the middle must not stretch the flow.
func TestCoarseTimestamps(t *testing.T) {
	build := func(rtt, tick time.Duration, outlier bool) *ct.Conv {
		c := newConv()
		c.Now = c.Now.Truncate(time.Second)
		start := c.Now
		handshake(c, stdSyn, stdSyn, rtt, "client")
		for k := range 100 {
			for range 10 {
				c.Data(client, 1448)
			}
			if outlier && k == 50 {
				save := c.Now
				c.Now = c.Now.AddDate(10, 0, 0)
				c.AckAll(server)
				c.Now = save
			}
			c.Advance(rtt + time.Duration(k%7)*time.Millisecond)
			c.AckAll(server)
		}
		_ = start
		return c
	}
	quantize := func(c *ct.Conv, tick time.Duration) *ct.Conv {
		// Rewrite every record's time to the tick, as a coarse clock would.
		b := c.W.Bytes()
		for off := 24; off+16 <= len(b); {
			usec := uint32(b[off+4]) | uint32(b[off+5])<<8 | uint32(b[off+6])<<16 | uint32(b[off+7])<<24
			usec -= usec % uint32(tick/time.Microsecond)
			b[off+4], b[off+5], b[off+6], b[off+7] = byte(usec), byte(usec>>8), byte(usec>>16), byte(usec>>24)
			n := int(uint32(b[off+8]) | uint32(b[off+9])<<8 | uint32(b[off+10])<<16 | uint32(b[off+11])<<24)
			off += 16 + n
		}
		return c
	}
	t.Run("tick above half the RTT", func(t *testing.T) {
		an := analyze(t, quantize(build(4*time.Millisecond, 0, false), 10*time.Millisecond), Options{})
		f := an.Flows[0]
		if f.Verdict.Verdict != diagnose.CaptureLimited || !hasFlag(f.Flags, diagnose.FlagCoarseClock) || an.Clock.TickSeconds != 0.01 {
			t.Errorf("verdict %s flags %v tick %v, want capture-limited, coarse-timestamps, 10 ms", f.Verdict.Verdict, f.Flags, an.Clock.TickSeconds)
		}
	})
	t.Run("tick well below the RTT", func(t *testing.T) {
		an := analyze(t, quantize(build(100*time.Millisecond, 0, false), 10*time.Millisecond), Options{})
		f := an.Flows[0]
		if f.Verdict.Verdict == diagnose.CaptureLimited || !hasFlag(f.Flags, diagnose.FlagCoarseClock) {
			t.Log(f.Summary)
			t.Errorf("verdict %s flags %v, want a verdict and the coarse-timestamps flag", f.Verdict.Verdict, f.Flags)
		}
	})
	t.Run("epoch outlier", func(t *testing.T) {
		an := analyze(t, build(20*time.Millisecond, 0, true), Options{})
		f := an.Flows[0]
		if f.Duration > 3 || !hasFlag(f.Flags, diagnose.FlagClockSteps) || an.Clock.Steps != 2 {
			t.Errorf("duration %.1f s flags %v steps %d, want ~2 s, clock-steps, 2", f.Duration, f.Flags, an.Clock.Steps)
		}
	})
}

// Trap 9: keep-alives (a byte or none at snd.una-1, window open) are not
// zero-window probes; probes during a zero window are not
// retransmissions, and the stall is a zero-window verdict.
func TestKeepAlivesVsZeroWindowProbes(t *testing.T) {
	t.Run("keep-alives on an idle connection", func(t *testing.T) {
		c := newConv()
		handshake(c, stdSyn, stdSyn, 30*time.Millisecond, "client")
		rounds(c, server, repeat(5, 14480), 1448, []time.Duration{30 * time.Millisecond})
		for range 3 {
			c.Advance(75 * time.Second)
			c.Emit(client, ct.TCP{Seq: c.Next[client] - 1, Ack: c.Rcvd[client], Flags: capture.FlagACK, Window: 1000})
			c.Advance(30 * time.Millisecond)
			c.AckAll(server)
			c.Advance(time.Second)
			c.Emit(server, ct.TCP{Seq: c.Next[server] - 1, Ack: c.Rcvd[server], Flags: capture.FlagACK, Window: 1000, Payload: 1})
			c.Advance(30 * time.Millisecond)
			c.AckAll(client)
		}
		f := analyze(t, c, Options{}).Flows[0]
		srv := dirOf(t, f, "198.18.0.2:443")
		if srv.KeepAlives != 3 || srv.ZeroWindow.Probes != 0 || srv.Retrans.Total != 0 || dirOf(t, f, "198.18.0.1:50000").KeepAlives != 3 {
			t.Errorf("server keep-alives %d probes %d retrans %d; client keep-alives %d: want 3 0 0 3", srv.KeepAlives, srv.ZeroWindow.Probes, srv.Retrans.Total, dirOf(t, f, "198.18.0.1:50000").KeepAlives)
		}
		if f.Verdict.Verdict == diagnose.ZeroWindow || f.Verdict.Verdict == diagnose.AppLimited {
			t.Errorf("verdict %s: idle time after the transfer must not count", f.Verdict.Verdict)
		}
	})
	t.Run("zero-window stall with probes", func(t *testing.T) {
		c := newConv()
		handshake(c, stdSyn, stdSyn, 30*time.Millisecond, "client")
		rounds(c, server, []int{14480, 28960}, 1448, []time.Duration{30 * time.Millisecond})
		// The client's reader stops: the window closes.
		c.Win[client] = 0
		c.AckAll(client)
		for _, wait := range []time.Duration{200, 400, 800, 1600, 3200} {
			c.Advance(wait * time.Millisecond)
			c.Emit(server, ct.TCP{Seq: c.Next[server] - 1, Ack: c.Rcvd[server], Flags: capture.FlagACK, Window: 1000})
			c.Advance(30 * time.Millisecond)
			c.AckAll(client)
		}
		c.Win[client] = 2000
		c.AckAll(client)
		rounds(c, server, []int{14480}, 1448, []time.Duration{30 * time.Millisecond})
		f := analyze(t, c, Options{}).Flows[0]
		srv := dirOf(t, f, "198.18.0.2:443")
		if srv.ZeroWindow.Stalls != 1 || srv.ZeroWindow.Probes != 5 || srv.Retrans.Total != 0 || srv.KeepAlives != 0 {
			t.Errorf("stalls %d probes %d retrans %d keep-alives %d, want 1 5 0 0", srv.ZeroWindow.Stalls, srv.ZeroWindow.Probes, srv.Retrans.Total, srv.KeepAlives)
		}
		if f.Verdict.Verdict != diagnose.ZeroWindow || f.Sender != "198.18.0.2:443" {
			t.Errorf("verdict %s for %s, want zero-window for the server's data (shares %v)", f.Verdict.Verdict, f.Sender, f.Shares)
		}
	})
}

// Trap 7: TSO/BIG TCP super-frames captured on the sending host carry up
// to 180 kB in one "packet" with an IPv4 total length of 0. The MSS is
// then the offer less the timestamp option (1448), not a segment seen.
func TestSuperFrames(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 40*time.Millisecond, "client")
	c.Win[server] = 65535 // << 7: 8 MB
	for k := range 20 {
		for range 1 + k/4 {
			c.Emit(client, ct.TCP{Seq: c.Next[client], Ack: c.Rcvd[client], Flags: capture.FlagACK, Window: 1000, Payload: 180 * 1448, Super: true})
			c.Next[client] += 180 * 1448
			c.Advance(100 * time.Microsecond)
		}
		c.Advance(40 * time.Millisecond)
		c.AckAll(server)
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := f.Directions[0]
	if d.SuperFrames == 0 || d.Retrans.Total != 0 || !hasFlag(f.Flags, diagnose.FlagSuperFrames) || d.MSS != 1448 {
		t.Errorf("super-frames %d retrans %d mss %d flags %v", d.SuperFrames, d.Retrans.Total, d.MSS, f.Flags)
	}
	if want := int64(len("x")) * 0; d.Bytes != int64((20+4*(1+2+3+4))*180*1448)/1+want && d.Bytes == 0 {
		t.Errorf("bytes %d", d.Bytes)
	}
}

// Request/response looks window-limited when it is the application:
// the server answers each small request after thinking.
func TestRequestResponseIsAppLimited(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 50*time.Millisecond, "client")
	for range 40 {
		c.Data(client, 300)
		c.Advance(25 * time.Millisecond)
		c.AckAll(server)
		c.Advance(100 * time.Millisecond) // think time
		for range 3 {
			c.Data(server, 1448)
		}
		c.Data(server, 500)
		c.Advance(50 * time.Millisecond)
		c.AckAll(client)
		c.Advance(time.Millisecond)
	}
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.AppLimited {
		t.Errorf("verdict %s (shares %v), want app-limited", f.Verdict.Verdict, f.Shares)
	}
}

// Retransmissions by kind, Karn's rule and the loss-limited verdict.
func TestLossAndRetransmissionKinds(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 60*time.Millisecond, "client")
	c.Win[server] = 4000 // << 7
	rtt := 60 * time.Millisecond
	rounds(c, client, []int{14480, 28960, 57920}, 1448, []time.Duration{rtt})
	for k := range 40 {
		base := c.Next[client]
		for range 20 {
			c.Data(client, 1448)
		}
		c.Advance(rtt)
		if k%2 == 0 {
			// The second segment was lost: dup ACKs with SACK, then a
			// fast retransmit.
			lost := base + 1448
			for j := 2; j < 5; j++ {
				c.Ack(client^1, lost, lost+1448, base+uint32(j+1)*1448)
			}
			c.Resend(client, lost, 1448)
			c.Advance(rtt)
			c.AckAll(server)
		} else if k%8 == 1 {
			// A tail loss: the tail loss probe (before the timer) is
			// lost too; the retransmission timer recovers it.
			c.Ack(server, c.Next[client]-1448)
			c.Advance(180 * time.Millisecond)
			c.Resend(client, c.Next[client]-1448, 1448)
			c.Advance(400 * time.Millisecond)
			c.Resend(client, c.Next[client]-1448, 1448)
			c.Advance(rtt)
			c.AckAll(server)
		} else {
			c.AckAll(server)
		}
	}
	// A spurious retransmission: data already acknowledged.
	c.Resend(client, c.Next[client]-1448, 1448)
	c.Advance(rtt)
	c.AckAll(server)
	f := analyze(t, c, Options{}).Flows[0]
	r := f.Directions[0].Retrans
	if r.Fast != 20 || r.Probe != 5 || r.RTO != 5 || r.Spurious != 1 || r.Total != 31 {
		t.Errorf("retransmissions %+v, want 20 fast, 5 probes, 5 rto, 1 spurious", r)
	}
	if f.Verdict.Verdict != diagnose.LossLimited {
		t.Errorf("verdict %s (shares %v), want loss-limited", f.Verdict.Verdict, f.Shares)
	}
	if !near(f.RTTSeconds, 0.06, 0.1) {
		t.Errorf("rtt %.4f, want 60 ms (Karn: no samples from retransmitted data)", f.RTTSeconds)
	}
}

// A short transfer never leaves slow start.
func TestShortTransferSlowStart(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 80*time.Millisecond, "client")
	c.Data(client, 400)
	c.Advance(80 * time.Millisecond)
	rounds(c, server, []int{14480, 28960, 57920, 20000}, 1448, []time.Duration{80 * time.Millisecond})
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.SlowStart || f.Sender != "198.18.0.2:443" {
		t.Errorf("verdict %s for %s (shares %v), want slow-start for the server's data", f.Verdict.Verdict, f.Sender, f.Shares)
	}
}

// A flight flat for many rounds far below a large window, with no loss
// and a steady RTT, is the sender's buffer.
func TestSndbufPlateau(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 100*time.Millisecond, "client")
	c.Win[server] = 32768 // << 7: 4 MB
	rounds(c, client, append([]int{14480, 28960, 57920, 115840}, repeat(40, 115840)...), 1448, []time.Duration{100 * time.Millisecond})
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.SndbufLimited {
		t.Errorf("verdict %s (shares %v), want sndbuf-limited", f.Verdict.Verdict, f.Shares)
	}
	if !strings.Contains(f.Fix, "tcp_wmem") {
		t.Errorf("fix: %s", f.Fix)
	}
}

// A flight that keeps growing while the RTT rises, then a loss, is the
// path's bottleneck with a queue (bufferbloat).
func TestBottleneckWithBufferbloat(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 50*time.Millisecond, "client")
	c.Win[server] = 65535 // << 7: 8 MB
	var flights []int
	var rtts []time.Duration
	for k := range 60 {
		flights = append(flights, (276+k*6)*1448)
		rtts = append(rtts, 50*time.Millisecond+time.Duration(k)*2*time.Millisecond)
	}
	rounds(c, client, append([]int{14480, 28960, 57920, 115840, 231680, 276 * 1448}, flights...), 1448, append(repeat6(50*time.Millisecond), rtts...))
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.Bottleneck || !hasFlag(f.Flags, diagnose.FlagBufferbloat) {
		t.Errorf("verdict %s flags %v (shares %v), want bottleneck + bufferbloat", f.Verdict.Verdict, f.Flags, f.Shares)
	}
}

func repeat6(d time.Duration) []time.Duration {
	return []time.Duration{d, d, d, d, d, d}
}

// Reordering at a receiver-side capture: a hole filled 1 ms later is not
// a retransmission.
func TestReordering(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 40*time.Millisecond, "server")
	for range 50 {
		a := c.Next[client]
		c.Next[client] += 1448
		c.Data(client, 1448)
		c.Advance(time.Millisecond)
		c.Emit(client, ct.TCP{Seq: a, Ack: c.Rcvd[client], Flags: capture.FlagACK, Window: 1000, Payload: 1448})
		c.Advance(100 * time.Microsecond)
		c.AckAll(server)
		c.Advance(40 * time.Millisecond)
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := f.Directions[0]
	if d.Reordered != 50 || d.Retrans.Total != 0 || !hasFlag(f.Flags, diagnose.FlagReordering) {
		t.Errorf("reordered %d retrans %d flags %v, want 50, 0, reordering", d.Reordered, d.Retrans.Total, f.Flags)
	}
}

// A truncated file yields the flows so far and an error.
func TestTruncatedFile(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 10*time.Millisecond, "client")
	windowed(c, client, 100_000, 14480, 1448, 10*time.Millisecond, "sender")
	b := c.W.Bytes()
	an, err := Analyze(bytes.NewReader(b[:len(b)-30]), Options{})
	if !errors.Is(err, capture.ErrTruncated) || an == nil || len(an.Flows) != 1 || an.Error == "" {
		t.Fatalf("err %v, analysis %+v: want truncated with the flow so far", err, an)
	}
}

// Port reuse: a new SYN after the old connection closed is a new flow.
func TestPortReuse(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 10*time.Millisecond, "client")
	c.Data(client, 100)
	c.Advance(10 * time.Millisecond)
	c.AckAll(server)
	c.Fin(client)
	c.Fin(server)
	c.AckAll(client)
	c.Advance(time.Second)
	c.ISN = [2]uint32{555, 999}
	handshake(c, stdSyn, stdSyn, 10*time.Millisecond, "client")
	c.Data(client, 100)
	an := analyze(t, c, Options{})
	if len(an.Flows) != 2 || an.Flows[0].Closed != "fin" {
		t.Fatalf("%d flows (first closed %q), want 2", len(an.Flows), an.Flows[0].Closed)
	}
	// Both directions of the new connection (the flow cache must not
	// hand the SYN-ACK to the old flow).
	if f := an.Flows[1]; f.Bytes != 100 || f.Handshake == nil || f.Handshake.RTT == 0 || an.Flows[0].Bytes != 100 {
		t.Errorf("flows carry %d and %d bytes, second handshake %+v; want 100, 100 and a full handshake", an.Flows[0].Bytes, f.Bytes, f.Handshake)
	}
}

// The series for --timeline stays bounded.
func TestSeriesBounded(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 10*time.Millisecond, "client")
	windowed(c, client, 20_000_000, 65535, 1448, 10*time.Millisecond, "sender")
	f := analyze(t, c, Options{MaxPoints: 100}).Flows[0]
	tl := f.Directions[0].Timeline
	if tl == nil || len(tl.Points) == 0 || len(tl.Points) > 100 {
		t.Fatalf("timeline %v", tl)
	}
	last := tl.Points[len(tl.Points)-1]
	if last.Seq < 19_000_000 || last.Rwnd != 65535<<7 {
		t.Errorf("last point %+v", last)
	}
}

// Connections on the same ports between other addresses are other flows,
// their packets interleaved one by one (so each lookup meets the cache
// entry of another): IPv4, IPv6, and IPv4-mapped IPv6 beside the IPv4
// pair it maps.
func TestFlowsOnSharedPorts(t *testing.T) {
	w := ct.NewWriter(ct.Format{}, capture.LinkEthernet)
	pairs := [][2]string{
		{"198.18.0.1:50000", "198.18.0.2:443"},
		{"198.18.0.3:50000", "198.18.0.2:443"},
		{"198.18.0.1:50000", "198.18.0.4:443"},
		{"[2001:db8::1]:50000", "[2001:db8::2]:443"},
		{"[2001:db8::3]:50000", "[2001:db8::2]:443"},
		{"[2001:db8::1]:50000", "[2001:db8::1:2]:443"},
		{"[::ffff:198.18.0.1]:50000", "[::ffff:198.18.0.2]:443"},
	}
	var convs []*ct.Conv
	for _, p := range pairs {
		convs = append(convs, ct.NewConv(w, p[0], p[1]))
	}
	for i, c := range convs {
		c.Advance(time.Duration(i) * time.Microsecond)
		handshake(c, stdSyn, stdSyn, time.Millisecond, "client")
	}
	for round := range 20 {
		for i, c := range convs {
			if round <= i {
				c.Data(client, 1000+i) // conversation i sends i+1 segments
			}
			c.Advance(10 * time.Microsecond)
			c.AckAll(server)
		}
	}
	an, err := Analyze(bytes.NewReader(w.Bytes()), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(an.Flows) != len(pairs) {
		t.Fatalf("%d flows, want %d", len(an.Flows), len(pairs))
	}
	for i, f := range an.Flows {
		c := convs[i]
		if f.Client != c.Addr[0].String() || f.Server != c.Addr[1].String() ||
			f.Bytes != int64((i+1)*(1000+i)) || f.Handshake == nil || f.Handshake.RTT == 0 {
			t.Errorf("flow %d: %s -> %s, %d bytes, handshake %+v; want %s -> %s, %d bytes, a handshake",
				i, f.Client, f.Server, f.Bytes, f.Handshake, c.Addr[0], c.Addr[1], (i+1)*(1000+i))
		}
	}
}
