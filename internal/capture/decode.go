package capture

import (
	"encoding/binary"
	"net/netip"
)

// TCP header flags.
const (
	FlagFIN = 0x01
	FlagSYN = 0x02
	FlagRST = 0x04
	FlagPSH = 0x08
	FlagACK = 0x10
	FlagURG = 0x20
	FlagECE = 0x40
	FlagCWR = 0x80
)

// Segment is the decoded IP and TCP header of one packet. Options aliases
// the packet's bytes.
type Segment struct {
	IPVersion uint8
	Src, Dst  netip.Addr
	// Addrs4 is an IPv4 packet's Src and Dst as one number (Src in the
	// high half), which compares in one instruction; 0 for IPv6.
	Addrs4 uint64
	// IPID is the IPv4 identification field (0 for IPv6): two captures
	// of one transmission share it, a retransmission does not.
	IPID    uint16
	TTL     uint8
	SrcPort uint16
	DstPort uint16
	Seq     uint32
	Ack     uint32
	Flags   uint8
	Window  uint16
	// Options holds the TCP options as captured; OptionsCut is true when
	// the snaplen cut them short.
	Options    []byte
	OptionsCut bool
	// PayloadLen is the TCP payload length from the IP header (or the
	// original packet length for super-frames), not what was captured.
	PayloadLen int
	// SuperFrame marks a segment whose IP length field could not hold its
	// size (IPv4 total length 0 or an IPv6 jumbogram): TSO/GSO or BIG TCP
	// captured on the host.
	SuperFrame bool
}

// Result says what Decode found.
type Result uint8

// Decode results. Everything but OK is skipped by flow analysis and only
// counted.
const (
	OK          Result = iota
	NotIP              // ARP, LLDP, STP, an unknown link type, ...
	NotTCP             // UDP, ICMP, ...
	Fragment           // a non-first IP fragment
	Short              // cut by the snaplen before the end of the TCP header
	Malformed          // inconsistent lengths or versions
	UnknownLink        // a link type Decode does not know
	numResults
)

var resultNames = [...]string{"ok", "not IP", "not TCP", "IP fragment", "cut by snaplen", "malformed", "unknown link type"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "unknown"
}

// NumResults is the number of distinct Result values, for counters.
const NumResults = int(numResults)

// Ethertypes.
const (
	etherIPv4    = 0x0800
	etherIPv6    = 0x86dd
	etherVLAN    = 0x8100
	etherQinQ    = 0x88a8
	etherQinQOld = 0x9100
	etherPPPoE   = 0x8864
)

// Decode decodes one record of the given link type into s. origLen is the
// record's original length (for super-frames). It does not allocate.
func Decode(lt LinkType, data []byte, origLen int, s *Segment) Result {
	var ip []byte
	cut := origLen - len(data) // bytes the snaplen removed
	switch lt {
	case LinkEthernet:
		if len(data) < 14 {
			return Short
		}
		if data[12] == 0x08 && data[13] == 0 { // IPv4, untagged: the common case first
			return decodeIPv4(data[14:], cut, s)
		}
		return decodeEther(binary.BigEndian.Uint16(data[12:]), data[14:], cut, s)
	case LinkRaw, LinkRawDLT12, LinkRawDLT14, LinkIPv4, LinkIPv6:
		ip = data
	case LinkNull, LinkLoop:
		if len(data) < 4 {
			return Short
		}
		af := binary.LittleEndian.Uint32(data)
		if lt == LinkLoop || af > 0xffff {
			af = binary.BigEndian.Uint32(data)
		}
		switch af {
		case 2: // AF_INET everywhere
		case 10, 24, 28, 30: // AF_INET6: Linux, NetBSD/OpenBSD, FreeBSD, macOS
		default:
			return NotIP
		}
		ip = data[4:]
	case LinkLinuxSLL:
		if len(data) < 16 {
			return Short
		}
		return decodeEther(binary.BigEndian.Uint16(data[14:]), data[16:], cut, s)
	case LinkLinuxSLL2:
		if len(data) < 20 {
			return Short
		}
		return decodeEther(binary.BigEndian.Uint16(data), data[20:], cut, s)
	case LinkPPP, LinkPPPHDLC:
		return decodePPP(data, cut, s)
	case LinkPPPoE:
		return decodePPPoE(data, cut, s)
	case LinkRadiotap:
		if len(data) < 4 {
			return Short
		}
		n := int(binary.LittleEndian.Uint16(data[2:]))
		if n < 4 || len(data) < n {
			return Short
		}
		return decode80211(data[n:], cut, s)
	case Link80211:
		return decode80211(data, cut, s)
	default:
		return UnknownLink
	}
	return decodeIP(ip, cut, s)
}

