//go:build linux

package lab

import (
	"sync"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/results"
)

// sampler reads tcp_info (sock_diag, the flows package's dumps) of the
// sockets on one port in both namespaces at a fixed interval.
type sampler struct {
	dumpers  [2]*flows.Dumper // client, server
	port     uint16
	interval time.Duration
	t0       time.Time

	// source, when set, replaces the dumps and raw keeps the sockets
	// themselves (see NewSourceSampler).
	source func() ([]flows.Sock, error)
	raw    []SockSample

	mu      sync.Mutex
	samples []results.Sample
	errs    int
	done    chan struct{}
	wg      sync.WaitGroup
}

var endNames = [2]string{"client", "server"}

// newSampler opens a sock_diag socket in each namespace. port is the
// server's port: the server's sockets have it as local port, the
// client's as remote port.
func newSampler(clientNS, serverNS string, port uint16, interval time.Duration) (*sampler, error) {
	s := &sampler{port: port, interval: interval, done: make(chan struct{})}
	for i, ns := range []string{clientNS, serverNS} {
		d, err := flows.Open(ns)
		if err != nil {
			s.close()
			return nil, err
		}
		s.dumpers[i] = d
	}
	return s, nil
}

// start begins sampling; t0 is the run's time origin.
func (s *sampler) start(t0 time.Time) {
	s.t0 = t0
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(s.interval)
		defer tick.Stop()
		for {
			s.sample()
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
}

// stop takes a last sample and returns them all.
func (s *sampler) stop() []results.Sample {
	close(s.done)
	s.wg.Wait()
	s.sample()
	s.close()
	return s.samples
}

func (s *sampler) close() {
	for _, d := range s.dumpers {
		if d != nil {
			d.Close()
		}
	}
}

func (s *sampler) sample() {
	t := time.Since(s.t0).Seconds()
	if s.source != nil {
		socks, err := s.source()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.errs++
		}
		for _, k := range socks {
			s.raw = append(s.raw, SockSample{T: t, Sock: k})
		}
		return
	}
	for i, d := range s.dumpers {
		if d == nil {
			continue
		}
		socks, err := d.Dump()
		if err != nil {
			s.mu.Lock()
			s.errs++
			s.mu.Unlock()
			continue
		}
		for _, k := range socks {
			if (i == 1 && k.Local.Port() != s.port) || (i == 0 && k.Remote.Port() != s.port) {
				continue
			}
			s.mu.Lock()
			s.samples = append(s.samples, toSample(t, endNames[i], k))
			s.mu.Unlock()
		}
	}
}
