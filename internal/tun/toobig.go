package tun

import (
	"encoding/binary"
)

// ICMP messages a link with a smaller MTU sends back (RFC 792, RFC 1191,
// RFC 4443).
const (
	icmpDestUnreachable = 3
	icmpFragNeeded      = 4
	icmpv6PacketTooBig  = 2
	// icmpQuote is how much of the offending packet an ICMPv4 error
	// carries, as Linux sends it (576-byte message); ICMPv6 quotes as
	// much as fits in the minimum MTU, 1280 bytes.
	icmpQuote   = 576 - 20 - 8
	icmpv6Quote = 1280 - 40 - 8
)

// LargestSegment is the IP length of the frame's largest segment on the
// wire: the frame itself, or a super-packet's full-size segments.
func (i Info) LargestSegment() int {
	if i.NumSegs > 1 {
		return i.HeaderLen + i.SegSize
	}
	return i.IPLen
}

// TooBig reports whether a link of mtu bytes must refuse frame (whose
// Inspect result is i) rather than carry it: its largest segment exceeds
// the MTU and it may not be fragmented on the way (IPv4 with DF, or any
// IPv6 packet). A larger IPv4 packet without DF would be fragmented by
// a router; the emulator carries it whole.
func (i Info) TooBig(mtu int) bool {
	return mtu > 0 && i.LargestSegment() > mtu && (i.IPVersion == 6 || i.DF)
}

// AppendTooBig appends to dst the frame (a zero virtio_net_hdr and the
// packet) a router with a link of mtu bytes sends back to the source of
// frame: ICMP "fragmentation needed" with the next-hop MTU for IPv4,
// ICMPv6 "packet too big" for IPv6, quoting the start of the packet. It
// comes from the packet's destination address (the far end of the link),
// which the source's stack accepts as it accepts any router's. frame must
// have passed Inspect.
func (i Info) AppendTooBig(dst, frame []byte, mtu int) []byte {
	pkt := frame[VirtioNetHdrLen:]
	start := len(dst)
	dst = append(dst, make([]byte, VirtioNetHdrLen)...) // no offloads
	if i.IPVersion == 4 {
		quote := pkt[:min(len(pkt), icmpQuote)]
		n := 20 + 8 + len(quote)
		ip := make([]byte, 20+8, n)
		ip[0] = 0x45
		ip[1] = 0xc0 // precedence "internetwork control", as Linux's ICMP errors
		binary.BigEndian.PutUint16(ip[2:], uint16(n))
		ip[8] = 64
		ip[9] = 1 // ICMP
		copy(ip[12:16], pkt[16:20])
		copy(ip[16:20], pkt[12:16])
		binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:20]))
		icmp := ip[20:28]
		icmp[0], icmp[1] = icmpDestUnreachable, icmpFragNeeded
		binary.BigEndian.PutUint16(icmp[6:], uint16(mtu))
		ip = append(ip, quote...)
		binary.BigEndian.PutUint16(icmp[2:], ^csumFold(csumAdd(0, ip[20:])))
		return append(dst[:start+VirtioNetHdrLen], ip...)
	}
	quote := pkt[:min(len(pkt), icmpv6Quote)]
	plen := 8 + len(quote)
	ip := make([]byte, 40+8, 40+plen)
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(plen))
	ip[6] = ProtoICMPv6
	ip[7] = 64
	copy(ip[8:24], pkt[24:40])
	copy(ip[24:40], pkt[8:24])
	icmp := ip[40:48]
	icmp[0] = icmpv6PacketTooBig
	binary.BigEndian.PutUint32(icmp[4:], uint32(mtu))
	ip = append(ip, quote...)
	acc := csumAdd(0, ip[8:40]) + uint64(plen) + uint64(ProtoICMPv6)
	acc = csumAdd(acc, ip[40:])
	binary.BigEndian.PutUint16(icmp[2:], ^csumFold(acc))
	return append(dst[:start+VirtioNetHdrLen], ip...)
}
