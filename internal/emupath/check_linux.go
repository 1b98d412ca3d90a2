package emupath

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/longhaul/longhaul/internal/netns"
)

// Check measures a running path brought up with CheckSysctls: UDP echo
// probes for the RTT, then one TCP download of length d for the goodput.
// It stops the emulator and returns its statistics with the measurement.
func Check(ctx context.Context, p *Path, d time.Duration) (CheckResult, error) {
	cl, sv := p.Topo.Client(), p.Topo.Server()
	res := CheckResult{Duration: d}
	var err error
	if res.RTTs, err = probeRTT(ctx, cl.Netns, sv.Netns, sv.Addr.String()); err != nil {
		return res, fmt.Errorf("self-test: rtt: %w", err)
	}
	if res.Goodput, err = measureGoodput(ctx, cl.Netns, sv.Netns, sv.Addr.String(), d); err != nil {
		return res, fmt.Errorf("self-test: goodput: %w", err)
	}
	res.Stats = p.Emu.Stop()
	return res, nil
}

// listenIn opens a socket inside namespace ns: a socket stays in the
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
	addr := net.JoinHostPort(server, strconv.Itoa(checkEchoPort))
	pc, err := listenIn(serverNS, func() (net.PacketConn, error) { return net.ListenPacket("udp4", addr) })
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	go echo(pc)
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

// echo answers every datagram until pc is closed.
func echo(pc net.PacketConn) {
	b := make([]byte, 64)
	for {
		n, from, err := pc.ReadFrom(b)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo(b[:n], from)
	}
}

// measureGoodput downloads from the server namespace for d and returns the
// goodput over the second half (after slow start).
func measureGoodput(ctx context.Context, clientNS, serverNS, server string, d time.Duration) (float64, error) {
	addr := net.JoinHostPort(server, strconv.Itoa(checkDataPort))
	ln, err := listenIn(serverNS, func() (net.Listener, error) { return net.Listen("tcp4", addr) })
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go send(ln, d)
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
		if now := time.Now(); !now.Before(half) {
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

// send writes to the first connection ln accepts for d.
func send(ln net.Listener, d time.Duration) {
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
}
