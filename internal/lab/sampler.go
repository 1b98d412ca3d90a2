package lab

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/results"
)

// sampler reads tcp_info (sock_diag, INET_DIAG_INFO) of the sockets on
// one port in both namespaces at a fixed interval.
type sampler struct {
	handles  [2]*netlink.Handle // client, server
	port     uint16
	interval time.Duration
	t0       time.Time

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
		nsh, err := vnetns.GetFromPath(netns.Path(ns))
		if err != nil {
			s.close()
			return nil, fmt.Errorf("open namespace %s: %w", ns, err)
		}
		s.handles[i], err = netlink.NewHandleAt(nsh, unix.NETLINK_INET_DIAG)
		nsh.Close()
		if err != nil {
			s.close()
			return nil, fmt.Errorf("sock_diag in %s: %w", ns, err)
		}
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
	for _, h := range s.handles {
		if h != nil {
			h.Close()
		}
	}
}

func (s *sampler) sample() {
	t := time.Since(s.t0).Seconds()
	for i, h := range s.handles {
		if h == nil {
			continue
		}
		socks, err := h.SocketDiagTCPInfo(unix.AF_INET)
		if err != nil && len(socks) == 0 {
			s.mu.Lock()
			s.errs++
			s.mu.Unlock()
			continue
		}
		for _, r := range socks {
			m := r.InetDiagMsg
			if m == nil || r.TCPInfo == nil {
				continue
			}
			local, remote := m.ID.SourcePort, m.ID.DestinationPort
			if (i == 1 && local != s.port) || (i == 0 && remote != s.port) {
				continue
			}
			ti := r.TCPInfo
			if ti.State == 10 { // LISTEN
				continue
			}
			s.mu.Lock()
			s.samples = append(s.samples, toSample(t, endNames[i], flows.FromTCPInfo(flows.AddrPort(m.ID.Source, local), flows.AddrPort(m.ID.Destination, remote), ti)))
			s.mu.Unlock()
		}
	}
}

// toSample converts a socket's tcp_info to the results' units.
func toSample(t float64, end string, k flows.Sock) results.Sample {
	return results.Sample{
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
	}
}

// setRouteWindows sets initcwnd and initrwnd (segments; 0 leaves the
// kernel default) on the route to peer inside namespace ns, like
// `ip route change PEER dev lh0 initcwnd N initrwnd M`, and returns the
// values read back.
func setRouteWindows(ns string, peer netip.Addr, cwnd, rwnd int) (gotCwnd, gotRwnd int, err error) {
	err = netns.Do(ns, func() error {
		routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if r.Dst == nil || !r.Dst.IP.Equal(peer.AsSlice()) {
				continue
			}
			if cwnd > 0 || rwnd > 0 {
				r.InitCwnd, r.InitRwnd = cwnd, rwnd
				if err := netlink.RouteReplace(&r); err != nil {
					return fmt.Errorf("set initcwnd %d initrwnd %d on the route to %v: %w", cwnd, rwnd, peer, err)
				}
			}
			routes, err = netlink.RouteList(nil, netlink.FAMILY_V4)
			if err != nil {
				return err
			}
			for _, r := range routes {
				if r.Dst != nil && r.Dst.IP.Equal(peer.AsSlice()) {
					gotCwnd, gotRwnd = r.InitCwnd, r.InitRwnd
					return nil
				}
			}
			return fmt.Errorf("the route to %v vanished", peer)
		}
		return fmt.Errorf("no route to %v in namespace %s", peer, ns)
	})
	return gotCwnd, gotRwnd, err
}
