package tun

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// VirtioNetHdrLen is the size of the plain struct virtio_net_hdr (without
// num_buffers) that prefixes every frame; New sets it with TUNSETVNETHDRSZ.
const VirtioNetHdrLen = 10

// MaxFrameLen is the largest frame Read can return: the virtio header plus
// the largest IP packet a TUN device hands out (an IPv6 header plus a 65535
// byte payload; IPv4 is limited to 65535 in total). Read needs a buffer of at
// least this size, because the kernel silently truncates longer frames.
const MaxFrameLen = VirtioNetHdrLen + 40 + 65535

// VirtioNetHdr flags (include/uapi/linux/virtio_net.h).
const (
	// FlagNeedsCsum: the checksum at CsumStart+CsumOffset holds only the
	// pseudo-header sum; the receiver (or the segmenter) completes it over
	// the bytes from CsumStart to the end of each segment.
	FlagNeedsCsum uint8 = 1
	// FlagDataValid: the checksum has been verified.
	FlagDataValid uint8 = 2
)

// VirtioNetHdr GSO types (include/uapi/linux/virtio_net.h).
const (
	GSONone  uint8 = 0 // VIRTIO_NET_HDR_GSO_NONE: a plain packet
	GSOTCPv4 uint8 = 1 // VIRTIO_NET_HDR_GSO_TCPV4: TSO over IPv4
	GSOUDP   uint8 = 3 // VIRTIO_NET_HDR_GSO_UDP: UFO (IP fragmentation); not supported here
	GSOTCPv6 uint8 = 4 // VIRTIO_NET_HDR_GSO_TCPV6: TSO over IPv6
	GSOUDPL4 uint8 = 5 // VIRTIO_NET_HDR_GSO_UDP_L4: USO (UDP_SEGMENT), IPv4 or IPv6
	// GSOECN is OR-ed into a TCP GSO type when the super-packet carries CWR
	// (only with TUN_F_TSO_ECN, which New does not request).
	GSOECN uint8 = 0x80
)

// VirtioNetHdr is struct virtio_net_hdr, the per-frame metadata of a TUN
// device opened with IFF_VNET_HDR. The 16-bit fields are little-endian on
// the wire: New asks for that explicitly with TUNSETVNETLE, which is also the
// native (legacy) order on little-endian hosts such as x86.
type VirtioNetHdr struct {
	Flags   uint8  // FlagNeedsCsum, FlagDataValid
	GSOType uint8  // GSONone, GSOTCPv4, ... possibly | GSOECN
	HdrLen  uint16 // header length hint; the kernel reports skb_headlen, not always the headers
	GSOSize uint16 // payload bytes per segment (MSS), 0 for GSONone
	// CsumStart is the offset of the L4 header from the start of the IP
	// packet; CsumOffset the offset of the checksum field within it (16
	// for TCP, 6 for UDP). Valid with FlagNeedsCsum.
	CsumStart  uint16
	CsumOffset uint16
}

var errShortHdr = errors.New("tun: truncated virtio_net_hdr")

// Decode parses the first VirtioNetHdrLen bytes of b into h.
func (h *VirtioNetHdr) Decode(b []byte) error {
	if len(b) < VirtioNetHdrLen {
		return fmt.Errorf("%w: %d bytes, need %d", errShortHdr, len(b), VirtioNetHdrLen)
	}
	h.Flags = b[0]
	h.GSOType = b[1]
	h.HdrLen = binary.LittleEndian.Uint16(b[2:])
	h.GSOSize = binary.LittleEndian.Uint16(b[4:])
	h.CsumStart = binary.LittleEndian.Uint16(b[6:])
	h.CsumOffset = binary.LittleEndian.Uint16(b[8:])
	return nil
}

func (h VirtioNetHdr) put(b []byte) {
	_ = b[VirtioNetHdrLen-1]
	b[0] = h.Flags
	b[1] = h.GSOType
	binary.LittleEndian.PutUint16(b[2:], h.HdrLen)
	binary.LittleEndian.PutUint16(b[4:], h.GSOSize)
	binary.LittleEndian.PutUint16(b[6:], h.CsumStart)
	binary.LittleEndian.PutUint16(b[8:], h.CsumOffset)
}

// GSOTypeString names a GSO type for error messages and logs.
func GSOTypeString(t uint8) string {
	var s string
	switch t &^ GSOECN {
	case GSONone:
		s = "none"
	case GSOTCPv4:
		s = "tcpv4"
	case GSOUDP:
		s = "udp(ufo)"
	case GSOTCPv6:
		s = "tcpv6"
	case GSOUDPL4:
		s = "udp_l4"
	default:
		s = fmt.Sprintf("unknown(%#x)", t&^GSOECN)
	}
	if t&GSOECN != 0 {
		s += "|ecn"
	}
	return s
}
