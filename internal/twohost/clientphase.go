//go:build linux

package twohost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/longhaul/longhaul/internal/cpuuse"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// phase asks for one phase, runs its streams and collects both ends'
// samples.
func (cc *ctrl) phase(ctx context.Context, o ClientOptions, r wire.PhaseReq) (judge.PhaseRaw, error) {
	if r.Name == wire.PhaseUDP {
		return cc.udpPhase(ctx, o, r)
	}
	pr := judge.PhaseRaw{AskedCC: r.CC}
	if r.RateBps != o.RateBps {
		pr.AskedPace = r.RateBps
	}
	var socks streamio.Sockets
	smp := flows.NewSampler(socks.Read, o.SampleEvery)
	var err error
	if pr.Grant, err = cc.ask(r); err != nil {
		return pr, err
	}
	cc.mu.Lock()
	cc.samples = nil
	cc.mu.Unlock()
	cc.takePongs()
	// Interrupted (Ctrl-C): close the streams and the control
	// connection, so that every read ends now and the server sees the
	// session end, rather than running the phase out.
	unwatch := context.AfterFunc(ctx, func() {
		socks.CloseAll()
		cc.c.Close()
	})
	defer unwatch()
	smp.Start(time.Now())
	cpu0, cpuOK := cpuuse.Now()
	var moved atomic.Int64
	errs := make(chan error, pr.Grant.Streams)
	stop := make(chan struct{})
	go cc.loadedPings(stop)
	var ticking sync.WaitGroup
	if o.Tick != nil {
		ticking.Go(func() { tick(stop, o.Tick, r.Name, time.Duration(pr.Grant.DurationS*float64(time.Second)), &moved) })
	}
	for i := 0; i < pr.Grant.Streams; i++ {
		go func() {
			errs <- cc.stream(ctx, o, pr.Grant, i, &moved, socks.Add)
		}()
	}
	var streamErr error
	for i := 0; i < pr.Grant.Streams; i++ {
		if err := <-errs; err != nil && streamErr == nil {
			streamErr = err
		}
	}
	// A stream that failed fails the phase: its end is not waited for
	// (a server holds a phase whose stream never came for its attach
	// window), and the stream's error, the cause, is what is said.
	d := time.Duration(pr.Grant.DurationS * float64(time.Second))
	var f wire.Frame
	err = streamErr
	if err == nil {
		f, err = cc.await(wire.TypePhaseDone, d+clientIdle)
		err = silentServer(err, "the "+r.Name+" phase's end")
	}
	close(stop)
	ticking.Wait() // its last call (Done) comes before the next line
	pr.Client = smp.Stop()
	if err == nil {
		err = wire.Decode(f, wire.TypePhaseDone, &pr.Done)
	}
	cc.mu.Lock()
	pr.Server, cc.samples = cc.samples, nil
	cc.mu.Unlock()
	pr.LoadedRTTs, pr.ClientBytes = cc.takePongs(), moved.Load()
	pr.ClientCPU = streamio.CPUOver(cpu0, cpuOK)
	return pr, err
}

// ask asks for a phase and returns its grant.
func (cc *ctrl) ask(r wire.PhaseReq) (wire.Grant, error) {
	var g wire.Grant
	if err := cc.send(wire.TypePhase, r); err != nil {
		return g, err
	}
	f, err := cc.await(wire.TypeGrant, clientIdle)
	err = silentServer(err, "the "+r.Name+" phase's start")
	if err == nil {
		err = wire.Decode(f, wire.TypeGrant, &g)
	}
	return g, err
}

// tick reports a phase's progress every second until stop.
func tick(stop chan struct{}, f func(Progress), name string, total time.Duration, moved *atomic.Int64) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	start, last, lastAt := time.Now(), int64(0), time.Now()
	for {
		select {
		case <-stop:
			f(Progress{Phase: name, Elapsed: time.Since(start), Total: total, Bytes: moved.Load(), Done: true})
			return
		case now := <-t.C:
			b := moved.Load()
			f(Progress{Phase: name, Elapsed: now.Sub(start), Total: total, Bytes: b,
				RateBps: float64(b-last) * 8 / now.Sub(lastAt).Seconds()})
			last, lastAt = b, now
		}
	}
}

// loadedPings pings the server while a phase runs: the pong comes back
// through the download direction's queue.
func (cc *ctrl) loadedPings(stop chan struct{}) {
	t := time.NewTicker(loadedPingEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if cc.ping() != nil {
				return
			}
		}
	}
}

// stream opens one data connection of a phase and moves its data.
func (cc *ctrl) stream(ctx context.Context, o ClientOptions, g wire.Grant, i int, moved *atomic.Int64, sample func(net.Conn)) error {
	c, err := clientHandshake(ctx, o, wire.Auth{Purpose: wire.PurposeData, Session: cc.acc.Session, Phase: g.Phase, Stream: i})
	if err != nil {
		return streamHandshake(err, i, o.helloWithin())
	}
	defer c.Close()
	sample(c)
	_ = c.SetReadDeadline(time.Now().Add(clientIdle))
	f, err := wire.ReadFrame(c, wire.MaxServerFrame)
	if err == nil {
		if re := wire.AsError(f); re != nil {
			err = re
		} else if f.Type != wire.TypeGo {
			err = fmt.Errorf("%w: got %.32q, want go", wire.ErrFrame, f.Type)
		}
	}
	if err != nil {
		return streamHandshake(err, i, clientIdle)
	}
	if g.Name == wire.PhaseUpload {
		return upload(c, time.Duration(g.DurationS*float64(time.Second)), cc.wchunk, moved)
	}
	return download(c, moved)
}

// download reads until the server closes.
func download(c net.Conn, moved *atomic.Int64) error {
	buf := make([]byte, streamio.Chunk)
	var dl streamio.Deadline
	lw := streamio.NewLowat(c)
	var got int64
	for {
		dl.Refresh(c.SetReadDeadline, clientIdle, time.Time{})
		n, err := c.Read(buf)
		moved.Add(int64(n))
		got += int64(n)
		lw.Update(got)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// upload writes for d, then half-closes and waits for the server to
// close. A server that stops reading early (its byte cap) ends it too.
func upload(c net.Conn, d time.Duration, wchunk int, moved *atomic.Int64) error {
	buf := make([]byte, wchunk)
	until := time.Now().Add(d)
	streamio.LimitUnsent(c)
	var dl streamio.Deadline
	for time.Now().Before(until) {
		dl.Refresh(c.SetWriteDeadline, clientIdle, time.Time{})
		n, err := c.Write(buf)
		moved.Add(int64(n))
		if err != nil {
			return nil // the server ended the stream (duration or bytes cap)
		}
	}
	streamio.CloseWrite(c)
	_ = c.SetReadDeadline(time.Now().Add(clientIdle))
	_, _ = io.Copy(io.Discard, c)
	return nil
}
