package tun

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// Errors returned by Inspect and the split functions wrap one of these.
var (
	// ErrMalformed marks a frame that is truncated or inconsistent, or that
	// the kernel itself would reject on write.
	ErrMalformed = errors.New("tun: malformed frame")
	// ErrUnsupported marks a well-formed frame this package does not
	// handle (UFO super-packets, splitting without NEEDS_CSUM).
	ErrUnsupported = errors.New("tun: unsupported frame")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}

// IP protocol numbers used here.
const (
	ProtoTCP    uint8 = 6
	ProtoUDP    uint8 = 17
	ProtoICMPv6 uint8 = 58
)

// TCP flags (byte 13 of the TCP header).
const (
	TCPFlagFIN uint8 = 0x01
	TCPFlagSYN uint8 = 0x02
	TCPFlagRST uint8 = 0x04
	TCPFlagPSH uint8 = 0x08
	TCPFlagACK uint8 = 0x10
	TCPFlagURG uint8 = 0x20
	TCPFlagECE uint8 = 0x40
	TCPFlagCWR uint8 = 0x80
)

// udpMaxSegments is UDP_MAX_SEGMENTS: virtio_net_hdr_to_skb rejects
// UDP_L4 super-packets of more segments.
const udpMaxSegments = 128

// Info is what Inspect learns about a frame: the facts that decide its cost
// on an emulated wire and that AppendRun needs to cut it.
type Info struct {
	Hdr VirtioNetHdr

	IPVersion int   // 4 or 6
	Proto     uint8 // transport protocol (after any IPv6 extension headers)
	// Fragment is set for IPv4 fragments and IPv6 packets with a fragment
	// header: their transport header is not parsed (L4HeaderLen 0).
	Fragment bool
	// DF is IPv4's don't-fragment bit (an IPv6 packet is never fragmented
	// on the way).
	DF bool

	IPHeaderLen int // IPv4 IHL*4, or 40 plus IPv6 extension headers
	L4HeaderLen int // TCP data offset*4, 8 for UDP, 0 for anything else
	// HeaderLen is IPHeaderLen + L4HeaderLen: the header bytes every segment
	// carries on the wire.
	HeaderLen int
	IPLen     int // IP length of the whole frame (the super-packet)
	Payload   int // IPLen - HeaderLen

	// The frame stands for NumSegs (>= 1) segments on the wire: all but the
	// last carry SegSize payload bytes, the last LastSize. A plain frame is
	// one segment of Payload bytes.
	NumSegs  int
	SegSize  int
	LastSize int

	Src, Dst         netip.Addr
	SrcPort, DstPort uint16 // TCP and UDP only
	Seq              uint32 // TCP only
	TCPFlags         uint8  // TCP only
}

// SegPayload returns the payload length of segment k (0 <= k < NumSegs).
func (i Info) SegPayload(k int) int {
	if k == i.NumSegs-1 {
		return i.LastSize
	}
	return i.SegSize
}

// FillPacket sets p.HeaderLen and p.SegPayload (one entry per segment),
// reusing p.SegPayload's capacity: with a capacity of 64 or more it never
// allocates for frames of up to 64 segments.
func (i Info) FillPacket(p *linkemu.Packet) {
	p.HeaderLen = i.HeaderLen
	n := max(i.NumSegs, 1)
	s := p.SegPayload[:0]
	if cap(s) < n {
		s = make([]int, 0, max(n, 64))
	}
	s = s[:n]
	for k := range n - 1 {
		s[k] = i.SegSize
	}
	s[n-1] = i.LastSize
	p.SegPayload = s
}

