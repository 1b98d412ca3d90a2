package capture

import (
	"io"
	"math/bits"
)

// pcapng block types (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcapng-03.html).
const (
	blockSHB = 0x0a0d0d0a
	blockIDB = 0x00000001
	blockOPB = 0x00000002 // obsolete Packet Block
	blockSPB = 0x00000003
	blockEPB = 0x00000006
	bom      = 0x1a2b3c4d
)

// iface is one Interface Description Block.
type iface struct {
	linkType LinkType
	// units per second of the timestamps (if_tsresol), and offset in
	// seconds added to them (if_tsoffset).
	perSec   uint64
	offsetNs int64
}

func (r *Reader) openPcapng() error {
	r.format = "pcapng"
	r.next = (*Reader).nextPcapng
	// The first block must be a section header; nextPcapng reads it.
	return nil
}

// nextPcapng reads blocks until a packet block.
func (r *Reader) nextPcapng(p *Packet) error {
	for {
		h, err := r.peek(12)
		if err != nil {
			if len(h) == 0 && err == io.ErrUnexpectedEOF {
				return io.EOF
			}
			return r.ioErr(err, "block header", 12, len(h))
		}
		typ := r.order.u32(h)
		if big.u32(h) == blockSHB {
			if err := r.sectionHeader(h); err != nil {
				return err
			}
			typ = blockSHB
		} else if r.packets == 0 && r.offset() == 0 {
			return r.corrupt("pcapng file does not start with a section header")
		}
		n := int(r.order.u32(h[4:]))
		if n < 12 || n%4 != 0 {
			return r.corrupt("block of type %#x has length %d: not a multiple of 4 of at least 12", typ, n)
		}
		if n > maxRecord+64 {
			if typ == blockEPB || typ == blockSPB || typ == blockOPB || typ == blockSHB || typ == blockIDB {
				return r.corrupt("block of type %#x claims %d bytes", typ, n)
			}
			// An unknown large block (e.g. a custom or journal block): skip it.
			if _, err := r.skip(n); err != nil {
				return err
			}
			continue
		}
		b, err := r.peek(n)
		if err != nil {
			return r.ioErr(err, "block", n, len(b))
		}
		if r.order.u32(b[n-4:]) != uint32(n) {
			return r.corrupt("block of type %#x: trailing length %d differs from %d", typ, r.order.u32(b[n-4:]), n)
		}
		body := b[8 : n-4]
		switch typ {
		case blockIDB:
			if err := r.readIDB(body); err != nil {
				return err
			}
		case blockEPB, blockOPB:
			return r.packetBlock(typ, body, n, p)
		case blockSPB:
			return r.simplePacketBlock(body, n, p)
		}
		r.discard(n)
	}
}

// sectionHeader starts a section: its byte-order magic sets the byte
// order, and interfaces are numbered anew.
func (r *Reader) sectionHeader(h []byte) error {
	switch {
	case big.u32(h[8:]) == bom:
		r.order = big
	case little.u32(h[8:]) == bom:
		r.order = little
	default:
		return r.corrupt("section header without byte-order magic")
	}
	r.ifaces = r.ifaces[:0]
	return nil
}

// packetBlock reads an enhanced (or obsolete) packet block of n bytes
// into p.
func (r *Reader) packetBlock(typ uint32, body []byte, n int, p *Packet) error {
	if len(body) < 20 {
		return r.corrupt("packet block too short (%d bytes)", len(body))
	}
	var id int
	var hi, lo uint32
	if typ == blockEPB {
		id, hi, lo = int(r.order.u32(body)), r.order.u32(body[4:]), r.order.u32(body[8:])
	} else {
		id, hi, lo = int(r.order.u16(body)), r.order.u32(body[4:]), r.order.u32(body[8:])
	}
	capLen, orig := int(r.order.u32(body[12:])), int(r.order.u32(body[16:]))
	if capLen < 0 || capLen > len(body)-20 {
		return r.corrupt("packet block claims %d captured bytes in a %d-byte block", capLen, n)
	}
	if id < 0 || id >= len(r.ifaces) {
		return r.corrupt("packet for interface %d, but only %d interface(s) described", id, len(r.ifaces))
	}
	ifc := &r.ifaces[id]
	p.Time = ifc.toNanos(uint64(hi)<<32 | uint64(lo))
	r.lastTS = p.Time
	p.CapLen, p.OrigLen = capLen, max(orig, capLen)
	p.LinkType, p.Interface = ifc.linkType, id
	p.Data = body[20 : 20+capLen]
	r.discard(n)
	return nil
}

