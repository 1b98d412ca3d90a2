//go:build linux

package twohost

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// Client defaults.
const (
	DefaultRounds  = 60
	DefaultStreams = 8
	helloTimeout   = 10 * time.Second
	// acceptWait is how long the server's Accepted may take (it gathers
	// its snapshot first), and blackHoleMSS the segment size of the
	// second try when it never came: 1200 bytes fit IPv6's 1280-byte
	// minimum MTU with its headers and options, and any tunnel's.
	acceptWait      = 10 * time.Second
	blackHoleMSS    = 1200
	loadedPingEvery = 200 * time.Millisecond
)

// clientIdle is the most the server may stay silent when it owes an
// answer (a phase's grant, a stream's start, data); a variable for the
// tests of a server that stops answering.
var clientIdle = 30 * time.Second

// controlSilence is the most the control connection may carry nothing
// from the server: it answers pings every loadedPingEvery in a phase.
var controlSilence = 2 * clientIdle

// ClientOptions is what a test does.
type ClientOptions struct {
	Addr  string // host:port
	Token []byte
	TLS   *tls.Config // nil: plain TCP
	Netns string      // run in this network namespace ("" the process's)
	// Download and Upload select the single-stream phases; Streams > 1
	// adds a download on that many streams (the capacity phase).
	Download, Upload bool
	Streams          int
	// Rounds sets a phase's length in round trips (at least MinPhase);
	// Duration, if set, overrides it.
	Rounds   int
	Duration time.Duration
	RateBps  float64 // ask the server to pace at this rate; 0 none
	// MaxPhaseBytes, if set, caps what one phase may move: the server is
	// asked to pace at most MaxPhaseBytes*8 over the phase's length
	// (known once the RTT is: Rounds).
	MaxPhaseBytes int64
	// CCs adds a download phase per congestion control, the server
	// sending with it (the same path under cubic and bbr, say).
	CCs []string
	// LossProbes: when the single-stream download lost segments, follow
	// it with the phases that tell the path's causes apart
	// (lossProbePlan): sent with bbr when the server has it and CCs
	// lacks it, then paced below and above the most a download carried
	// (a shallow buffer loses only bursts, a policer everything above
	// its rate, random loss the same share at any rate).
	LossProbes bool
	// MSS clamps the segments of every connection (TCP_MAXSEG before
	// connect: this host's SYN asks the server for segments no larger);
	// 0 none. Run sets it itself when the server's first large message
	// never arrives (a PMTU black hole).
	MSS         int
	DialTimeout time.Duration
	// HelloTimeout is the most each connection's handshake may take once
	// connected (TLS, the server's hello, its welcome to the token's
	// proof); 0: 10 s. A prober gives a few seconds: a host that accepts
	// and stays silent must not hold it longer than a real serve, which
	// answers in a few round trips, takes.
	HelloTimeout time.Duration
	// Admit, if set, is called when the control connection's handshake
	// has proved that the server holds the token, before the test starts
	// (again if Run retries with a smaller MSS); an error ends Run with
	// it. A prober takes one of its --probe-concurrency slots there, so
	// that only targets that are longhaul serves hold them.
	Admit       func() error
	SampleEvery time.Duration
	Progress    io.Writer // one line per step; nil none
	// Tick, if set, is called every second while a phase runs.
	Tick func(Progress)
	// Snapshot gathers this host's state; nil uses snapshot.Gather.
	Snapshot func() (*snapshot.Snapshot, error)
}

// Progress is a running phase's state, for a progress line.
type Progress struct {
	Phase          string
	Elapsed, Total time.Duration
	Bytes          int64   // moved by this host so far
	RateBps        float64 // over the last second
	Done           bool    // the phase's streams have ended
}

