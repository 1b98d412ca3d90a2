// Package capturetest builds packet captures for tests: frames from a
// few fields (no hex blobs), written as pcap or pcapng in either byte
// order, and [Conv], a TCP conversation written packet by packet with
// the sequence arithmetic done for the test.
package capturetest

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
)

// Format selects the file format a Writer produces.
type Format struct {
	NG    bool // pcapng instead of pcap
	Big   bool // big-endian
	Nanos bool // pcap: nanosecond magic; pcapng: if_tsresol 9
	// Interfaces lists the link types of pcapng interfaces (default: the
	// writer's link type only).
	Interfaces []capture.LinkType
}

type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// Writer accumulates a capture file in memory.
type Writer struct {
	f   Format
	buf bytes.Buffer
	o   byteOrder
}

// NewWriter starts a capture with link type lt.
func NewWriter(f Format, lt capture.LinkType) *Writer {
	w := &Writer{f: f, o: binary.LittleEndian}
	if f.Big {
		w.o = binary.BigEndian
	}
	if !f.NG {
		magic := uint32(0xa1b2c3d4)
		if f.Nanos {
			magic = 0xa1b23c4d
		}
		h := make([]byte, 24)
		w.o.PutUint32(h, magic)
		w.o.PutUint16(h[4:], 2)
		w.o.PutUint16(h[6:], 4)
		w.o.PutUint32(h[16:], 262144)
		w.o.PutUint32(h[20:], uint32(lt))
		w.buf.Write(h)
		return w
	}
	w.block(0x0a0d0d0a, func(b *bytes.Buffer) {
		w.put32(b, 0x1a2b3c4d)
		w.put16(b, 1)
		w.put16(b, 0)
		w.put32(b, 0xffffffff) // section length unknown
		w.put32(b, 0xffffffff)
	})
	ifs := f.Interfaces
	if len(ifs) == 0 {
		ifs = []capture.LinkType{lt}
	}
	for _, l := range ifs {
		w.IDB(l)
	}
	return w
}

func (w *Writer) put16(b *bytes.Buffer, v uint16) { b.Write(w.o.AppendUint16(nil, v)) }
func (w *Writer) put32(b *bytes.Buffer, v uint32) { b.Write(w.o.AppendUint32(nil, v)) }

func (w *Writer) block(typ uint32, body func(*bytes.Buffer)) {
	var b bytes.Buffer
	body(&b)
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
	n := uint32(b.Len() + 12)
	w.put32(&w.buf, typ)
	w.put32(&w.buf, n)
	w.buf.Write(b.Bytes())
	w.put32(&w.buf, n)

}

// IDB appends a pcapng interface description (with if_tsresol 9 when
// the format asks for nanoseconds).
func (w *Writer) IDB(lt capture.LinkType) {
	w.block(1, func(b *bytes.Buffer) {
		w.put16(b, uint16(lt))
		w.put16(b, 0)
		w.put32(b, 262144)
		if w.f.Nanos {
			w.put16(b, 9)
			w.put16(b, 1)
			b.Write([]byte{9, 0, 0, 0})
		}
		w.put16(b, 0)
		w.put16(b, 0)
	})
}

// Packet appends a record captured at t on interface 0.
func (w *Writer) Packet(t time.Time, frame []byte) { w.PacketOn(0, t, frame, len(frame)) }

// PacketOn appends a record on pcapng interface ifc whose original
// length was orig (>= len(frame): a snaplen cut).
func (w *Writer) PacketOn(ifc int, t time.Time, frame []byte, orig int) {
	ns := t.UnixNano()
	if !w.f.NG {
		h := make([]byte, 16)
		w.o.PutUint32(h, uint32(ns/1e9))
		frac := ns % 1e9
		if !w.f.Nanos {
			frac /= 1000
		}
		w.o.PutUint32(h[4:], uint32(frac))
		w.o.PutUint32(h[8:], uint32(len(frame)))
		w.o.PutUint32(h[12:], uint32(orig))
		w.buf.Write(h)
		w.buf.Write(frame)
		return
	}
	ts := uint64(ns / 1000)
	if w.f.Nanos {
		ts = uint64(ns)
	}
	w.block(6, func(b *bytes.Buffer) {
		w.put32(b, uint32(ifc))
		w.put32(b, uint32(ts>>32))
		w.put32(b, uint32(ts))
		w.put32(b, uint32(len(frame)))
		w.put32(b, uint32(orig))
		b.Write(frame)
	})
}