// Inspect parses frame (a virtio_net_hdr followed by an IPv4 or IPv6
// packet, as Device.Read returns it) without modifying or retaining it. It
// checks what the kernel checks on write (virtio_net_hdr_to_skb,
// tcp_gso_segment) plus the consistency of the IP lengths, and returns an
// error wrapping ErrMalformed or ErrUnsupported otherwise. It never panics
// and does not allocate on success.
func Inspect(frame []byte) (Info, error) {
	var i Info
	if err := i.Hdr.Decode(frame); err != nil {
		return Info{}, malformed("frame of %d bytes is shorter than the %d-byte virtio_net_hdr", len(frame), VirtioNetHdrLen)
	}
	pkt := frame[VirtioNetHdrLen:]
	if len(pkt) == 0 {
		return Info{}, malformed("no IP packet after the virtio_net_hdr")
	}
	i.IPLen = len(pkt)
	var err error
	switch v := pkt[0] >> 4; v {
	case 4:
		err = i.parseIPv4(pkt)
	case 6:
		err = i.parseIPv6(pkt)
	default:
		err = malformed("IP version %d (want 4 or 6)", v)
	}
	if err != nil {
		return Info{}, err
	}
	if !i.Fragment {
		if err := i.parseL4(pkt[i.IPHeaderLen:]); err != nil {
			return Info{}, err
		}
	}
	i.HeaderLen = i.IPHeaderLen + i.L4HeaderLen
	i.Payload = i.IPLen - i.HeaderLen
	if err := i.checkVnet(); err != nil {
		return Info{}, err
	}
	i.NumSegs, i.SegSize, i.LastSize = 1, i.Payload, i.Payload
	if gso := int(i.Hdr.GSOSize); i.Hdr.GSOType != GSONone && i.Payload > gso {
		// virtio_net_hdr_to_skb: "Too small packets are not really GSO
		// ones"; otherwise DIV_ROUND_UP(payload, gso_size) segments.
		i.NumSegs = (i.Payload + gso - 1) / gso
		i.SegSize = gso
		i.LastSize = i.Payload - (i.NumSegs-1)*gso
		if i.Hdr.GSOType == GSOUDPL4 && i.NumSegs > udpMaxSegments {
			return Info{}, malformed("udp_l4 super-packet of %d segments exceeds the kernel's limit of %d", i.NumSegs, udpMaxSegments)
		}
	}
	return i, nil
}

func (i *Info) parseIPv4(pkt []byte) error {
	if len(pkt) < 20 {
		return malformed("truncated IPv4 header: %d of 20 bytes", len(pkt))
	}
	ihl := int(pkt[0] & 0x0f)
	if ihl < 5 {
		return malformed("IPv4 IHL %d < 5", ihl)
	}
	if ihl*4 > len(pkt) {
		return malformed("truncated IPv4 header: IHL says %d bytes, packet has %d", ihl*4, len(pkt))
	}
	if tot := int(binary.BigEndian.Uint16(pkt[2:])); tot != len(pkt) {
		return malformed("IPv4 total length %d does not match the %d bytes read", tot, len(pkt))
	}
	i.IPVersion = 4
	i.IPHeaderLen = ihl * 4
	i.Proto = pkt[9]
	i.Fragment = binary.BigEndian.Uint16(pkt[6:])&0x3fff != 0 // MF or offset
	i.DF = pkt[6]&0x40 != 0
	i.Src = netip.AddrFrom4([4]byte(pkt[12:16]))
	i.Dst = netip.AddrFrom4([4]byte(pkt[16:20]))
	return nil
}

// IPv6 extension headers walked by parseIPv6 (RFC 8200 section 4).
const (
	ipv6HopByHop = 0
	ipv6Routing  = 43
	ipv6Fragment = 44
	ipv6DestOpts = 60
)

func (i *Info) parseIPv6(pkt []byte) error {
	if len(pkt) < 40 {
		return malformed("truncated IPv6 header: %d of 40 bytes", len(pkt))
	}
	if pl := int(binary.BigEndian.Uint16(pkt[4:])); pl+40 != len(pkt) {
		return malformed("IPv6 payload length %d does not match the %d bytes read (40 + %d)", pl, len(pkt), len(pkt)-40)
	}
	i.IPVersion = 6
	i.Src = netip.AddrFrom16([16]byte(pkt[8:24]))
	i.Dst = netip.AddrFrom16([16]byte(pkt[24:40]))
	nh, off := pkt[6], 40
	for {
		switch nh {
		case ipv6HopByHop, ipv6Routing, ipv6DestOpts:
			if off+2 > len(pkt) {
				return malformed("truncated IPv6 extension header %d at offset %d", nh, off)
			}
			l := (int(pkt[off+1]) + 1) * 8
			if off+l > len(pkt) {
				return malformed("IPv6 extension header %d at offset %d runs %d bytes past the packet", nh, off, off+l-len(pkt))
			}
			nh, off = pkt[off], off+l
			continue
		case ipv6Fragment:
			if off+8 > len(pkt) {
				return malformed("truncated IPv6 fragment header at offset %d", off)
			}
			nh, off = pkt[off], off+8
			i.Fragment = true
		}
		break
	}
	i.Proto = nh
	i.IPHeaderLen = off
	return nil
}

