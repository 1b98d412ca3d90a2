package tcpflow

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/diagnose"
)

// The classes of issue 14, each a packet sequence built by hand whose
// truth is known by construction.

// mixedFlights sends total bytes from the client in flights of at most
// win bytes with segment sizes cycling through sizes (real senders mix
// 1370-1434-byte segments, TSO remainders, TLS records); the ACK of each
// flight comes rtt later (capture at the sender).
func mixedFlights(c *ct.Conv, total, win int, sizes []int, rtt time.Duration) {
	k := 0
	for sent := 0; sent < total; {
		flight := 0
		for sent < total {
			n := min(sizes[k%len(sizes)], total-sent)
			if flight+n > win {
				break
			}
			k++
			c.Data(client, n)
			c.Advance(20 * time.Microsecond)
			flight += n
			sent += n
		}
		c.Advance(rtt)
		c.AckAll(server)
		c.Advance(20 * time.Microsecond)
	}
}

// Class 1: a window-bound sender whose segments differ in size is not
// app-limited, and its summary agrees with its shares.
func TestClassMixedSegmentsNotAppLimited(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, ct.Opts{}.MSS(1460).SACKOK().TS(1, 0), 100*time.Millisecond, "client")
	mixedFlights(c, 3_000_000, 65535, []int{1434, 1370, 1402, 1388, 1434, 711}, 100*time.Millisecond)
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.RwndLimited {
		t.Errorf("verdict %s (shares %v): %s; want rwnd-limited", f.Verdict.Verdict, f.Shares, f.Summary)
	}
	if f.Shares[diagnose.StateApp.String()] > 0.05 {
		t.Errorf("app-limited share %.2f for a sender that always filled the window", f.Shares[diagnose.StateApp.String()])
	}
	if msgs := CheckInvariants(f); len(msgs) > 0 {
		t.Errorf("invariants: %v", msgs)
	}
}

// Class 1, the other side: a sender that leaves room in the window and
// answers ACKs late (a writer that dribbles) is app-limited.
func TestClassSendGapsAreAppLimited(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 20*time.Millisecond, "client")
	for range 60 {
		c.Data(client, 1448)
		c.Data(client, 1448)
		c.Advance(20 * time.Millisecond)
		c.Ack(server, c.Next[client]-1448) // the first acknowledged: room
		c.Advance(30 * time.Millisecond)   // nothing sent for 30 ms
		c.AckAll(server)
		c.Advance(40 * time.Millisecond)
	}
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.AppLimited {
		t.Errorf("verdict %s (shares %v), want app-limited", f.Verdict.Verdict, f.Shares)
	}
	if !strings.Contains(f.Summary, "wait(s) with room to send") {
		t.Errorf("summary does not name the send gaps: %s", f.Summary)
	}
	if msgs := CheckInvariants(f); len(msgs) > 0 {
		t.Errorf("invariants: %v", msgs)
	}
}

// Class 2: a burst loss that takes half the flight, recovered only by the
// retransmission timer (no dupACKs: the rest of the flight was lost too),
// twice: loss-limited with the stall named and timed, not "the path".
func TestClassTimeoutStall(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 50*time.Millisecond, "client")
	c.Win[server] = 8000 // << 7: 1 MB
	rtt := 50 * time.Millisecond
	rounds(c, client, []int{14480, 28960, 57920}, 1448, []time.Duration{rtt})
	for burst := range 2 {
		base := c.Next[client]
		for range 40 {
			c.Data(client, 1448)
		}
		c.Advance(rtt)
		c.Ack(server, base+20*1448) // the second half of the flight is lost
		// RTO (1 s after backoff), a second one 2 s later, then the rest.
		c.Advance(time.Second)
		c.Resend(client, base+20*1448, 1448)
		c.Advance(2 * time.Second)
		c.Resend(client, base+20*1448, 1448)
		c.Advance(rtt)
		c.Ack(server, base+21*1448)
		for s := uint32(21); s < 40; s++ {
			c.Resend(client, base+s*1448, 1448)
		}
		c.Advance(rtt)
		c.AckAll(server)
		_ = burst
		rounds(c, client, []int{57920, 57920}, 1448, []time.Duration{rtt})
	}
	f := analyze(t, c, Options{}).Flows[0]
	d := f.Directions[0]
	if f.Verdict.Verdict != diagnose.LossLimited || !hasFlag(f.Flags, diagnose.FlagRTOStall) {
		t.Fatalf("verdict %s flags %v (shares %v): %s; want loss-limited with rto-stall", f.Verdict.Verdict, f.Flags, f.Shares, f.Summary)
	}
	if d.Stalls.Count != 2 || !near(d.Stalls.Seconds, 6.1, 0.05) {
		t.Errorf("stalls %+v, want 2 of about 6.1 s in all", d.Stalls)
	}
	if !strings.Contains(f.Summary, "retransmission timeouts 2 time(s)") || !strings.Contains(f.Fix, "outage") {
		t.Errorf("summary/fix do not name the stall: %s / %s", f.Summary, f.Fix)
	}
}

