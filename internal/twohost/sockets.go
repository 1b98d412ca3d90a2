//go:build linux

package twohost

import (
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"syscall"

	"github.com/longhaul/longhaul/internal/flows"
)

// sockets are the data connections of a phase at one end, sampled with
// getsockopt(TCP_INFO) (flows.Info): this process owns them, and a
// sock_diag dump every 100 ms would walk the kernel's whole established
// hash each time.
type sockets struct {
	mu    sync.Mutex
	conns []net.Conn
}

func (s *sockets) add(c net.Conn) {
	s.mu.Lock()
	s.conns = append(s.conns, c)
	s.mu.Unlock()
}

// closeAll closes every connection (an interrupted phase).
func (s *sockets) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

// read returns the tcp_info of every connection still open.
func (s *sockets) read() ([]flows.Sock, error) {
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
		k, err := flows.Info(sc, addrPort(c.LocalAddr()), addrPort(c.RemoteAddr()))
		if err == nil { // a closed connection has nothing more to say
			out = append(out, k)
		}
	}
	return out, nil
}

func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		ap := t.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	}
	return netip.AddrPort{}
}
