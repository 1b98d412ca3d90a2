package capture

import "encoding/binary"

// NextSegment reads the next record and decodes it: [Reader.Next] into
// p, then [Decode] into s and, for a TCP segment, [ParseOptions] into o.
// res is Decode's result; badOptions says ParseOptions failed (only
// when res is OK); err is Next's, and then nothing else is set.
//
// It is the analyzer's loop, where every instruction per packet counts
// (make bench-analyze): a little-endian pcap record of an untagged
// Ethernet frame, wholly in the buffer, is read in place and handed
// straight to the IPv4 decoder, without Next's indirect call or Decode's
// dispatch on the link type. Every other record takes the general path.
// Both give the same results (the capture fuzzers and
// TestMappedReadsAsStream read every file both ways). The record's
// header is read here as in nextPcap's fast path, not through a shared
// helper: one cost 0.5-3% more instructions per packet (cachegrind).
func (r *Reader) NextSegment(p *Packet, s *Segment, o *Options) (res Result, badOptions bool, err error) {
	if r.etherPcap {
		b := r.buf[r.pos:r.end]
		if len(b) >= 16+14 {
			incl := int(binary.LittleEndian.Uint32(b[8:]))
			if incl >= 14 && incl <= maxRecord && incl <= len(b)-16 && b[16+12] == 0x08 && b[16+13] == 0 {
				p.Time = int64(binary.LittleEndian.Uint32(b)) * 1e9
				if frac := int64(binary.LittleEndian.Uint32(b[4:])); r.nanos {
					p.Time += frac
				} else {
					p.Time += frac * 1000
				}
				frame := b[16 : 16+incl]
				orig := max(int(binary.LittleEndian.Uint32(b[12:])), incl)
				p.CapLen, p.OrigLen, p.LinkType, p.Interface, p.Data = incl, orig, LinkEthernet, 0, frame
				r.pos += 16 + incl
				r.off += int64(16 + incl)
				r.packets++
				if res = decodeIPv4(frame[14:], orig-incl, s); res == OK {
					badOptions = ParseOptions(s.Options, o) != nil
				}
				return res, badOptions, nil
			}
		}
	}
	if err = r.Next(p); err != nil {
		return 0, false, err
	}
	if res = Decode(p.LinkType, p.Data, p.OrigLen, s); res == OK {
		badOptions = ParseOptions(s.Options, o) != nil
	}
	return res, badOptions, nil
}