// Class 2: the receiver falls silent while the sender is pinned at its
// window; the sender backs off (0.2, 0.4, ... 25.6 s) and resets: the
// peer is unresponsive, not rwnd-limited, and the fix says so.
func TestClassPeerUnresponsive(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 40*time.Millisecond, "client")
	c.Win[server] = 500 // << 7: 64,000 bytes
	windowed(c, client, 1_000_000, 64_000, 1448, 40*time.Millisecond, "sender")
	for range 44 {
		c.Data(client, 1448)
	}
	una := c.Rcvd[server]
	wait := 200 * time.Millisecond
	for range 8 {
		c.Advance(wait)
		c.Resend(client, una, 1448)
		wait *= 2
	}
	c.Advance(wait)
	c.Emit(client, ct.TCP{Seq: c.Next[client], Ack: c.Rcvd[client], Flags: capture.FlagRST | capture.FlagACK})
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.LossLimited || !hasFlag(f.Flags, diagnose.FlagPeerUnresponsive) {
		t.Fatalf("verdict %s flags %v (shares %v): %s; want loss-limited with peer-unresponsive", f.Verdict.Verdict, f.Flags, f.Shares, f.Summary)
	}
	if !strings.Contains(f.Summary, "stopped answering") || !strings.Contains(f.Fix, "tcp_retries2") || strings.Contains(f.Fix, "BBR") {
		t.Errorf("summary/fix: %s / %s", f.Summary, f.Fix)
	}
	if f.Directions[0].Retrans.RTO != 8 || f.Directions[0].Retrans.Fast != 0 {
		t.Errorf("retransmissions %+v, want 8 after timeouts", f.Directions[0].Retrans)
	}
}

// Class 3: kinds by evidence. Each loss is either followed by three
// dupACKs with SACK blocks (fast) or by silence past the RTO (timeout,
// with backoff); the long-silence retransmissions with no dupACK before
// them must not count as fast. The construction is the ground truth.
func TestClassRetransmissionKinds(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 30*time.Millisecond, "client")
	c.Win[server] = 4000 // << 7
	rtt := 30 * time.Millisecond
	rounds(c, client, []int{14480, 28960, 57920}, 1448, []time.Duration{rtt})
	wantFast, wantRTO := 0, 0
	for k := range 60 {
		base := c.Next[client]
		for range 20 {
			c.Data(client, 1448)
		}
		c.Advance(rtt)
		lost := base + uint32(k%5+1)*1448
		switch k % 3 {
		case 0: // fast: three dupACKs with SACK
			for j := 1; j <= 3; j++ {
				c.Ack(server, lost, lost+1448, lost+uint32(j+1)*1448)
			}
			c.Resend(client, lost, 1448)
			wantFast++
		case 1: // timeout: ACKs up to the hole, then 450 ms of silence
			c.Ack(server, lost)
			c.Advance(450 * time.Millisecond)
			c.Resend(client, lost, 1448)
			wantRTO++
		case 2: // timeout after backoff: two retransmissions
			c.Ack(server, lost)
			c.Advance(300 * time.Millisecond)
			c.Resend(client, lost, 1448)
			c.Advance(600 * time.Millisecond)
			c.Resend(client, lost, 1448)
			wantRTO += 2
		}
		c.Advance(rtt)
		c.AckAll(server)
	}
	r := analyze(t, c, Options{}).Flows[0].Directions[0].Retrans
	right := min(r.Fast, int64(wantFast)) + min(r.RTO, int64(wantRTO))
	if total := int64(wantFast + wantRTO); right*100 < total*95 || r.Total != total {
		t.Errorf("retransmissions %+v, want %d fast and %d timeout (%d of %d right)", r, wantFast, wantRTO, right, total)
	}
}

