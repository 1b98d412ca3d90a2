//go:build linux

package twohost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/iperf3"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/streamio"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// IperfOptions set up a test against an unmodified iperf3 server.
type IperfOptions struct {
	Addr             string // host:port
	Netns            string
	Duration         time.Duration // each phase (0: DefaultIperfPhase)
	Download, Upload bool
	// Streams > 1 adds a download on that many streams: the path's rate.
	Streams  int
	Progress io.Writer
}

// DefaultIperfPhase is a phase's length unless told: long enough on
// most paths to leave slow start, short enough that three phases stay
// well under iperf3's own 10 s default each.
const DefaultIperfPhase = 5 * time.Second

// iperfBusyTries: a server frees itself a moment after each test, so the
// next phase may find it still "busy" with ours.
const (
	iperfBusyTries = 6
	iperfBusyWait  = 500 * time.Millisecond
	// iperfOtherTries bounds the tries after any other error.
	iperfOtherTries = 3
	// iperfRefusedTries: 3 s of refused control connections after a phase.
	iperfRefusedTries = 12
)

// RunIperf3 runs the phases against the iperf3 server, sampling this
// host's data sockets every 100 ms, and gathers this host's snapshot.
func RunIperf3(ctx context.Context, o IperfOptions) (*judge.IperfRaw, error) {
	if o.Duration <= 0 {
		o.Duration = DefaultIperfPhase
	}
	raw := &judge.IperfRaw{Server: "iperf3://" + o.Addr, Started: time.Now().UTC(), PhaseLength: o.Duration}
	var err error
	if raw.Client, err = snapshot.Gather(snapshot.Options{Netns: o.Netns}); err != nil {
		return nil, fmt.Errorf("this host's snapshot: %w", err)
	}
	type step struct {
		name    string
		streams int
		reverse bool
	}
	var steps []step
	if o.Download {
		steps = append(steps, step{wire.PhaseDownload, 1, true})
	}
	if o.Upload {
		steps = append(steps, step{wire.PhaseUpload, 1, false})
	}
	if o.Download && o.Streams > 1 {
		steps = append(steps, step{wire.PhaseCapacity, o.Streams, true})
	}
	for i, s := range steps {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "longhaul: iperf3 %s: %d stream(s), %s\n", s.name, s.streams, o.Duration)
		}
		var p judge.IperfPhase
		for try := 1; ; try++ {
			p, err = runIperfPhase(ctx, o, s.name, s.streams, s.reverse, i > 0)
			// After our own test the server may still be busy with it, or
			// close a connection its old listener took (plain iperf3 -s on
			// a lossy path did): try again for a while.
			busy := errors.Is(err, iperf3.ErrBusy)
			if err == nil || i == 0 || ctx.Err() != nil || try == iperfBusyTries || (!busy && try == iperfOtherTries) {
				break
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(iperfBusyWait):
			}
		}
		if err != nil {
			return nil, err
		}
		raw.Phases = append(raw.Phases, p)
	}
	return raw, nil
}

// runIperfPhase runs one iperf3 test and samples its data connections.
// again: an earlier phase ran, so a refused control connection is the
// server reopening its listener after our own test (iperf3 -s closes it
// between tests) and is tried again for a while.
func runIperfPhase(ctx context.Context, o IperfOptions, name string, streams int, reverse, again bool) (judge.IperfPhase, error) {
	p := judge.IperfPhase{Name: name}
	var (
		mu    sync.Mutex
		first = true
		smp   *iperfSampler
	)
	opt := iperf3.Options{Addr: o.Addr, Streams: streams, Reverse: reverse, Duration: o.Duration,
		Dial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			mu.Lock()
			ctrl := first
			mu.Unlock()
			start := time.Now()
			c, err := dialIn(ctx, o.Netns, addr, 10*time.Second, 0)
			for tries := 0; err != nil && ctrl && again && (errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)) && tries < iperfRefusedTries; tries++ {
				select {
				case <-ctx.Done():
					return nil, err
				case <-time.After(iperfBusyWait / 2):
				}
				start = time.Now()
				c, err = dialIn(ctx, o.Netns, addr, 10*time.Second, 0)
			}
			mu.Lock()
			if err == nil && first {
				// The control connection's handshake: the path's RTT when
				// the receiver measures none.
				p.Connect, first = time.Since(start), false
			}
			mu.Unlock()
			return c, err
		},
		OnStreams: func(conns []net.Conn) func() {
			s := startIperfSampler(conns, reverse)
			mu.Lock()
			smp = s
			mu.Unlock()
			return s.stop
		},
	}
	res, err := iperf3.Run(ctx, opt)
	mu.Lock()
	s := smp
	mu.Unlock()
	if s != nil {
		s.stop()
		p.Samples, p.Recv = s.samples, s.recv
	}
	if err != nil {
		return p, err
	}
	p.Result = res
	return p, nil
}

// iperfSampler reads the data connections' tcp_info every 100 ms with
// flows.Sampler: every stream's for the sender's judge and the report,
// and the first stream's receive side (the window this host advertised)
// for a download, read in the same tick.
type iperfSampler struct {
	smp     *flows.Sampler
	once    sync.Once
	samples []flows.Sample
	recv    []testdoc.URLSample // appended only by the sampler's reads, which never overlap
}

func startIperfSampler(conns []net.Conn, reverse bool) *iperfSampler {
	s := &iperfSampler{}
	var socks streamio.Sockets
	for _, c := range conns {
		socks.Add(c)
	}
	t0 := time.Now()
	s.smp = flows.NewSampler(func() ([]flows.Sock, error) {
		if reverse && len(conns) > 0 {
			if u, err := urlSample(conns[0], time.Since(t0)); err == nil {
				s.recv = append(s.recv, u)
			}
		}
		return socks.Read()
	}, urlSampleEvery)
	s.smp.Start(t0)
	return s
}

// stop ends the sampling with a last sample, once.
func (s *iperfSampler) stop() {
	s.once.Do(func() { s.samples = s.smp.Stop() })
}