// Run runs a test against a server. A phase that fails after others
// ran ends it with those measured and a *PartialError.
func Run(ctx context.Context, o ClientOptions) (*judge.Raw, error) {
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.SampleEvery == 0 {
		o.SampleEvery = 100 * time.Millisecond
	}
	if o.Snapshot == nil {
		ns := o.Netns
		o.Snapshot = func() (*snapshot.Snapshot, error) { return snapshot.Gather(snapshot.Options{Netns: ns}) }
	}
	mine, err := o.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("test: this host's settings: %w", err)
	}
	cc, err := dialControl(ctx, o)
	blackHole := 0
	if errors.Is(err, errNoLargeMessage) && o.MSS == 0 && ctx.Err() == nil {
		o.progress("the server's first large message did not arrive within %s: trying again with %d-byte segments (a path that drops full-size packets, a PMTU black hole?)", acceptWait, blackHoleMSS)
		o.MSS = blackHoleMSS
		if cc, err = dialControl(ctx, o); err == nil {
			blackHole = blackHoleMSS
		}
	}
	if err != nil {
		return nil, err
	}
	defer cc.close()
	defer context.AfterFunc(ctx, cc.close)() // the pings and waits between phases end with ctx too
	cc.wchunk = streamio.WriteChunk(mine)
	raw := &judge.Raw{Server: o.Addr, Started: time.Now().UTC(), Client: mine, ServerSnap: cc.acc.Snapshot, Caps: cc.acc.Caps, BlackHoleMSS: blackHole}
	o.progress("connected to %s: session %s, the server allows %s", o.Addr, cc.acc.Session[:8], cc.acc.Caps.Text())
	if raw.IdleRTTs, err = cc.pings(ctx, RTTProbes, pingGap); err != nil {
		return nil, err
	}
	plan, d, err := o.planPhases(ctx, raw, time.Since(cc.began))
	if err != nil {
		return nil, err
	}
	raw.PhaseLength = d
	ofBest := map[int]float64{} // probes paced at a share of probeBest
	for i := 0; i < len(plan); i++ {
		p := plan[i]
		if x := ofBest[i]; x > 0 {
			best := probeBest(raw)
			if p.Name == wire.PhaseUDP {
				best = probeCeiling(raw)
			}
			p.RateBps = max(p.RateBps, x*best)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("test: interrupted before the %s phase: %w", p.Name, ctx.Err())
		}
		o.progress("%s: %d stream(s) for %s", p.Name, p.Streams, d.Round(100*time.Millisecond))
		pr, err := cc.phase(ctx, o, p)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("test: interrupted during the %s phase: %w", p.Name, ctx.Err())
		}
		if err != nil {
			return partial(raw, plan[i:], err)
		}
		raw.Phases = append(raw.Phases, pr)
		if o.LossProbes && p.Name == wire.PhaseDownload && p.CC == "" && p.RateBps == o.RateBps {
			for _, x := range o.lossProbes(pr, raw, d, time.Since(cc.began)) {
				if x.ofBest > 0 {
					ofBest[len(plan)] = x.ofBest
				}
				plan = append(plan, x.req)
			}
		}
	}
	_ = cc.send(wire.TypeBye, nil)
	return raw, nil
}

func (o ClientOptions) progress(format string, a ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "longhaul: "+format+"\n", a...)
	}
}

// errNoLargeMessage: the server's Accepted did not arrive in time, while
// its hello and welcome, single small segments, did.
var errNoLargeMessage = errors.New("the server's session answer (its snapshot, several full-size segments) did not arrive in time, its small messages did: a path that drops full-size packets (a PMTU black hole), or a server too busy to answer")

// ctrl is the client's control connection.
type ctrl struct {
	c      net.Conn
	acc    wire.Accepted
	began  time.Time
	wmu    sync.Mutex
	wchunk int // bytes per write of an upload

	frames chan wire.Frame // everything but pongs and samples
	rerr   chan error

	mu      sync.Mutex
	pingAt  map[int]time.Time
	pongs   []time.Duration
	samples []flows.Sample
	seq     int
}

func dialControl(ctx context.Context, o ClientOptions) (*ctrl, error) {
	c, err := clientHandshake(ctx, o, wire.Auth{Purpose: wire.PurposeControl})
	if err != nil {
		return nil, fmt.Errorf("test: %w", err)
	}
	if o.Admit != nil {
		if err := o.Admit(); err != nil {
			c.Close()
			return nil, err
		}
	}
	cc := &ctrl{c: c, began: time.Now(), frames: make(chan wire.Frame, 16), rerr: make(chan error, 1), pingAt: map[int]time.Time{}}
	if err := cc.send(wire.TypeStart, wire.Start{Software: wire.Software, PlannedS: o.planned(ctx, c)}); err != nil {
		c.Close()
		return nil, err
	}
	// Accepted carries the server's snapshot: several full-size segments,
	// the first this connection needs. Silence while the small ones
	// before it came through is a path that drops large packets.
	_ = c.SetReadDeadline(time.Now().Add(acceptWait))
	unwatch := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	f, err := wire.ReadFrame(c, wire.MaxServerFrame)
	unwatch()
	if err == nil {
		if re := wire.AsError(f); re != nil {
			err = re
		} else {
			err = wire.Decode(f, wire.TypeAccepted, &cc.acc)
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errNoLargeMessage
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("test: %s: %w", o.Addr, err)
	}
	go cc.read()
	return cc, nil
}

func (cc *ctrl) close() { cc.c.Close() }

func (cc *ctrl) send(typ string, body any) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	_ = cc.c.SetWriteDeadline(time.Now().Add(clientIdle))
	return wire.WriteMsg(cc.c, typ, body)
}