// Class 4: a slow SYN-ACK (54 ms: a busy accept queue) must not win over
// the data's own round trips (3-7 ms): the ceiling stays above what the
// flow achieved, and the report says which RTT was used.
func TestClassRTTFromData(t *testing.T) {
	c := newConv()
	c.Handshake(stdSyn, ct.Opts{}.MSS(1460).SACKOK().TS(1, 0), 54*time.Millisecond, 50*time.Microsecond)
	// Requests from the client, each acknowledged by the server in 3-7
	// ms at the capture (next to the client), then a download pinned at
	// the client's 65,535-byte window.
	for k := range 12 {
		c.Data(client, 200)
		c.Advance(time.Duration(3+k%5) * time.Millisecond)
		c.AckAll(server)
		c.Advance(time.Millisecond)
	}
	for range 60 {
		for flight := 0; flight+1448 <= 65535; flight += 1448 {
			c.Data(server, 1448)
			c.Advance(10 * time.Microsecond)
		}
		c.Advance(50 * time.Microsecond)
		c.AckAll(client)
		c.Advance(5 * time.Millisecond)
	}
	f := analyze(t, c, Options{}).Flows[0]
	if f.RTTSeconds > 0.02 {
		t.Errorf("rtt %.4f s, want the data's ~5 ms, not the SYN-ACK's 54 ms", f.RTTSeconds)
	}
	d := dirOf(t, f, "198.18.0.2:443")
	if !strings.Contains(d.RTT.Source, "other direction") {
		t.Errorf("rtt source %q does not say the data's ACK times were used", d.RTT.Source)
	}
	if msgs := CheckInvariants(f); len(msgs) > 0 || f.CeilingBps < f.ThroughputBps {
		t.Errorf("ceiling %.0f, achieved %.0f; invariants %v", f.CeilingBps, f.ThroughputBps, msgs)
	}
}

// Class 5: FIN retransmissions and a reset long after the data do not
// stretch the transfer: throughput is over the interval that moved data,
// and the idle tail is reported apart.
func TestClassIdleTail(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 10*time.Millisecond, "client")
	windowed(c, client, 1_000_000, 64_000, 1448, 10*time.Millisecond, "sender")
	c.Advance(5 * time.Second)
	c.Fin(client)
	for range 3 {
		c.Advance(2 * time.Second)
		c.Emit(client, ct.TCP{Seq: c.Next[client] - 1, Ack: c.Rcvd[client], Flags: capture.FlagFIN | capture.FlagACK, Window: c.Win[client]})
	}
	c.Emit(server, ct.TCP{Seq: c.Next[server], Ack: c.Next[client], Flags: capture.FlagRST | capture.FlagACK})
	f := analyze(t, c, Options{}).Flows[0]
	d := f.Directions[0]
	if d.Duration > 0.25 || f.ThroughputBps < 30e6 {
		t.Errorf("duration %.3f s, throughput %.0f bit/s: the idle tail counted", d.Duration, f.ThroughputBps)
	}
	if d.TailSeconds < 10 {
		t.Errorf("tail %.3f s, want the 11 s after the data", d.TailSeconds)
	}
}

// Class 6: a 10 ms capture clock does not hide a 22 s zero-window stall;
// the RTT below the tick is written as such, never "1 ns".
func TestClassCoarseClockZeroWindow(t *testing.T) {
	c := newConv() // starts on a whole second
	tick := 10 * time.Millisecond
	c.Handshake(stdSyn, stdSyn, tick, 0)
	c.Win[server] = 500 // << 7
	burst := func() {
		for range 20 {
			c.Data(client, 1448)
		}
		c.Advance(tick)
		c.AckAll(server)
	}
	for range 30 {
		burst()
	}
	c.Win[server] = 0
	c.AckAll(server)
	for range 11 {
		c.Advance(2 * time.Second)
		c.Emit(client, ct.TCP{Seq: c.Next[client] - 1, Ack: c.Rcvd[client], Flags: capture.FlagACK, Window: c.Win[client]})
		c.Advance(tick)
		c.AckAll(server)
	}
	c.Win[server] = 500
	c.AckAll(server)
	for range 5 {
		burst()
	}
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.ZeroWindow || !hasFlag(f.Flags, diagnose.FlagCoarseClock) {
		t.Fatalf("verdict %s flags %v: %s; want zero-window with coarse-timestamps", f.Verdict.Verdict, f.Flags, f.Summary)
	}
	if !near(f.Directions[0].ZeroWindow.Seconds, 22.1, 0.02) {
		t.Errorf("zero-window time %.2f s, want 22.1", f.Directions[0].ZeroWindow.Seconds)
	}
	// The same capture judged for its RTT: the rwnd text of a flow like
	// it says "< 10 ms (clock resolution)".
	in := diagnose.Info{RTT: time.Nanosecond, ClockTick: tick, Bytes: 1, Duration: time.Second, Scale: diagnose.ScaleKnown}
	tl := &diagnose.Timeline{MSS: 1448}
	tl.AddSample(&diagnose.Sample{T: 0, Sent: 64000, Inflight: 64000, Rwnd: 64000})
	tl.AddSample(&diagnose.Sample{T: time.Second, Sent: 64000, Delivered: 64000, Rwnd: 64000})
	v := diagnose.Diagnose(tl, in)
	if !strings.Contains(v.Fix, "< 10 ms (clock resolution)") || v.CeilingBps != 0 {
		t.Errorf("RTT below the tick: ceiling %.0f, fix %s", v.CeilingBps, v.Fix)
	}
}

