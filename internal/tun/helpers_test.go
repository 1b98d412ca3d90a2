package tun

// Test-only packet builder and software segmenter. They deliberately share
// no code with the package (own checksum arithmetic, own header parsing), so
// that comparing their output with the package's is a real cross-check.

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
)

var (
	v4Src = netip.MustParseAddr("198.18.0.1")
	v4Dst = netip.MustParseAddr("198.18.0.2")
	// 2001:2::/48 is the IPv6 benchmarking range (RFC 5180), the
	// counterpart of 198.18.0.0/15.
	v6Src = netip.MustParseAddr("2001:2::1")
	v6Dst = netip.MustParseAddr("2001:2::2")
)

// spec describes a frame for build.
type spec struct {
	v6       bool
	proto    uint8 // 0 means TCP
	id       uint16
	df       bool
	ipOpts   []byte // IPv4 options, a multiple of 4 bytes
	destOpts bool   // IPv6: add an 8-byte destination options header
	sport    uint16
	dport    uint16
	seq, ack uint32
	flags    uint8
	tcpOpts  []byte // a multiple of 4 bytes
	payload  []byte
	gso      uint16 // gso_size; 0 builds a plain frame
	fullCsum bool   // complete the L4 checksum and leave NEEDS_CSUM clear
}

// payloadBytes returns n bytes of a recognizable pattern.
func payloadBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

// sum16 is an independent RFC 1071 sum (no folding yet).
func sum16(acc uint32, b []byte) uint32 {
	for i := 0; i+1 < len(b); i += 2 {
		acc += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		acc += uint32(b[len(b)-1]) << 8
	}
	return acc
}

func fold16(acc uint32) uint16 {
	for acc>>16 != 0 {
		acc = acc>>16 + acc&0xffff
	}
	return uint16(acc)
}

// pseudo returns the folded, uncomplemented pseudo-header sum.
func pseudo(src, dst netip.Addr, proto uint8, l4len int) uint16 {
	acc := sum16(0, src.AsSlice())
	acc = sum16(acc, dst.AsSlice())
	acc += uint32(proto) + uint32(l4len)
	return fold16(acc)
}

// build returns a frame (virtio_net_hdr + packet) as the kernel would hand
// it to a TUN reader with offloads: NEEDS_CSUM and a pseudo-header partial
// checksum (unless fullCsum), and for gso > 0 a TSO/USO super-packet.
func build(t testing.TB, s spec) []byte {
	t.Helper()
	proto := s.proto
	if proto == 0 {
		proto = ProtoTCP
	}
	src, dst := v4Src, v4Dst
	if s.v6 {
		src, dst = v6Src, v6Dst
	}
	var l4 []byte
	switch proto {
	case ProtoTCP:
		if len(s.tcpOpts)%4 != 0 {
			t.Fatalf("build: TCP options of %d bytes", len(s.tcpOpts))
		}
		l4 = make([]byte, 20+len(s.tcpOpts))
		binary.BigEndian.PutUint16(l4[0:], s.sport)
		binary.BigEndian.PutUint16(l4[2:], s.dport)
		binary.BigEndian.PutUint32(l4[4:], s.seq)
		binary.BigEndian.PutUint32(l4[8:], s.ack)
		l4[12] = byte(len(l4)/4) << 4
		l4[13] = s.flags
		binary.BigEndian.PutUint16(l4[14:], 65535)
		copy(l4[20:], s.tcpOpts)
	case ProtoUDP:
		l4 = make([]byte, 8)
		binary.BigEndian.PutUint16(l4[0:], s.sport)
		binary.BigEndian.PutUint16(l4[2:], s.dport)
		binary.BigEndian.PutUint16(l4[4:], uint16(8+len(s.payload)))
	default:
		l4 = nil // opaque payload (ICMP and others)
	}
	l4len := len(l4) + len(s.payload)

	var ip []byte
	if !s.v6 {
		if len(s.ipOpts)%4 != 0 {
			t.Fatalf("build: IPv4 options of %d bytes", len(s.ipOpts))
		}
		ip = make([]byte, 20+len(s.ipOpts))
		ip[0] = 0x40 | byte(len(ip)/4)
		binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)+l4len))
		binary.BigEndian.PutUint16(ip[4:], s.id)
		if s.df {
			ip[6] = 0x40
		}
		ip[8] = 64
		ip[9] = proto
		copy(ip[12:], src.AsSlice())
		copy(ip[16:], dst.AsSlice())
		copy(ip[20:], s.ipOpts)
		binary.BigEndian.PutUint16(ip[10:], ^fold16(sum16(0, ip)))
	} else {
		ext := 0
		if s.destOpts {
			ext = 8
		}
		ip = make([]byte, 40+ext)
		ip[0] = 0x60
		binary.BigEndian.PutUint16(ip[4:], uint16(ext+l4len))
		ip[6] = proto
		if s.destOpts {
			ip[6] = ipv6DestOpts
			ip[40] = proto
			ip[41] = 0            // (0+1)*8 bytes
			ip[42], ip[43] = 1, 4 // PadN option of 4 bytes
		}
		ip[7] = 64
		copy(ip[8:], src.AsSlice())
		copy(ip[24:], dst.AsSlice())
	}

	h := VirtioNetHdr{HdrLen: uint16(len(ip) + len(l4))}
	csumOff := map[uint8]uint16{ProtoTCP: 16, ProtoUDP: 6}[proto]
	if csumOff != 0 {
		partial := pseudo(src, dst, proto, l4len)
		binary.BigEndian.PutUint16(l4[csumOff:], partial)
		if s.fullCsum {
			acc := sum16(0, l4)
			acc = sum16(acc, s.payload)
			c := ^fold16(acc)
			if c == 0 && proto == ProtoUDP {
				c = 0xffff
			}
			binary.BigEndian.PutUint16(l4[csumOff:], c)
		} else {
			h.Flags = FlagNeedsCsum
			h.CsumStart = uint16(len(ip))
			h.CsumOffset = csumOff
		}
	}
	if s.gso > 0 {
		h.GSOSize = s.gso
		switch {
		case proto == ProtoUDP:
			h.GSOType = GSOUDPL4
		case s.v6:
			h.GSOType = GSOTCPv6
		default:
			h.GSOType = GSOTCPv4
		}
	}
	frame := make([]byte, VirtioNetHdrLen, VirtioNetHdrLen+len(ip)+l4len)
	if err := h.Encode(frame); err != nil {
		t.Fatal(err)
	}
	frame = append(frame, ip...)
	frame = append(frame, l4...)
	frame = append(frame, s.payload...)
	return frame
}

