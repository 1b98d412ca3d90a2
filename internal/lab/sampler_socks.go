//go:build linux

package lab

import (
	"time"

	"github.com/longhaul/longhaul/internal/flows"
)

// SockSampler is the runner's tcp_info sampler over a caller's sockets,
// keeping the sockets themselves (longhaul test judges them with
// flows.Judge and streams them to its peer).
type SockSampler struct{ s *sampler }

// NewSourceSampler samples what source returns every interval: the
// sockets a process owns, read with flows.Info.
func NewSourceSampler(source func() ([]flows.Sock, error), every time.Duration) *SockSampler {
	return &SockSampler{s: &sampler{interval: every, done: make(chan struct{}), source: source}}
}

// Start begins sampling; t0 is the time origin of the samples.
func (p *SockSampler) Start(t0 time.Time) { p.s.start(t0) }

// Take returns the samples taken since the last Take.
func (p *SockSampler) Take() []SockSample {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	out := p.s.raw
	p.s.raw = nil
	return out
}

// Stop takes a last sample, stops and returns what Take has not yet
// returned.
func (p *SockSampler) Stop() []SockSample {
	p.s.stop()
	return p.Take()
}