// Class 6: a seven-packet excerpt (no handshake) that shows the window
// closing and reopening is a zero-window flow, not "cannot judge".
func TestClassShortExcerptZeroWindow(t *testing.T) {
	c := newConv()
	c.Data(client, 1448)
	c.Advance(5 * time.Millisecond)
	c.Win[server] = 0
	c.AckAll(server)
	c.Advance(3 * time.Second)
	c.Emit(client, ct.TCP{Seq: c.Next[client] - 1, Ack: c.Rcvd[client], Flags: capture.FlagACK, Window: c.Win[client]})
	c.Advance(5 * time.Millisecond)
	c.AckAll(server)
	c.Advance(2 * time.Second)
	c.Win[server] = 2000
	c.AckAll(server)
	c.Data(client, 1448)
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.ZeroWindow {
		t.Errorf("verdict %s flags %v: %s; want zero-window", f.Verdict.Verdict, f.Flags, f.Summary)
	}
}

// Class 7: one request, one response: the request is acknowledged in 48
// ms, the answer comes 983 ms later; the application is judged, with the
// wire RTT and the think time.
func TestClassRequestResponse(t *testing.T) {
	c := newConv()
	handshake(c, stdSyn, stdSyn, 48*time.Millisecond, "client")
	c.Data(client, 350)
	c.Advance(48 * time.Millisecond)
	c.AckAll(server)
	c.Advance(983 * time.Millisecond)
	c.Data(server, 1448)
	c.Data(server, 900)
	c.Advance(48 * time.Millisecond)
	c.AckAll(client)
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.AppLimited || !hasFlag(f.Flags, diagnose.FlagRequestResponse) {
		t.Fatalf("verdict %s flags %v: %s; want app-limited, request-response", f.Verdict.Verdict, f.Flags, f.Summary)
	}
	if !strings.Contains(f.Summary, "acknowledged in 48 ms") || !strings.Contains(f.Summary, "answered 983 ms later") {
		t.Errorf("summary does not give the wire RTT and think time: %s", f.Summary)
	}
}

// Class 8: the fix addresses the end that limits: a reader that stops
// gets a fix about the receiver, never "write more at once"; a Windows
// receiver gets its own setting, not only a Linux sysctl.
func TestClassBlameTheRightEnd(t *testing.T) {
	win := ct.Opts{}.MSS(1460).WScale(8).NOP().NOP().SACKOK() // MSS NOP WS NOP NOP SACKOK
	c := newConv()
	handshake(c, stdSyn, win, 80*time.Millisecond, "client")
	c.Win[server] = 1000 // << 8: 256,000 bytes, never grows
	windowed(c, client, 5_000_000, 256_000, 1448, 80*time.Millisecond, "sender")
	f := analyze(t, c, Options{}).Flows[0]
	if f.Verdict.Verdict != diagnose.RwndLimited || !strings.Contains(f.Fix, "netsh") || strings.Contains(f.Fix, "write more") {
		t.Errorf("verdict %s fix %s; want rwnd-limited with the Windows setting", f.Verdict.Verdict, f.Fix)
	}
}

// A send-buffer plateau with round-to-round noise (an emulated path on a
// busy host) is still a plateau; a flight that keeps growing with no loss
// is the congestion window at work.
func TestNoisyPlateauIsSndbuf(t *testing.T) {
	noisy := []int{115840, 104256, 121632, 110048, 118736}
	plateau := append([]int{14480, 28960, 57920, 115840}, repeat(40, 0)...)
	for i := 4; i < len(plateau); i++ {
		plateau[i] = noisy[i%len(noisy)]
	}
	growing := append([]int{14480, 28960, 57920, 115840}, repeat(40, 0)...)
	for i := 4; i < len(growing); i++ {
		growing[i] = growing[i-1] + 2*1448
	}
	for _, tc := range []struct {
		name    string
		flights []int
		want    string
	}{{"noisy plateau", plateau, diagnose.SndbufLimited}, {"growing", growing, diagnose.Bottleneck}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConv()
			handshake(c, stdSyn, stdSyn, 100*time.Millisecond, "client")
			c.Win[server] = 32768 // << 7: 4 MB
			rounds(c, client, tc.flights, 1448, []time.Duration{100 * time.Millisecond})
			f := analyze(t, c, Options{}).Flows[0]
			if f.Verdict.Verdict != tc.want {
				t.Errorf("verdict %s (shares %v), want %s", f.Verdict.Verdict, f.Shares, tc.want)
			}
		})
	}
}
