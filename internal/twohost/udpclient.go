//go:build linux

package twohost

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/longhaul/longhaul/internal/cpuuse"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"golang.org/x/sys/unix"
)

// Timing of a datagram run on the client: a hello every udpHelloEvery
// until the first datagram (a hello lost on the way is sent again), and
// the end once the server's phase-done came and udpQuiet passed without
// a datagram.
const (
	udpHelloEvery = 100 * time.Millisecond
	udpHellos     = 30
	udpQuiet      = 300 * time.Millisecond
)

// udpPhase asks for a datagram run (PhaseUDP) and receives it on a
// socket connected to the server's address, with the kernel's receive
// time of each datagram.
func (cc *ctrl) udpPhase(ctx context.Context, o ClientOptions, r wire.PhaseReq) (judge.PhaseRaw, error) {
	pr := judge.PhaseRaw{AskedPace: r.RateBps}
	var err error
	pr.Grant, err = cc.ask(r)
	if err == nil && pr.Grant.Name != wire.PhaseUDP {
		err = fmt.Errorf("%w: a %.20q grant for a datagram run", wire.ErrFrame, pr.Grant.Name)
	}
	if err != nil {
		return pr, err
	}
	d := time.Duration(pr.Grant.DurationS * float64(time.Second))
	done := make(chan struct{})
	var doneErr error
	go func() {
		// The server ends the run (phase-done) without a hello too.
		f, err := cc.await(wire.TypePhaseDone, wire.UDPClaimWindow+d+clientIdle)
		if err == nil {
			err = wire.Decode(f, wire.TypePhaseDone, &pr.Done)
		}
		doneErr = err
		close(done)
	}()
	pc, err := dialUDP(o.Netns, cc.c.RemoteAddr())
	if err != nil {
		// The server's run ends without a hello; the test goes on, bbr's
		// pings judging the queue.
		o.progress("no datagram run: %v", err)
		<-done
		pr.UDP = &wire.UDPStats{}
		return pr, doneErr
	}
	defer pc.Close()
	unwatch := context.AfterFunc(ctx, func() {
		pc.Close()
		cc.c.Close()
	})
	defer unwatch()
	cpu0, cpuOK := cpuuse.Now()
	got := make(chan struct{})
	go sayHello(pc, pr.Grant.Token, got, done)
	arr := receiveUDP(pc, got, done)
	<-done
	pr.ClientCPU = streamio.CPUOver(cpu0, cpuOK)
	st := wire.UDPStatsOf(arr, pr.Grant.DatagramBytes)
	pr.UDP = &st
	return pr, doneErr
}

// sayHello sends the run's hello until the first datagram came (got),
// the run ended (done) or udpHellos were sent.
func sayHello(pc *net.UDPConn, token []byte, got, done chan struct{}) {
	t := time.NewTicker(udpHelloEvery)
	defer t.Stop()
	for range udpHellos {
		if _, err := pc.Write(wire.UDPHello(token)); errors.Is(err, net.ErrClosed) {
			return
		}
		select {
		case <-got:
			return
		case <-done:
			return
		case <-t.C:
		}
	}
}

// receiveUDP records the run's datagrams until the run ended (done) and
// udpQuiet passed without one, or the socket closed.
func receiveUDP(pc *net.UDPConn, got, done chan struct{}) []wire.UDPArrival {
	buf := make([]byte, wire.UDPMaxSize+1)
	oob := make([]byte, unix.CmsgSpace(16))
	var out []wire.UDPArrival
	first := true
	for {
		_ = pc.SetReadDeadline(time.Now().Add(udpQuiet))
		n, oobn, _, _, err := pc.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				select {
				case <-done:
					return out
				default:
					continue
				}
			}
			if errors.Is(err, net.ErrClosed) {
				return out
			}
			continue // an ICMP error (the server's port closed): the run's end decides
		}
		seq, sent, ok := wire.ParseUDPData(buf[:n])
		if !ok {
			continue
		}
		if first {
			close(got)
			first = false
		}
		if len(out) < wire.UDPMaxDatagrams {
			out = append(out, wire.UDPArrival{Seq: seq, Sent: sent, Recv: rxTime(oob[:oobn])})
		}
	}
}

// rxTime is the kernel's receive time of a datagram (SCM_TIMESTAMPNS),
// or now when the socket has none.
func rxTime(oob []byte) int64 {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				sec, nsec := int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:]))
				return sec*1e9 + nsec
			}
		}
	}
	return time.Now().UnixNano()
}

// dialUDP opens a datagram socket connected to the server's address
// (the control connection's: its port number is the datagram port), in
// network namespace ns when given, with receive times on.
func dialUDP(ns string, remote net.Addr) (*net.UDPConn, error) {
	ap, err := netip.ParseAddrPort(remote.String())
	if err != nil {
		return nil, err
	}
	var pc *net.UDPConn
	dial := func() error {
		var err error
		pc, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(ap))
		return err
	}
	if ns == "" {
		err = dial()
	} else {
		err = netns.Do(ns, dial)
	}
	if err != nil {
		return nil, err
	}
	// A run of 2 s at 1 Gbit/s is 250 MB: the socket buffer absorbs
	// what the reader's scheduling delays (capped by rmem_max).
	_ = pc.SetReadBuffer(8 << 20)
	rc, err := pc.SyscallConn()
	if err == nil {
		err = streamio.OnRaw(rc, func(fd int) error { return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) })
	}
	if err != nil {
		pc.Close()
		return nil, err
	}
	return pc, nil
}
