//go:build linux

package lab

import (
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/results"
)

// sampler reads tcp_info (sock_diag, the flows package's dumps) of the
// sockets on one port in both namespaces at a fixed interval, with
// flows.Sampler.
type sampler struct {
	dumpers [2]*flows.Dumper // client, server
	port    uint16
	s       *flows.Sampler
}

// newSampler opens a sock_diag socket in each namespace. port is the
// server's port: the server's sockets have it as local port, the
// client's as remote port.
func newSampler(clientNS, serverNS string, port uint16, interval time.Duration) (*sampler, error) {
	s := &sampler{port: port}
	for i, ns := range []string{clientNS, serverNS} {
		d, err := flows.Open(ns)
		if err != nil {
			s.close()
			return nil, err
		}
		s.dumpers[i] = d
	}
	s.s = flows.NewSampler(s.dump, interval)
	return s, nil
}

// start begins sampling; t0 is the run's time origin.
func (s *sampler) start(t0 time.Time) { s.s.Start(t0) }

// stop takes a last sample and returns them all, each named by its end.
func (s *sampler) stop() []results.Sample {
	raw := s.s.Stop()
	s.close()
	out := make([]results.Sample, 0, len(raw))
	for _, r := range raw {
		end := "client"
		if r.Sock.Local.Port() == s.port {
			end = "server"
		}
		out = append(out, flows.ResultSample(r.T, end, r.Sock))
	}
	return out
}

func (s *sampler) close() {
	for _, d := range s.dumpers {
		if d != nil {
			d.Close()
		}
	}
}

// dump reads both namespaces' sockets on the port: the client's with
// it as remote port, the server's with it as local port. A namespace
// that cannot be read this time is left out of this sample.
func (s *sampler) dump() ([]flows.Sock, error) {
	var out []flows.Sock
	var firstErr error
	for i, d := range s.dumpers {
		socks, err := d.Dump()
		if err != nil {
			firstErr = err
			continue
		}
		for _, k := range socks {
			if (i == 1 && k.Local.Port() == s.port) || (i == 0 && k.Remote.Port() == s.port) {
				out = append(out, k)
			}
		}
	}
	return out, firstErr
}
