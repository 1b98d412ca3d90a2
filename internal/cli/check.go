package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
)

// Self-test tolerances. The emulator's own idle RTT target is 0.5 ms
// (checked with ping by make bench-emulator); the Go UDP probes used here
// add their own scheduling on both ends (+0.1-0.2 ms measured), so the
// self-test allows 1 ms. Goodput: the share of the goodput ceiling a
// single flow with ample buffers must reach.
const (
	checkRTTTolerance = time.Millisecond
	checkGoodputShare = 0.90
	checkProbes       = 20
	checkPort         = 7
)

// runCheck brings the path up with buffers of 2.5 BDP in both namespaces,
// measures RTT with UDP echo probes and goodput with one TCP download, and
// compares both with the configuration.
func runCheck(ctx context.Context, a emulateArgs, stderr io.Writer) error {
	_, down, rtt, err := a.linkConfigs()
	if err != nil {
		return err
	}
	buf := int64(4 << 20)
	if down.RateBps > 0 {
		buf = max(buf, int64(2.5*pathmodel.BDP(down.RateBps, rtt)+float64(down.QueueBytes)))
	} else {
		buf = 256 << 20
	}
	buf = min(buf, pathmodel.MaxBuffer)
	tcp := func(key string) topo.Sysctl { return topo.Sysctl{Key: key, Value: fmt.Sprintf("4096 131072 %d", buf)} }
	extra := []topo.Sysctl{tcp("net.ipv4.tcp_rmem"), tcp("net.ipv4.tcp_wmem")}
	dur := max(5*time.Second, 20*rtt)
	if a.checkTime != "" {
		if dur, err = units.ParseDuration(a.checkTime); err != nil || dur <= 0 {
			return usagef("--check-time: want a positive duration like 10s")
		}
	}
	p, err := upPath(ctx, a, stderr, extra, extra)
	if err != nil {
		return err
	}
	defer p.Close()
	cl, sv := p.Topo.Client(), p.Topo.Server()

	rtts, err := probeRTT(ctx, cl.Netns, sv.Netns, sv.Addr.String())
	if err != nil {
		return fmt.Errorf("emulate --check: rtt: %w", err)
	}
	goodput, err := measureGoodput(ctx, cl.Netns, sv.Netns, sv.Addr.String(), dur)
	if err != nil {
		return fmt.Errorf("emulate --check: goodput: %w", err)
	}
	st := p.Emu.Stop()
	printLinkStats(stderr, st)

	slices.Sort(rtts)
	var sum time.Duration
	for _, r := range rtts {
		sum += r
	}
	mean := sum / time.Duration(len(rtts))
	p99 := rtts[min(len(rtts)-1, len(rtts)*99/100)]
	rttErr := mean - rtt
	ok := true
	verdict := func(pass bool) string {
		if !pass {
			ok = false
			return "FAIL"
		}
		return "ok"
	}
	fmt.Fprintf(stderr, "longhaul: self-test (%d UDP probes, one TCP download for %s, buffers %s)\n", len(rtts), units.FormatDuration(dur), units.FormatIEC(float64(buf)))
	fmt.Fprintf(stderr, "  rtt      configured %-12s measured mean %s, p99 %s (error %+.3f ms)  %s\n",
		units.FormatDuration(rtt), units.FormatDuration(mean), units.FormatDuration(p99), float64(rttErr)/1e6,
		verdict(rttErr >= -checkRTTTolerance && rttErr <= checkRTTTolerance))
	if down.RateBps > 0 {
		mtu := 1500
		ceiling := down.RateBps * float64(mtu-52) / float64(mtu+38)
		fmt.Fprintf(stderr, "  goodput  ceiling %-15s measured %s (%.1f%%)  %s\n",
			units.FormatRate(ceiling), units.FormatRate(goodput), 100*goodput/ceiling, verdict(goodput >= checkGoodputShare*ceiling))
	} else {
		fmt.Fprintf(stderr, "  goodput  unlimited rate: measured %s (window-bound: %s buffers at %s allow %s)\n",
			units.FormatRate(goodput), units.FormatIEC(float64(buf)), units.FormatDuration(rtt),
			units.FormatRate(pathmodel.WindowCeiling(float64(buf)*pathmodel.DefaultScalingRatio, rtt)))
	}
	fmt.Fprintf(stderr, "  emulator %s  %s\n", overloadText(st.Overloaded), verdict(!st.Overloaded))
	if !ok {
		return errors.New("emulate --check: the path does not match its configuration (see above)")
	}
	return nil
}

func overloadText(o bool) string {
	if o {
		return "overloaded: it dropped or delayed frames itself"
	}
	return "not overloaded"
}

// listenIn opens a listener inside namespace ns: a socket stays in the
// namespace it was created in, whichever thread later uses it.
func listenIn[T any](ns string, open func() (T, error)) (T, error) {
	var v T
	err := netns.Do(ns, func() error {
		var err error
		v, err = open()
		return err
	})
	return v, err
}

// probeRTT sends UDP probes from the client namespace to an echo server in
// the server namespace, one at a time.
func probeRTT(ctx context.Context, clientNS, serverNS, server string) ([]time.Duration, error) {
	addr := net.JoinHostPort(server, strconv.Itoa(checkPort))
	pc, err := listenIn(serverNS, func() (net.PacketConn, error) { return net.ListenPacket("udp4", addr) })
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	go func() {
		b := make([]byte, 64)
		for {
			n, from, err := pc.ReadFrom(b)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(b[:n], from)
		}
	}()
	c, err := listenIn(clientNS, func() (net.Conn, error) { return net.Dial("udp4", addr) })
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []time.Duration
	b := make([]byte, 64)
	for i := 0; i < checkProbes && ctx.Err() == nil; i++ {
		t0 := time.Now()
		_ = c.SetDeadline(t0.Add(5 * time.Second))
		if _, err := c.Write([]byte(strconv.Itoa(i))); err != nil {
			return nil, err
		}
		if _, err := c.Read(b); err != nil {
			return nil, fmt.Errorf("probe %d: %w", i, err)
		}
		out = append(out, time.Since(t0))
		time.Sleep(50 * time.Millisecond)
	}
	if len(out) == 0 {
		return nil, ctx.Err()
	}
	return out, nil
}

// measureGoodput downloads from the server namespace for d and returns the
// goodput over the second half (after slow start).
func measureGoodput(ctx context.Context, clientNS, serverNS, server string, d time.Duration) (float64, error) {
	addr := net.JoinHostPort(server, "5299")
	ln, err := listenIn(serverNS, func() (net.Listener, error) { return net.Listen("tcp4", addr) })
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		chunk := make([]byte, 1<<20)
		deadline := time.Now().Add(d)
		_ = c.SetWriteDeadline(deadline.Add(10 * time.Second))
		for time.Now().Before(deadline) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	c, err := listenIn(clientNS, func() (net.Conn, error) { return net.DialTimeout("tcp4", addr, 10*time.Second) })
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	half := start.Add(d / 2)
	var bytes int64
	var from time.Time
	b := make([]byte, 1<<20)
	_ = c.SetReadDeadline(start.Add(d + 30*time.Second))
	for ctx.Err() == nil {
		n, err := c.Read(b)
		now := time.Now()
		if !now.Before(half) {
			if from.IsZero() {
				from = now
			} else {
				bytes += int64(n)
			}
		}
		if err != nil {
			break
		}
	}
	if el := time.Since(from).Seconds(); !from.IsZero() && el > 0 {
		return float64(bytes) * 8 / el, nil
	}
	return 0, errors.New("the transfer ended before its second half")
}