// decode80211 reads an IEEE 802.11 data frame carrying LLC/SNAP (what
// monitor-mode and Wi-Fi captures hold); other frames are not IP, and
// protected (encrypted) frames cannot be read.
func decode80211(b []byte, cut int, s *Segment) Result {
	if len(b) < 24 {
		return Short
	}
	fc0, fc1 := b[0], b[1]
	if fc0>>2&3 != 2 || fc0>>4&4 != 0 || fc1&0x40 != 0 {
		return NotIP // not data, a null-function frame, or encrypted
	}
	n := 24
	if fc1&3 == 3 {
		n += 6 // four addresses (WDS)
	}
	if fc0>>4&8 != 0 {
		n += 2 // QoS control
		if fc1&0x80 != 0 {
			n += 4 // HT control
		}
	}
	if len(b) < n+8 {
		return Short
	}
	llc := b[n:]
	if llc[0] != 0xaa || llc[1] != 0xaa || llc[2] != 3 {
		return NotIP
	}
	return decodeEther(binary.BigEndian.Uint16(llc[6:]), llc[8:], cut, s)
}

func decodeEther(etype uint16, b []byte, cut int, s *Segment) Result {
	for range 8 { // tags nest; 8 is far beyond any real stack
		switch etype {
		case etherIPv4, etherIPv6:
			return decodeIP(b, cut, s)
		case etherVLAN, etherQinQ, etherQinQOld:
			if len(b) < 4 {
				return Short
			}
			etype, b = binary.BigEndian.Uint16(b[2:]), b[4:]
		case etherPPPoE:
			return decodePPPoE(b, cut, s)
		default:
			return NotIP
		}
	}
	return Malformed
}

// decodePPPoE reads a PPPoE session header (RFC 2516) and its PPP
// protocol field.
func decodePPPoE(b []byte, cut int, s *Segment) Result {
	if len(b) < 8 {
		return Short
	}
	if b[1] != 0 { // code 0 = session data
		return NotIP
	}
	return pppProto(binary.BigEndian.Uint16(b[6:]), b[8:], cut, s)
}

// decodePPP reads PPP with or without the HDLC address/control bytes.
func decodePPP(b []byte, cut int, s *Segment) Result {
	if len(b) >= 2 && b[0] == 0xff && b[1] == 0x03 {
		b = b[2:]
	}
	if len(b) < 1 {
		return Short
	}
	// Protocol field compression: an odd first byte is a 1-byte protocol.
	if b[0]&1 == 1 {
		return pppProto(uint16(b[0]), b[1:], cut, s)
	}
	if len(b) < 2 {
		return Short
	}
	return pppProto(binary.BigEndian.Uint16(b), b[2:], cut, s)
}

func pppProto(proto uint16, b []byte, cut int, s *Segment) Result {
	switch proto {
	case 0x0021, 0x0057: // IPv4, IPv6
		return decodeIP(b, cut, s)
	}
	return NotIP
}

// IP protocol numbers and IPv6 extension headers.
const (
	protoHopByHop = 0
	protoTCP      = 6
	protoRouting  = 43
	protoFragment = 44
	protoAH       = 51
	protoDstOpts  = 60
	protoMobility = 135
	protoHIP      = 139
	protoShim6    = 140
)

func decodeIP(b []byte, cut int, s *Segment) Result {
	if len(b) < 1 {
		return Short
	}
	switch b[0] >> 4 {
	case 4:
		return decodeIPv4(b, cut, s)
	case 6:
		return decodeIPv6(b, cut, s)
	}
	return Malformed
}

