//go:build linux

package streamio

import (
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"github.com/longhaul/longhaul/internal/flows"
)

// Sockets are the data connections of a phase at one end, sampled with
// getsockopt(TCP_INFO) (flows.Info): this process owns them, and a
// sock_diag dump every 100 ms would walk the kernel's whole established
// hash each time.
type Sockets struct {
	mu    sync.Mutex
	conns []net.Conn
}

// Add adds a connection to those sampled.
func (s *Sockets) Add(c net.Conn) {
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

// CloseAll closes every connection (an interrupted phase).
func (s *Sockets) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// Read returns the tcp_info of every connection still open.
func (s *Sockets) Read() ([]flows.Sock, error) {
	s.mu.Lock()
	conns := append([]net.Conn(nil), s.conns...)
	s.mu.Unlock()
	var out []flows.Sock
	for _, c := range conns {
		if tc, ok := c.(*tls.Conn); ok {
			c = tc.NetConn()
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			continue
		}
		k, err := flows.Info(sc, AddrPort(c.LocalAddr()), AddrPort(c.RemoteAddr()))
		if err == nil { // a closed connection has nothing more to say
			out = append(out, k)
		}
	}
	return out, nil
}

// AddrPort is a TCP address as flows names a socket's ends (an IPv4
// address mapped into IPv6 unmapped); the zero value for any other.
func AddrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}
