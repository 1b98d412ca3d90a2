//go:build linux

package flows

// Dumper reads the TCP sockets of one network namespace over sock_diag,
// with tcp_info, the congestion control and the socket's memory
// (RawDumper underneath).
type Dumper struct {
	r *RawDumper
}

// Open returns a Dumper for the named namespace (as in ip netns), or the
// caller's own for "".
func Open(ns string) (*Dumper, error) {
	r, err := OpenRaw(ns)
	if err != nil {
		return nil, err
	}
	return &Dumper{r: r}, nil
}

// Close releases the netlink socket.
func (d *Dumper) Close() { _ = d.r.Close() }

// Dump returns every TCP socket (IPv4 and IPv6) that carries tcp_info:
// all but listeners, SYN_RECV and TIME_WAIT.
func (d *Dumper) Dump() ([]Sock, error) { return d.r.Dump(nil) }
