package lab

import (
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/results"
)

// SockSample is one socket's tcp_info at T seconds after sampling began.
type SockSample struct {
	T    float64    `json:"t"`
	Sock flows.Sock `json:"sock"`
}

// SockSampler is the runner's tcp_info sampler for one namespace and a
// caller's choice of sockets, keeping the sockets themselves (longhaul
// test judges them with flows.Judge and streams them to its peer).
type SockSampler struct{ s *sampler }

// NewSockSampler samples, every interval, the sockets of namespace ns
// ("" the caller's) for which match returns true. match is called from
// the sampling goroutine.
func NewSockSampler(ns string, match func(flows.Sock) bool, every time.Duration) (*SockSampler, error) {
	d, err := flows.Open(ns)
	if err != nil {
		return nil, err
	}
	s := &sampler{interval: every, done: make(chan struct{}), match: match}
	s.dumpers[0] = d
	return &SockSampler{s: s}, nil
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

// ResultSample converts a socket's tcp_info to the lab results' sample
// (what the report draws).
func ResultSample(t float64, end string, k flows.Sock) results.Sample { return toSample(t, end, k) }