func (i *Info) parseL4(l4 []byte) error {
	switch i.Proto {
	case ProtoTCP:
		if len(l4) < 20 {
			return malformed("truncated TCP header: %d of 20 bytes", len(l4))
		}
		doff := int(l4[12] >> 4)
		if doff < 5 {
			return malformed("TCP data offset %d < 5", doff)
		}
		if doff*4 > len(l4) {
			return malformed("truncated TCP header: data offset says %d bytes, %d left", doff*4, len(l4))
		}
		i.L4HeaderLen = doff * 4
		i.SrcPort = binary.BigEndian.Uint16(l4)
		i.DstPort = binary.BigEndian.Uint16(l4[2:])
		i.Seq = binary.BigEndian.Uint32(l4[4:])
		i.TCPFlags = l4[13]
	case ProtoUDP:
		if len(l4) < 8 {
			return malformed("truncated UDP header: %d of 8 bytes", len(l4))
		}
		i.L4HeaderLen = 8
		i.SrcPort = binary.BigEndian.Uint16(l4)
		i.DstPort = binary.BigEndian.Uint16(l4[2:])
	}
	return nil
}

// checkVnet validates the virtio_net_hdr against the parsed packet, with
// the rules of virtio_net_hdr_to_skb and tcp_gso_segment.
func (i *Info) checkVnet() error {
	h := i.Hdr
	base := h.GSOType &^ GSOECN
	switch base {
	case GSONone, GSOTCPv4, GSOTCPv6, GSOUDPL4:
	case GSOUDP:
		return unsupported("gso type %s (UFO fragments IP; the kernel no longer emits it)", GSOTypeString(h.GSOType))
	default:
		return malformed("unknown gso type %#x", h.GSOType)
	}
	if h.GSOType&GSOECN != 0 && base != GSOTCPv4 && base != GSOTCPv6 {
		return malformed("gso type %s: the ECN bit only applies to TCP", GSOTypeString(h.GSOType))
	}
	if h.Flags&FlagNeedsCsum != 0 {
		start, off := int(h.CsumStart), int(h.CsumOffset)
		minStart := 20
		if i.IPVersion == 6 {
			minStart = 40
		}
		if start < minStart {
			return malformed("csum_start %d points into the IPv%d header", start, i.IPVersion)
		}
		if start+off+2 > i.IPLen {
			return malformed("checksum at csum_start %d + csum_offset %d lies beyond the %d-byte packet", start, off, i.IPLen)
		}
	}
	if base == GSONone {
		return nil
	}
	name := GSOTypeString(h.GSOType)
	if h.GSOSize == 0 {
		return malformed("gso type %s with gso_size 0", name)
	}
	if i.Fragment {
		return malformed("gso type %s on an IP fragment", name)
	}
	wantCsumOff := uint16(16)
	switch {
	case base == GSOTCPv4 && (i.IPVersion != 4 || i.Proto != ProtoTCP):
		return malformed("gso type %s on an IPv%d protocol %d packet", name, i.IPVersion, i.Proto)
	case base == GSOTCPv6 && (i.IPVersion != 6 || i.Proto != ProtoTCP):
		return malformed("gso type %s on an IPv%d protocol %d packet", name, i.IPVersion, i.Proto)
	case base == GSOUDPL4:
		if i.Proto != ProtoUDP {
			return malformed("gso type %s on an IPv%d protocol %d packet", name, i.IPVersion, i.Proto)
		}
		if h.Flags&FlagNeedsCsum == 0 {
			return malformed("gso type %s without NEEDS_CSUM", name)
		}
		wantCsumOff = 6
	}
	if h.Flags&FlagNeedsCsum != 0 {
		if int(h.CsumStart) != i.IPHeaderLen {
			return malformed("gso type %s: csum_start %d is not the transport header offset %d", name, h.CsumStart, i.IPHeaderLen)
		}
		if h.CsumOffset != wantCsumOff {
			return malformed("gso type %s: csum_offset %d, want %d", name, h.CsumOffset, wantCsumOff)
		}
	}
	return nil
}
