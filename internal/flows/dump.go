//go:build linux

package flows

import (
	"errors"
	"fmt"
	"os"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
)

// Dumper reads the TCP sockets of one network namespace over sock_diag.
type Dumper struct {
	h *netlink.Handle
}

// Open returns a Dumper for the named namespace (as in ip netns), or the
// caller's own for "".
func Open(ns string) (*Dumper, error) {
	if ns == "" {
		h, err := netlink.NewHandle(unix.NETLINK_INET_DIAG)
		if err != nil {
			return nil, fmt.Errorf("sock_diag: %w", err)
		}
		return &Dumper{h: h}, nil
	}
	nsh, err := vnetns.GetFromPath(netns.Path(ns))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("network namespace %q does not exist (%s)", ns, errNoNamespaceHint)
		}
		return nil, fmt.Errorf("open network namespace %q: %w", ns, err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh, unix.NETLINK_INET_DIAG)
	if err != nil {
		return nil, fmt.Errorf("sock_diag in %s: %w", ns, err)
	}
	return &Dumper{h: h}, nil
}

// Close releases the netlink socket.
func (d *Dumper) Close() { d.h.Close() }

// Dump returns every non-listening TCP socket (IPv4 and IPv6) with its
// tcp_info.
func (d *Dumper) Dump() ([]Sock, error) {
	var out []Sock
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		rs, err := d.h.SocketDiagTCPInfo(fam)
		if err != nil && len(rs) == 0 {
			return nil, fmt.Errorf("sock_diag dump: %w", err)
		}
		for _, r := range rs {
			m, ti := r.InetDiagMsg, r.TCPInfo
			if m == nil || ti == nil || ti.State == stateListen {
				continue
			}
			s := FromTCPInfo(AddrPort(m.ID.Source, m.ID.SourcePort), AddrPort(m.ID.Destination, m.ID.DestinationPort), ti)
			s.Cookie = uint64(m.ID.Cookie[0]) | uint64(m.ID.Cookie[1])<<32
			out = append(out, s)
		}
	}
	return out, nil
}