// refHeaders parses just enough of a frame built by build (or cut by
// Split) to segment it: the IP header length and the L4 header length.
func refHeaders(pkt []byte) (v6 bool, iphl, l4hl int, proto uint8, err error) {
	switch pkt[0] >> 4 {
	case 4:
		iphl = int(pkt[0]&0xf) * 4
		proto = pkt[9]
	case 6:
		v6 = true
		iphl, proto = 40, pkt[6]
		if proto == ipv6DestOpts {
			proto = pkt[40]
			iphl += (int(pkt[41]) + 1) * 8
		}
	default:
		return false, 0, 0, 0, fmt.Errorf("version %d", pkt[0]>>4)
	}
	switch proto {
	case ProtoTCP:
		l4hl = int(pkt[iphl+12]>>4) * 4
	case ProtoUDP:
		l4hl = 8
	default:
		return false, 0, 0, 0, fmt.Errorf("protocol %d", proto)
	}
	return v6, iphl, l4hl, proto, nil
}

// segment does in software what the kernel (skb_segment + tcp_gso_segment
// / __udp_gso_segment + inet_gso_segment / ipv6_gso_segment) and then a
// checksumming NIC do with a frame: it returns the IP packets that go on
// the wire, each with complete IPv4 header and L4 checksums. The L4
// checksum is completed from the partial checksum found in the frame
// (adjusted for each segment's length, as tcp_gso_segment does), so a wrong
// partial checksum yields a wrong final checksum.
func segment(t testing.TB, frame []byte) [][]byte {
	t.Helper()
	segs, err := segmentErr(frame)
	if err != nil {
		t.Fatalf("segment: %v", err)
	}
	return segs
}