func decodeIPv4(b []byte, cut int, s *Segment) Result {
	if len(b) < 20 {
		return Short
	}
	// The fixed header as an array: its fields are read without a bounds
	// check each (this runs once a packet).
	h := (*[20]byte)(b)
	ihl := int(h[0]&0x0f) * 4
	if ihl < 20 {
		return Malformed
	}
	if len(b) < ihl {
		return Short
	}
	total := int(binary.BigEndian.Uint16(h[2:]))
	frag := binary.BigEndian.Uint16(h[6:])
	if frag&0x1fff != 0 {
		return Fragment
	}
	if h[9] != protoTCP {
		return NotTCP
	}
	s.ipv4Fields(h)
	ipLen := total
	if total == 0 {
		// TSO/BIG TCP: the stack leaves the length 0 when it does not fit
		// (net/ipv4 BIG TCP; captures on the sending host).
		ipLen = len(b) + cut
		s.SuperFrame = true
	} else if total < ihl {
		return Malformed
	}
	return decodeTCP(b[ihl:], ipLen-ihl, s)
}

func decodeIPv6(b []byte, cut int, s *Segment) Result {
	if len(b) < 40 {
		return Short
	}
	plen := int(binary.BigEndian.Uint16(b[4:]))
	next := b[6]
	s.IPVersion = 6
	s.IPID = 0
	s.TTL = b[7]
	s.Src = netip.AddrFrom16([16]byte(b[8:24]))
	s.Dst = netip.AddrFrom16([16]byte(b[24:40]))
	s.Addrs4 = 0
	s.SuperFrame = false
	jumbo := plen == 0
	rest := b[40:]
	used := 0 // extension header bytes consumed
	for range 16 {
		switch next {
		case protoTCP:
			if jumbo {
				// Jumbogram (RFC 2675) or a BIG TCP super-frame: the
				// length is the record's.
				plen = len(b) - 40 + cut
				s.SuperFrame = true
			}
			return decodeTCP(rest, plen-used, s)
		case protoHopByHop, protoRouting, protoDstOpts, protoMobility, protoHIP, protoShim6:
			if len(rest) < 8 {
				return Short
			}
			l := (int(rest[1]) + 1) * 8
			if len(rest) < l {
				return Short
			}
			next, rest, used = rest[0], rest[l:], used+l
		case protoFragment:
			if len(rest) < 8 {
				return Short
			}
			if binary.BigEndian.Uint16(rest[2:])&0xfff8 != 0 {
				return Fragment
			}
			s.IPID = uint16(binary.BigEndian.Uint32(rest[4:]))
			next, rest, used = rest[0], rest[8:], used+8
		case protoAH:
			if len(rest) < 8 {
				return Short
			}
			l := (int(rest[1]) + 2) * 4
			if len(rest) < l {
				return Short
			}
			next, rest, used = rest[0], rest[l:], used+l
		default:
			return NotTCP // ESP, UDP, ICMPv6, no next header, ...
		}
	}
	return Malformed
}

// ipv4Fields sets s from the fixed IPv4 header h (not a super-frame).
func (s *Segment) ipv4Fields(h *[20]byte) {
	s.IPVersion = 4
	s.IPID = binary.BigEndian.Uint16(h[4:])
	s.TTL = h[8]
	s.Src = netip.AddrFrom4([4]byte(h[12:16]))
	s.Dst = netip.AddrFrom4([4]byte(h[16:20]))
	s.Addrs4 = binary.BigEndian.Uint64(h[12:])
	s.SuperFrame = false
}

// tcpFields sets s from the fixed TCP header h.
func (s *Segment) tcpFields(h *[20]byte) {
	s.SrcPort = binary.BigEndian.Uint16(h[0:])
	s.DstPort = binary.BigEndian.Uint16(h[2:])
	s.Seq = binary.BigEndian.Uint32(h[4:])
	s.Ack = binary.BigEndian.Uint32(h[8:])
	s.Flags = h[13]
	s.Window = binary.BigEndian.Uint16(h[14:])
}

func decodeTCP(b []byte, segLen int, s *Segment) Result {
	if len(b) < 20 {
		return Short
	}
	h := (*[20]byte)(b) // as in decodeIPv4
	off := int(h[12]>>4) * 4
	if off < 20 || segLen < off {
		return Malformed
	}
	s.tcpFields(h)
	s.OptionsCut = len(b) < off
	s.Options = b[20:min(off, len(b))]
	s.PayloadLen = segLen - off
	return OK
}
