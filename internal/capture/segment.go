package capture

import "encoding/binary"

// NextSegment reads the next record and decodes it: [Reader.Next], then
// [Decode] into s and, for a TCP segment, [ParseOptions] into o. t is
// the record's time (Packet.Time) and res is Decode's result;
// badOptions says ParseOptions failed (only when res is OK); err is
// Next's, and then nothing else is set. The record's other fields
// (lengths, link type, bytes) are not handed out: the analyzer needs
// none of them.
//
// It is the analyzer's loop, where every instruction per packet counts
// (make bench-analyze). Two shapes of record are read in place, without
// Next's indirect call or Decode's dispatch on the link type:
//   - what Linux and the BSDs send on every segment of a connection: a
//     little-endian pcap record of an untagged Ethernet frame, IPv4
//     without IP options, a TCP header with the timestamps option alone
//     (tsFrame), read in one pass under one bounds check;
//   - any other little-endian pcap record of an untagged IPv4 Ethernet
//     frame, handed straight to the IPv4 decoder.
//
// Every other record takes the general path. All give the same results
// (the capture fuzzers and TestMappedReadsAsStream read every file both
// ways). The record's header is read here as in nextPcap's fast path,
// not through a shared helper: one cost 0.5-3% more instructions per
// packet (cachegrind).
func (r *Reader) NextSegment(s *Segment, o *Options) (t int64, res Result, badOptions bool, err error) {
	if r.etherPcap {
		pos, b := r.pos, r.buf[r.pos:r.end]
		if len(b) >= tsFrame {
			h := (*[tsFrame]byte)(b)
			incl := int(binary.LittleEndian.Uint32(h[8:]))
			total := int(binary.BigEndian.Uint16(h[32:]))
			if incl >= tsFrame-16 && incl <= len(b)-16 && incl <= maxRecord &&
				binary.BigEndian.Uint32(h[28:])&^0xff == 0x0800_4500 && // IPv4, untagged, no IP options
				h[39] == protoTCP && binary.BigEndian.Uint16(h[36:])&0x1fff == 0 && // not a fragment
				h[62]>>4 == 8 && total >= 20+32 && // a 32-byte TCP header the IP length holds
				binary.BigEndian.Uint32(h[70:]) == tsOnly {
				t = int64(binary.LittleEndian.Uint32(h[0:])) * 1e9
				if frac := int64(binary.LittleEndian.Uint32(h[4:])); r.nanos {
					t += frac
				} else {
					t += frac * 1000
				}
				r.pos = pos + 16 + incl
				r.packets++
				s.ipv4Fields((*[20]byte)(h[30:50]))
				s.tcpFields((*[20]byte)(h[50:70]))
				s.OptionsCut = false
				s.Options = h[70:82]
				s.PayloadLen = total - 20 - 32
				*o = Options{HasTimestamp: true, TSval: binary.BigEndian.Uint32(h[74:]), TSecr: binary.BigEndian.Uint32(h[78:])}
				return t, OK, false, nil
			}
		}
		if len(b) >= 16+14 {
			incl := int(binary.LittleEndian.Uint32(b[8:]))
			if incl >= 14 && incl <= maxRecord && incl <= len(b)-16 && b[16+12] == 0x08 && b[16+13] == 0 {
				t = int64(binary.LittleEndian.Uint32(b)) * 1e9
				if frac := int64(binary.LittleEndian.Uint32(b[4:])); r.nanos {
					t += frac
				} else {
					t += frac * 1000
				}
				frame := b[16 : 16+incl]
				orig := max(int(binary.LittleEndian.Uint32(b[12:])), incl)
				r.pos = pos + 16 + incl
				r.packets++
				if res = decodeIPv4(frame[14:], orig-incl, s); res == OK {
					badOptions = ParseOptions(s.Options, o) != nil
				}
				return t, res, badOptions, nil
			}
		}
	}
	p := &r.pkt
	if err = r.Next(p); err != nil {
		return 0, 0, false, err
	}
	if res = Decode(p.LinkType, p.Data, p.OrigLen, s); res == OK {
		badOptions = ParseOptions(s.Options, o) != nil
	}
	return p.Time, res, badOptions, nil
}

// tsFrame is the record header, Ethernet, an IPv4 header without options
// and a TCP header with the timestamps option alone (NOP, NOP, TS).
const tsFrame = 16 + 14 + 20 + 32