// simplePacketBlock reads a simple packet block of n bytes into p.
func (r *Reader) simplePacketBlock(body []byte, n int, p *Packet) error {
	if len(body) < 4 {
		return r.corrupt("simple packet block too short")
	}
	if len(r.ifaces) == 0 {
		return r.corrupt("simple packet block before any interface description")
	}
	orig := int(r.order.u32(body))
	capLen := min(orig, len(body)-4)
	if capLen < 0 {
		return r.corrupt("simple packet block claims %d bytes", orig)
	}
	// SPBs carry no timestamp: reuse the last one seen.
	p.Time = r.lastTS
	p.CapLen, p.OrigLen = capLen, max(orig, capLen)
	p.LinkType, p.Interface = r.ifaces[0].linkType, 0
	p.Data = body[4 : 4+capLen]
	r.discard(n)
	return nil
}

// skip discards n bytes without holding them in memory.
func (r *Reader) skip(n int) (int, error) {
	d := min(n, r.end-r.pos)
	r.discard(d)
	for d < n {
		b, err := r.peek(min(n-d, len(r.buf)))
		r.discard(len(b))
		d += len(b)
		if err != nil {
			return d, r.ioErr(err, "block", n, d)
		}
	}
	return d, nil
}

func (r *Reader) readIDB(body []byte) error {
	if len(body) < 8 {
		return r.corrupt("interface description block too short")
	}
	if len(r.ifaces) >= 1<<16 {
		return r.corrupt("more than 65536 interfaces in one section")
	}
	ifc := iface{linkType: LinkType(r.order.u16(body)), perSec: 1_000_000}
	opts := body[8:]
	for len(opts) >= 4 {
		code, l := r.order.u16(opts), int(r.order.u16(opts[2:]))
		if code == 0 {
			break
		}
		pad := (l + 3) &^ 3
		if 4+l > len(opts) {
			return r.corrupt("interface option %d runs past its block", code)
		}
		v := opts[4 : 4+l]
		switch {
		case code == 9 && l >= 1: // if_tsresol
			res := v[0]
			e := uint64(res & 0x7f)
			if res&0x80 != 0 {
				if e > 63 {
					return r.corrupt("if_tsresol 2^-%d out of range", e)
				}
				ifc.perSec = 1 << e
			} else {
				if e > 19 {
					return r.corrupt("if_tsresol 10^-%d out of range", e)
				}
				ifc.perSec = 1
				for range e {
					ifc.perSec *= 10
				}
			}
		case code == 14 && l >= 8: // if_tsoffset, seconds
			ifc.offsetNs = int64(r.order.u64(v)) * 1e9
		}
		if 4+pad > len(opts) {
			break
		}
		opts = opts[4+pad:]
	}
	r.ifaces = append(r.ifaces, ifc)
	return nil
}

// toNanos converts a timestamp in the interface's units to nanoseconds.
func (ifc *iface) toNanos(ts uint64) int64 {
	if ifc.perSec == 1e9 {
		return int64(ts) + ifc.offsetNs
	}
	sec, frac := ts/ifc.perSec, ts%ifc.perSec
	// frac * 1e9 / perSec without overflow.
	hi, lo := bits.Mul64(frac, 1e9)
	ns, _ := bits.Div64(hi, lo, ifc.perSec)
	return int64(sec)*1e9 + int64(ns) + ifc.offsetNs
}
