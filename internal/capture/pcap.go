package capture

import (
	"encoding/binary"
	"io"
)

// pcap magic numbers as they appear in the file's first four bytes
// (https://www.ietf.org/archive/id/draft-ietf-opsawg-pcap-04.html).
const (
	magicMicro    = 0xa1b2c3d4
	magicNano     = 0xa1b23c4d
	magicModified = 0xa1b2cd34 // Alexey Kuznetzov's patched libpcap: 8 more bytes per record
)

func isPcapMagic(b []byte) bool {
	for _, o := range []byteOrder{big, little} {
		switch o.u32(b) {
		case magicMicro, magicNano, magicModified:
			return true
		}
	}
	return false
}

func (r *Reader) openPcap() error {
	h, err := r.peek(24)
	if err != nil {
		return r.ioErr(err, "pcap file header", 24, len(h))
	}
	r.order = big
	m := big.u32(h)
	if m != magicMicro && m != magicNano && m != magicModified {
		r.order = little
		m = little.u32(h)
	}
	r.nanos = m == magicNano
	r.modified = m == magicModified
	if r.modified {
		r.pcapExtra = 8
	}
	r.snaplen = r.order.u32(h[16:])
	// The link-type field's upper bits carry FCS information
	// (LINKTYPE_ and FCS length); only the low 16 bits name the link.
	r.linkType = LinkType(r.order.u32(h[20:]) & 0xffff)
	r.format, r.unit = "pcap", 1000
	if r.nanos {
		r.format, r.unit = "pcap (nanosecond)", 1
	}
	r.discard(24)
	r.next = (*Reader).nextPcap
	r.etherPcap = r.order == little && r.pcapExtra == 0 && r.linkType == LinkEthernet
	return nil
}

func (r *Reader) nextPcap(p *Packet) error {
	hl := 16 + r.pcapExtra
	b := r.buf[r.pos:r.end]
	if len(b) < hl || r.order != little {
		return r.nextPcapSlow(p)
	}
	// The fast path: a little-endian record wholly in the buffer.
	incl := int(binary.LittleEndian.Uint32(b[8:]))
	if incl > maxRecord || incl < 0 || len(b)-hl < incl {
		return r.nextPcapSlow(p)
	}
	p.Time = int64(binary.LittleEndian.Uint32(b)) * 1e9
	if frac := int64(binary.LittleEndian.Uint32(b[4:])); r.nanos {
		p.Time += frac
	} else {
		p.Time += frac * 1000
	}
	p.CapLen, p.OrigLen = incl, max(int(binary.LittleEndian.Uint32(b[12:])), incl)
	p.LinkType, p.Interface = r.linkType, 0
	p.Data = b[hl : hl+incl]
	r.pos += hl + incl
	return nil
}

// nextPcapSlow reads a record that is not all in the buffer, or
// big-endian.
func (r *Reader) nextPcapSlow(p *Packet) error {
	hl := 16 + r.pcapExtra
	h, err := r.peek(hl)
	if err != nil {
		if len(h) == 0 && err == io.ErrUnexpectedEOF {
			return io.EOF
		}
		return r.ioErr(err, "record header", hl, len(h))
	}
	sec, frac := r.order.u32(h), r.order.u32(h[4:])
	incl, orig := int(r.order.u32(h[8:])), int(r.order.u32(h[12:]))
	if incl > maxRecord || incl < 0 {
		return r.corrupt("record claims %d captured bytes (snaplen %d): not a record boundary", incl, r.snaplen)
	}
	b, err := r.peek(hl + incl)
	if err != nil {
		return r.ioErr(err, "record", hl+incl, len(b))
	}
	p.Time = int64(sec) * 1e9
	if r.nanos {
		p.Time += int64(frac)
	} else {
		p.Time += int64(frac) * 1000
	}
	p.CapLen, p.OrigLen = incl, max(orig, incl)
	p.LinkType, p.Interface = r.linkType, 0
	p.Data = b[hl : hl+incl]
	r.discard(hl + incl)
	return nil
}
