//go:build linux

package flows

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/longhaul/longhaul/internal/netns"
)

// The sock_diag multicast groups of TCP socket destruction
// (include/uapi/linux/sock_diag.h, enum sknetlink_groups). The kernel
// broadcasts a SOCK_DIAG_BY_FAMILY message with the socket's last
// tcp_info (INET_DIAG_INFO) to them when a socket is freed
// (sock_diag_broadcast_destroy), if anyone listens; joining needs
// CAP_NET_ADMIN in the namespace.
const (
	sknlgrpInetTCPDestroy  = 1
	sknlgrpInet6TCPDestroy = 3

	sizeofNlmsghdr   = 16
	sizeofInetDiag   = 72 // struct inet_diag_msg
	sockDiagByFamily = 20 // SOCK_DIAG_BY_FAMILY
	inetDiagInfo     = 2  // INET_DIAG_INFO
	inetDiagCong     = 4  // INET_DIAG_CONG: the congestion control's name
	inetDiagSkmem    = 7  // INET_DIAG_SKMEMINFO: u32 sk_meminfo[SK_MEMINFO_VARS]
	// diagExt asks for tcp_info, the congestion control and the socket's
	// memory (idiag_ext: bit N-1 for attribute N).
	diagExt       = 1<<(inetDiagInfo-1) | 1<<(inetDiagCong-1) | 1<<(inetDiagSkmem-1)
	destroyRcvBuf = 4 << 20
	nlaTypeMask   = 0x3fff // ^(NLA_F_NESTED | NLA_F_NET_BYTEORDER)
)

// ErrOverrun says the kernel dropped destroy notifications because the
// listener's receive buffer was full (ENOBUFS): the sockets they were
// about are lost to the listener. Reading may continue.
var ErrOverrun = errors.New("sock_diag destroy notifications lost: receive buffer overrun")

// DestroyListener receives the final tcp_info of TCP sockets as the
// kernel frees them, so counters of sockets that closed between two
// dumps are not lost.
type DestroyListener struct {
	f   *os.File
	buf []byte
}

// ListenDestroy joins the TCP destroy groups (IPv4 and IPv6) of the named
// namespace, or the caller's own for "". Without CAP_NET_ADMIN it fails
// with an error wrapping os.ErrPermission.
func ListenDestroy(ns string) (*DestroyListener, error) {
	var fd int
	open := func() error {
		var err error
		fd, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_SOCK_DIAG)
		return err
	}
	var err error
	if ns == "" {
		err = open()
	} else {
		err = netns.Do(ns, open)
	}
	if err != nil {
		return nil, fmt.Errorf("sock_diag destroy listener: %w", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, destroyRcvBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, destroyRcvBuf)
	}
	sa := &unix.SockaddrNetlink{Family: unix.AF_NETLINK,
		Groups: 1<<(sknlgrpInetTCPDestroy-1) | 1<<(sknlgrpInet6TCPDestroy-1)}
	if err := unix.Bind(fd, sa); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("sock_diag destroy listener: join the tcp destroy groups (needs CAP_NET_ADMIN): %w", err)
	}
	return &DestroyListener{f: os.NewFile(uintptr(fd), "sock_diag-destroy"), buf: make([]byte, 64<<10)}, nil
}

// Read waits for the next notification datagram and returns the TCP
// sockets it reports. A deadline (SetDeadline) or Close ends the wait.
func (l *DestroyListener) Read() ([]Sock, error) {
	n, err := l.f.Read(l.buf)
	if err != nil {
		if errors.Is(err, unix.ENOBUFS) {
			return nil, ErrOverrun
		}
		return nil, fmt.Errorf("sock_diag destroy listener: %w", err)
	}
	return ParseDestroy(l.buf[:n])
}

// Close leaves the groups; a blocked Read returns.
func (l *DestroyListener) Close() error { return l.f.Close() }

// ParseDestroy decodes one datagram of sock_diag messages (netlink
// headers, struct inet_diag_msg, attributes) into Socks. Listening and
// unconnected sockets (no remote address) are skipped; a truncated or
// malformed message ends the datagram with an error, after the sockets
// decoded before it.
func ParseDestroy(b []byte) ([]Sock, error) {
	var out []Sock
	for len(b) >= sizeofNlmsghdr {
		n := int(binary.NativeEndian.Uint32(b))
		typ := binary.NativeEndian.Uint16(b[4:])
		if n < sizeofNlmsghdr || n > len(b) {
			return out, fmt.Errorf("sock_diag message: length %d of %d bytes left", n, len(b))
		}
		if typ == sockDiagByFamily {
			s, ok, err := parseInetDiag(b[sizeofNlmsghdr:n])
			if err != nil {
				return out, err
			}
			if ok {
				out = append(out, s)
			}
		}
		b = b[min(nlAlign(n), len(b)):]
	}
	return out, nil
}

func nlAlign(n int) int { return (n + 3) &^ 3 }

