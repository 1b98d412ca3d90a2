package flows

import (
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
)

// tcpStates names the kernel's TCP states (include/net/tcp_states.h).
var tcpStates = [...]string{1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
	6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN", 11: "CLOSING"}

const (
	stateListen        = 10
	infiniteSsthresh   = 0x7fffffff // TCP_INFINITE_SSTHRESH
	optWindowScale     = 4          // TCPI_OPT_WSCALE
	errNoNamespaceHint = "list them with: ip netns list"
)

// AddrPort converts a sock_diag address (IPv4, IPv6 or IPv4-mapped) and
// port.
func AddrPort(ip net.IP, port uint16) netip.AddrPort {
	a, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(a.Unmap(), port)
}

// FromTCPInfo converts struct tcp_info to a Sock.
func FromTCPInfo(local, remote netip.AddrPort, ti *netlink.TCPInfo) Sock {
	mss := int64(ti.Snd_mss)
	s := Sock{
		Local: local, Remote: remote,
		MSS:           mss,
		Cwnd:          int64(ti.Snd_cwnd) * mss,
		SndWnd:        int64(ti.Snd_wnd),
		RcvSpace:      int64(ti.Rcv_space),
		Inflight:      max(int64(ti.Unacked)-int64(ti.Sacked)-int64(ti.Lost)+int64(ti.Retrans), 0) * mss,
		SackedBytes:   int64(ti.Sacked) * mss,
		NotSent:       int64(ti.Notsent_bytes),
		RTT:           time.Duration(ti.Rtt) * time.Microsecond,
		MinRTT:        time.Duration(ti.Min_rtt) * time.Microsecond,
		BytesAcked:    int64(ti.Bytes_acked),
		BytesReceived: int64(ti.Bytes_received),
		BytesSent:     int64(ti.Bytes_sent),
		BytesRetrans:  int64(ti.Bytes_retrans),
		Retrans:       int64(ti.Total_retrans),
		DataSegsOut:   int64(ti.Data_segs_out),
		Busy:          time.Duration(ti.Busy_time) * time.Microsecond,
		RwndLimited:   time.Duration(ti.Rwnd_limited) * time.Microsecond,
		SndbufLimited: time.Duration(ti.Sndbuf_limited) * time.Microsecond,
		CAState:       ti.Ca_state,
		RTOs:          int64(ti.Retransmits),
		WindowScale:   ti.Options&optWindowScale != 0,
		DeliveryBps:   float64(ti.Delivery_rate) * 8,
		ReordSeen:     int64(ti.Reord_seen),
		Reordering:    int64(ti.Reordering),
		DSACKDups:     int64(ti.Dsack_dups),
		RcvOOO:        int64(ti.Rcv_ooopack),
	}
	if ti.Snd_ssthresh < infiniteSsthresh {
		s.Ssthresh = int64(ti.Snd_ssthresh) * mss
	}
	if int(ti.State) < len(tcpStates) {
		s.State = tcpStates[ti.State]
	}
	return s
}

// Filter selects sockets: by the remote address's prefix and by a port
// at either end. The zero Filter selects all.
type Filter struct {
	Dst  netip.Prefix // zero: any
	Port uint16       // 0: any
}

// Match reports whether s passes the filter.
func (f Filter) Match(s Sock) bool {
	if f.Dst.IsValid() && !f.Dst.Contains(s.Remote.Addr()) {
		return false
	}
	return f.Port == 0 || s.Local.Port() == f.Port || s.Remote.Port() == f.Port
}
