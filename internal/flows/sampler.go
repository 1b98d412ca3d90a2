package flows

import (
	"sync"
	"time"

	"github.com/longhaul/longhaul/internal/results"
)

// Sample is one socket's tcp_info at T seconds after sampling began.
type Sample struct {
	T    float64
	Sock Sock
}

// Sampler reads the sockets a source returns at a fixed interval (the lab
// runner's sock_diag dumps of two namespaces, or the sockets a process
// owns read with Info) and keeps them until taken.
type Sampler struct {
	source   func() ([]Sock, error)
	interval time.Duration
	t0       time.Time

	mu      sync.Mutex
	samples []Sample
	errs    int
	done    chan struct{}
	wg      sync.WaitGroup
}

// NewSampler samples what source returns every interval.
func NewSampler(source func() ([]Sock, error), every time.Duration) *Sampler {
	return &Sampler{source: source, interval: every, done: make(chan struct{})}
}

// Start begins sampling; t0 is the time origin of the samples.
func (p *Sampler) Start(t0 time.Time) {
	p.t0 = t0
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(p.interval)
		defer tick.Stop()
		for {
			p.sample()
			select {
			case <-p.done:
				return
			case <-tick.C:
			}
		}
	}()
}

// Take returns the samples taken since the last Take.
func (p *Sampler) Take() []Sample {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.samples
	p.samples = nil
	return out
}

// Stop takes a last sample, stops and returns what Take has not yet
// returned. A sampler that was never started only takes the last sample.
func (p *Sampler) Stop() []Sample {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.wg.Wait()
	p.sample()
	return p.Take()
}

// Errors is how many reads of the source failed.
func (p *Sampler) Errors() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errs
}

func (p *Sampler) sample() {
	t := time.Since(p.t0).Seconds()
	socks, err := p.source()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.errs++
	}
	for _, k := range socks {
		p.samples = append(p.samples, Sample{T: t, Sock: k})
	}
}

// ResultSample converts a socket's tcp_info at t seconds to the sample
// of the lab's and test's documents (what the report draws); end names
// the host ("client", "server").
func ResultSample(t float64, end string, k Sock) results.Sample {
	s := results.Sample{
		T: t, End: end, Sock: k.Key(), State: k.State,
		CwndB:         k.Cwnd,
		InFlight:      k.Inflight,
		SndWnd:        k.SndWnd,
		RcvSpace:      k.RcvSpace,
		RTT:           k.RTT.Seconds(),
		BytesAcked:    k.BytesAcked,
		Delivered:     k.BytesAcked + k.SackedBytes,
		BytesReceived: k.BytesReceived,
		Retrans:       k.Retrans,
		DeliveryRate:  k.DeliveryBps,
		BusyS:         k.Busy.Seconds(),
		RwndLimitedS:  k.RwndLimited.Seconds(),
		SndbufLimS:    k.SndbufLimited.Seconds(),
		NotSent:       k.NotSent,
		ReordSeen:     k.ReordSeen,
		DSACKDups:     k.DSACKDups,
		RcvOOO:        k.RcvOOO,
	}
	if k.ReordSeen > 0 {
		s.Reordering = k.Reordering // 3 (the default) says nothing
	}
	return s
}