// segmentErr is segment for use outside the test goroutine.
func segmentErr(frame []byte) ([][]byte, error) {
	var h VirtioNetHdr
	if err := h.Decode(frame); err != nil {
		return nil, err
	}
	pkt := frame[VirtioNetHdrLen:]
	v6, iphl, l4hl, proto, err := refHeaders(pkt)
	if err != nil {
		return nil, err
	}
	hl := iphl + l4hl
	payload := pkt[hl:]
	mss := len(payload)
	if h.GSOType != GSONone && int(h.GSOSize) < len(payload) {
		mss = int(h.GSOSize)
	}
	var segs [][]byte
	for k, off := 0, 0; off < len(payload) || k == 0; k, off = k+1, off+mss {
		n := min(mss, len(payload)-off)
		lastSeg := off+n == len(payload)
		seg := append(append([]byte(nil), pkt[:hl]...), payload[off:off+n]...)
		ip, l4 := seg[:iphl], seg[iphl:]
		if !v6 {
			binary.BigEndian.PutUint16(ip[2:], uint16(len(seg)))
			binary.BigEndian.PutUint16(ip[4:], binary.BigEndian.Uint16(pkt[4:])+uint16(k))
			ip[10], ip[11] = 0, 0
			binary.BigEndian.PutUint16(ip[10:], ^fold16(sum16(0, ip)))
		} else {
			binary.BigEndian.PutUint16(ip[4:], uint16(len(seg)-40))
		}
		oldL4 := len(pkt) - iphl
		newL4 := len(seg) - iphl
		csumOff := 16
		if proto == ProtoTCP {
			binary.BigEndian.PutUint32(l4[4:], binary.BigEndian.Uint32(l4[4:])+uint32(off))
			if !lastSeg {
				l4[13] &^= TCPFlagFIN | TCPFlagPSH
			}
			if k > 0 {
				l4[13] &^= TCPFlagCWR
			}
		} else {
			csumOff = 6
			oldL4 = int(binary.BigEndian.Uint16(l4[4:]))
			binary.BigEndian.PutUint16(l4[4:], uint16(newL4))
		}
		if h.Flags&FlagNeedsCsum != 0 {
			if int(h.CsumStart) != iphl || int(h.CsumOffset) != csumOff {
				return nil, fmt.Errorf("csum_start/offset %d/%d, want %d/%d", h.CsumStart, h.CsumOffset, iphl, csumOff)
			}
			partial := binary.BigEndian.Uint16(l4[csumOff:])
			partial = fold16(uint32(partial) + uint32(^uint16(oldL4)) + uint32(newL4))
			binary.BigEndian.PutUint16(l4[csumOff:], partial)
			c := ^fold16(sum16(0, l4))
			if c == 0 && proto == ProtoUDP {
				c = 0xffff // CSUM_MANGLED_0
			}
			binary.BigEndian.PutUint16(l4[csumOff:], c)
		}
		segs = append(segs, seg)
		if lastSeg {
			break
		}
	}
	return segs, nil
}

// verifyWire checks the checksums of wire packets from scratch.
func verifyWire(t testing.TB, segs [][]byte) {
	t.Helper()
	for k, seg := range segs {
		v6, iphl, _, proto, err := refHeaders(seg)
		if err != nil {
			t.Fatalf("segment %d: %v", k, err)
		}
		var src, dst netip.Addr
		if v6 {
			src, dst = netip.AddrFrom16([16]byte(seg[8:24])), netip.AddrFrom16([16]byte(seg[24:40]))
		} else {
			if c := fold16(sum16(0, seg[:iphl])); c != 0xffff {
				t.Errorf("segment %d: IPv4 header checksum does not verify (sum %#04x)", k, c)
			}
			src, dst = netip.AddrFrom4([4]byte(seg[12:16])), netip.AddrFrom4([4]byte(seg[16:20]))
		}
		l4 := seg[iphl:]
		acc := sum16(uint32(pseudo(src, dst, proto, len(l4))), l4)
		if c := fold16(acc); c != 0xffff {
			t.Errorf("segment %d: L4 checksum does not verify (sum %#04x)", k, c)
		}
	}
}

// finishChecksum turns a NEEDS_CSUM frame without GSO into one with a
// complete L4 checksum and no checksum flags, so that a receiving kernel
// verifies the checksum instead of trusting it. It is safe to call outside
// the test goroutine.
func finishChecksum(frame []byte) error {
	var h VirtioNetHdr
	if err := h.Decode(frame); err != nil {
		return err
	}
	if h.GSOType != GSONone || h.Flags&FlagNeedsCsum == 0 {
		return fmt.Errorf("finishChecksum: frame with gso %s flags %#x", GSOTypeString(h.GSOType), h.Flags)
	}
	segs, err := segmentErr(frame)
	if err != nil {
		return err
	}
	if len(segs) != 1 || len(segs[0]) != len(frame)-VirtioNetHdrLen {
		return fmt.Errorf("finishChecksum: %d segments", len(segs))
	}
	copy(frame[VirtioNetHdrLen:], segs[0])
	h.Flags &^= FlagNeedsCsum
	h.CsumStart, h.CsumOffset = 0, 0
	h.put(frame)
	return nil
}