// parseInetDiag decodes struct inet_diag_msg (include/uapi/linux/inet_diag.h)
// and its INET_DIAG_INFO attribute.
func parseInetDiag(b []byte) (Sock, bool, error) {
	if len(b) < sizeofInetDiag {
		return Sock{}, false, fmt.Errorf("inet_diag_msg: %d bytes, want %d", len(b), sizeofInetDiag)
	}
	fam := b[0]
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return Sock{}, false, nil
	}
	alen := net.IPv4len
	if fam == unix.AF_INET6 {
		alen = net.IPv6len
	}
	// idiag_sport/dport are big-endian; the addresses are in network order.
	local := AddrPort(net.IP(b[8:8+alen]), binary.BigEndian.Uint16(b[4:]))
	remote := AddrPort(net.IP(b[24:24+alen]), binary.BigEndian.Uint16(b[6:]))
	cookie := uint64(binary.NativeEndian.Uint32(b[44:])) | uint64(binary.NativeEndian.Uint32(b[48:]))<<32
	var info, cong, mem []byte
	for a := b[sizeofInetDiag:]; len(a) >= 4; {
		n, typ := int(binary.NativeEndian.Uint16(a)), binary.NativeEndian.Uint16(a[2:])&nlaTypeMask
		if n < 4 || n > len(a) {
			return Sock{}, false, fmt.Errorf("inet_diag attribute: length %d of %d bytes left", n, len(a))
		}
		switch typ {
		case inetDiagInfo:
			info = a[4:n]
		case inetDiagCong:
			cong = a[4:n]
		case inetDiagSkmem:
			mem = a[4:n]
		}
		a = a[min(nlAlign(n), len(a)):]
	}
	if remote.Addr().IsUnspecified() || remote.Port() == 0 {
		return Sock{}, false, nil
	}
	ti := DecodeTCPInfo(info)
	ti.State = b[1] // the socket's state as the message says; tcp_info's is the same
	s := FromTCPInfo(local, remote, &ti)
	s.Cookie = cookie
	s.CC = ccName(cong)
	s.Sndbuf, s.WmemQueued = memInfo(mem)
	return s, true, nil
}

// Indexes into sk_meminfo (include/uapi/linux/sock_diag.h).
const (
	skMeminfoSndbuf     = 3
	skMeminfoWmemQueued = 5
)

// memInfo reads sk_sndbuf and sk_wmem_queued from the u32 array of
// INET_DIAG_SKMEMINFO or SO_MEMINFO; zeros when it is too short.
func memInfo(b []byte) (sndbuf, queued int64) {
	if len(b) < 4*(skMeminfoWmemQueued+1) {
		return 0, 0
	}
	return int64(binary.NativeEndian.Uint32(b[4*skMeminfoSndbuf:])), int64(binary.NativeEndian.Uint32(b[4*skMeminfoWmemQueued:]))
}

// ccName is the NUL-terminated congestion control name of INET_DIAG_CONG
// or TCP_CONGESTION, kept only if it is a plain lowercase word.
func ccName(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(b) == 0 || len(b) > 16 {
		return ""
	}
	for _, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return ""
		}
	}
	return string(b)
}

// tcpInfoLayout is struct tcp_info (include/uapi/linux/tcp.h) up to
// tcpi_snd_wnd (Linux 5.19): fields at fixed offsets; an older kernel
// sends a shorter struct and the missing fields read as zero.
const sizeofTCPInfo = 232

// DecodeTCPInfo decodes the raw struct tcp_info of INET_DIAG_INFO or
// getsockopt(TCP_INFO) into the fields Sock uses (and a few more).
func DecodeTCPInfo(raw []byte) netlink.TCPInfo {
	var b [sizeofTCPInfo]byte
	copy(b[:], raw)
	u32 := func(off int) uint32 { return binary.NativeEndian.Uint32(b[off:]) }
	u64 := func(off int) uint64 { return binary.NativeEndian.Uint64(b[off:]) }
	return netlink.TCPInfo{
		State: b[0], Ca_state: b[1], Retransmits: b[2], Probes: b[3], Backoff: b[4], Options: b[5],
		Snd_wscale: b[6] & 0xf, Rcv_wscale: b[6] >> 4,
		Rto: u32(8), Ato: u32(12), Snd_mss: u32(16), Rcv_mss: u32(20),
		Unacked: u32(24), Sacked: u32(28), Lost: u32(32), Retrans: u32(36), Fackets: u32(40),
		Pmtu: u32(60), Rcv_ssthresh: u32(64), Rtt: u32(68), Rttvar: u32(72),
		Snd_ssthresh: u32(76), Snd_cwnd: u32(80), Advmss: u32(84), Reordering: u32(88),
		Rcv_rtt: u32(92), Rcv_space: u32(96), Total_retrans: u32(100),
		Pacing_rate: u64(104), Max_pacing_rate: u64(112), Bytes_acked: u64(120), Bytes_received: u64(128),
		Segs_out: u32(136), Segs_in: u32(140), Notsent_bytes: u32(144), Min_rtt: u32(148),
		Data_segs_in: u32(152), Data_segs_out: u32(156), Delivery_rate: u64(160),
		Busy_time: u64(168), Rwnd_limited: u64(176), Sndbuf_limited: u64(184),
		Delivered: u32(192), Delivered_ce: u32(196), Bytes_sent: u64(200), Bytes_retrans: u64(208),
		Dsack_dups: u32(216), Reord_seen: u32(220), Rcv_ooopack: u32(224), Snd_wnd: u32(228),
	}
}