// Bytes returns the file so far.
func (w *Writer) Bytes() []byte { return w.buf.Bytes() }

// Gzip returns the file gzip-compressed.
func (w *Writer) Gzip() []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(w.buf.Bytes())
	zw.Close()
	return b.Bytes()
}

// TCP describes one segment.
type TCP struct {
	Src, Dst netip.AddrPort
	Seq, Ack uint32
	Flags    uint8
	Window   uint16
	Options  []byte
	Payload  int    // payload length; the bytes are zeros
	IPID     uint16 // IPv4 identification
	TTL      uint8  // default 64
	// IPv6 extension headers to put before TCP: protocol numbers
	// (0 hop-by-hop, 43 routing, 44 fragment, 60 destination options).
	Ext6 []uint8
	// Super: write an IP length of 0 (IPv4) or a jumbo payload (IPv6) as
	// TSO/BIG TCP captures on the host do.
	Super bool
}

// IP returns the IPv4 or IPv6 packet (checksums are left zero: the
// decoder does not check them, like tcpdump on offloading hosts).
func (s TCP) IP() []byte {
	tcp := make([]byte, 20, 20+len(s.Options)+3+s.Payload)
	binary.BigEndian.PutUint16(tcp, s.Src.Port())
	binary.BigEndian.PutUint16(tcp[2:], s.Dst.Port())
	binary.BigEndian.PutUint32(tcp[4:], s.Seq)
	binary.BigEndian.PutUint32(tcp[8:], s.Ack)
	tcp = append(tcp, s.Options...)
	for len(tcp)%4 != 0 {
		tcp = append(tcp, 0)
	}
	tcp[12] = byte(len(tcp)/4) << 4
	tcp[13] = s.Flags
	binary.BigEndian.PutUint16(tcp[14:], s.Window)
	tcp = append(tcp, make([]byte, s.Payload)...)
	ttl := s.TTL
	if ttl == 0 {
		ttl = 64
	}
	if s.Src.Addr().Is4() {
		ip := make([]byte, 20, 20+len(tcp))
		ip[0] = 0x45
		total := 20 + len(tcp)
		if s.Super || total > 0xffff {
			total = 0
		}
		binary.BigEndian.PutUint16(ip[2:], uint16(total))
		binary.BigEndian.PutUint16(ip[4:], s.IPID)
		ip[6] = 0x40 // DF
		ip[8], ip[9] = ttl, 6
		a, b := s.Src.Addr().As4(), s.Dst.Addr().As4()
		copy(ip[12:], a[:])
		copy(ip[16:], b[:])
		return append(ip, tcp...)
	}
	var ext []byte
	exts := s.Ext6
	super := s.Super || len(tcp) > 0xffff
	if super {
		exts = append([]uint8{0}, exts...)
	}
	for i, e := range exts {
		next := uint8(6)
		if i+1 < len(exts) {
			next = exts[i+1]
		}
		h := make([]byte, 8)
		h[0] = next
		if e == 0 && i == 0 && super {
			// hop-by-hop with a jumbo payload option (RFC 2675)
			h[2], h[3] = 0xc2, 4
			binary.BigEndian.PutUint32(h[4:], uint32(len(tcp)+8*len(exts)))
		} else if e != 44 {
			h[2], h[3] = 1, 4 // PadN
		}
		ext = append(ext, h...)
	}
	ip := make([]byte, 40, 40+len(ext)+len(tcp))
	ip[0] = 0x60
	plen := len(ext) + len(tcp)
	if super {
		plen = 0
	}
	binary.BigEndian.PutUint16(ip[4:], uint16(plen))
	ip[6] = 6
	if len(exts) > 0 {
		ip[6] = exts[0]
	}
	ip[7] = ttl
	a, b := s.Src.Addr().As16(), s.Dst.Addr().As16()
	copy(ip[8:], a[:])
	copy(ip[24:], b[:])
	ip = append(ip, ext...)
	return append(ip, tcp...)
}

func etherType(ip []byte) uint16 {
	if len(ip) > 0 && ip[0]>>4 == 6 {
		return 0x86dd
	}
	return 0x0800
}