// read dispatches the server's frames until the connection ends.
func (cc *ctrl) read() {
	for {
		_ = cc.c.SetReadDeadline(time.Now().Add(controlSilence))
		f, err := wire.ReadFrame(cc.c, wire.MaxServerFrame)
		now := time.Now()
		if err != nil {
			cc.rerr <- err
			return
		}
		switch f.Type {
		case wire.TypePong:
			var p wire.Ping
			if wire.Decode(f, wire.TypePong, &p) == nil {
				cc.mu.Lock()
				if t, ok := cc.pingAt[p.Seq]; ok {
					cc.pongs = append(cc.pongs, now.Sub(t))
					delete(cc.pingAt, p.Seq)
				}
				cc.mu.Unlock()
			}
		case wire.TypeSamples:
			var s wire.Samples
			if err := wire.Decode(f, wire.TypeSamples, &s); err != nil {
				cc.rerr <- err
				return
			}
			cc.mu.Lock()
			cc.samples = append(cc.samples, wire.FromWire(s.Samples)...)
			cc.mu.Unlock()
		default:
			cc.frames <- f
		}
	}
}

func (cc *ctrl) ping() error {
	cc.mu.Lock()
	cc.seq++
	cc.pingAt[cc.seq] = time.Now()
	seq := cc.seq
	cc.mu.Unlock()
	return cc.send(wire.TypePing, wire.Ping{Seq: seq})
}

// takePongs returns the RTTs measured since the last call.
func (cc *ctrl) takePongs() []time.Duration {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	out := cc.pongs
	cc.pongs = nil
	return out
}

// pings measures n RTTs one at a time, gap apart.
func (cc *ctrl) pings(ctx context.Context, n int, gap time.Duration) ([]time.Duration, error) {
	for i := 0; i < n && ctx.Err() == nil; i++ {
		if err := cc.ping(); err != nil {
			return nil, fmt.Errorf("test: rtt: %w", err)
		}
		deadline := time.Now().Add(clientIdle)
		for len(cc.peekPongs()) <= i && time.Now().Before(deadline) {
			select {
			case err := <-cc.rerr:
				return nil, fmt.Errorf("test: rtt: %w", err)
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(gap)
	}
	out := cc.takePongs()
	if len(out) == 0 {
		return nil, errors.New("test: rtt: no answer to any ping")
	}
	return out, ctx.Err()
}

func (cc *ctrl) peekPongs() []time.Duration {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.pongs
}

// await returns the next frame of type typ (an error frame as an error).
func (cc *ctrl) await(typ string, timeout time.Duration) (wire.Frame, error) {
	want := func(f wire.Frame) (wire.Frame, error) {
		if re := wire.AsError(f); re != nil {
			return f, re
		}
		if f.Type != typ {
			return f, fmt.Errorf("%w: got %.32q, want %q", wire.ErrFrame, f.Type, typ)
		}
		return f, nil
	}
	select {
	case f := <-cc.frames:
		return want(f)
	case err := <-cc.rerr:
		cc.rerr <- err
		// A server that refuses and closes: its refusal came first.
		select {
		case f := <-cc.frames:
			return want(f)
		default:
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return wire.Frame{}, fmt.Errorf("the server sent nothing on the control connection for %s, no answer to this host's pings either: it may be overloaded (CPU)", units.FormatDuration(controlSilence))
		}
		return wire.Frame{}, fmt.Errorf("control connection: %w", err)
	case <-time.After(timeout):
		return wire.Frame{}, silentError{typ, timeout}
	}
}