// Ether wraps ip in Ethernet II with the given VLAN tags, outermost first
// (802.1ad for the outer one of two).
func Ether(ip []byte, vlans ...uint16) []byte {
	f := make([]byte, 12, 14+4*len(vlans)+len(ip))
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1})
	for i, v := range vlans {
		tpid := uint16(0x8100)
		if i == 0 && len(vlans) > 1 {
			tpid = 0x88a8
		}
		f = binary.BigEndian.AppendUint16(f, tpid)
		f = binary.BigEndian.AppendUint16(f, v)
	}
	f = binary.BigEndian.AppendUint16(f, etherType(ip))
	return append(f, ip...)
}

// PPPoEther wraps ip in Ethernet + a PPPoE session header.
func PPPoEther(ip []byte) []byte {
	f := make([]byte, 12, 22+len(ip))
	f = binary.BigEndian.AppendUint16(f, 0x8864)
	return append(f, PPPoE(ip)...)
}

// PPPoE is a PPPoE session header and PPP protocol field, then ip.
func PPPoE(ip []byte) []byte {
	proto := uint16(0x0021)
	if etherType(ip) == 0x86dd {
		proto = 0x0057
	}
	h := []byte{0x11, 0, 0, 1}
	h = binary.BigEndian.AppendUint16(h, uint16(len(ip)+2))
	h = binary.BigEndian.AppendUint16(h, proto)
	return append(h, ip...)
}

// PPP is HDLC-framed PPP: 0xff 0x03, the protocol, then ip.
func PPP(ip []byte) []byte {
	proto := uint16(0x0021)
	if etherType(ip) == 0x86dd {
		proto = 0x0057
	}
	h := binary.BigEndian.AppendUint16([]byte{0xff, 0x03}, proto)
	return append(h, ip...)
}

// SLL is a Linux cooked v1 header, then ip.
func SLL(ip []byte) []byte {
	h := make([]byte, 14, 16+len(ip))
	h = binary.BigEndian.AppendUint16(h, etherType(ip))
	return append(h, ip...)
}

// SLL2 is a Linux cooked v2 header, then ip.
func SLL2(ip []byte) []byte {
	h := binary.BigEndian.AppendUint16(nil, etherType(ip))
	h = append(h, make([]byte, 18)...)
	return append(h, ip...)
}

// Null is a BSD loopback header (AF_ in little-endian host order, or
// network order when loop is true, as LINKTYPE_LOOP), then ip.
func Null(ip []byte, loop bool) []byte {
	af := uint32(2)
	if etherType(ip) == 0x86dd {
		af = 30
	}
	var h []byte
	if loop {
		h = binary.BigEndian.AppendUint32(nil, af)
	} else {
		h = binary.LittleEndian.AppendUint32(nil, af)
	}
	return append(h, ip...)
}

// Opts builds TCP options.
type Opts []byte

// MSS appends a maximum segment size option.
func (o Opts) MSS(v uint16) Opts { return append(o, 2, 4, byte(v>>8), byte(v)) }

// WScale appends a window scale option (with a NOP before it, as stacks do).
func (o Opts) WScale(s uint8) Opts { return append(o, 1, 3, 3, s) }

// SACKOK appends SACK-permitted.
func (o Opts) SACKOK() Opts { return append(o, 4, 2) }

// TS appends timestamps (after two NOPs).
func (o Opts) TS(val, ecr uint32) Opts {
	o = append(o, 1, 1, 8, 10)
	o = binary.BigEndian.AppendUint32(o, val)
	return binary.BigEndian.AppendUint32(o, ecr)
}

// SACK appends SACK blocks given as left, right pairs.
func (o Opts) SACK(edges ...uint32) Opts {
	o = append(o, 1, 1, 5, byte(2+4*len(edges)))
	for _, e := range edges {
		o = binary.BigEndian.AppendUint32(o, e)
	}
	return o
}

// Wifi is an IEEE 802.11 QoS data frame (from the distribution system)
// carrying ip in LLC/SNAP.
func Wifi(ip []byte) []byte {
	h := make([]byte, 26, 34+len(ip))
	h[0], h[1] = 0x88, 0x02 // QoS data, from DS
	h = append(h, 0xaa, 0xaa, 3, 0, 0, 0)
	h = binary.BigEndian.AppendUint16(h, etherType(ip))
	return append(h, ip...)
}

// Radiotap is a minimal radiotap header (flags field only), then an
// IEEE 802.11 frame carrying ip.
func Radiotap(ip []byte) []byte {
	h := []byte{0, 0, 9, 0, 2, 0, 0, 0, 0}
	return append(h, Wifi(ip)...)
}

// NOP appends a no-operation option (to write a stack's exact order).
func (o Opts) NOP() Opts { return append(o, 1) }
