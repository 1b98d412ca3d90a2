package tun

import (
	"encoding/binary"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// TCP option kinds a middlebox rewrites.
const (
	optEnd    = 0
	optNOP    = 1
	optMSS    = 2
	optWScale = 3
)

// RewriteSYN applies a middlebox's rewrite to frame in place when it is a
// TCP SYN or SYN-ACK (i is frame's Inspect result) and reports whether a
// byte changed: an MSS option above m.ClampMSS is lowered to it, and the
// window scale option is replaced by NOPs or given m.Shift. A frame the
// kernel left to finish (NEEDS_CSUM) carries only the pseudo-header sum,
// which the options do not enter; a complete checksum is updated for the
// changed words (RFC 1624). Malformed options are left as they are.
func RewriteSYN(frame []byte, i Info, m linkemu.Middlebox) bool {
	if i.Proto != ProtoTCP || i.TCPFlags&TCPFlagSYN == 0 || i.Fragment || !m.Enabled() {
		return false
	}
	tcp := frame[VirtioNetHdrLen+i.IPHeaderLen:]
	if len(tcp) < i.L4HeaderLen || i.L4HeaderLen <= 20 {
		return false
	}
	opts := tcp[20:i.L4HeaderLen]
	before := csumAdd(0, opts)
	changed := false
	for k := 0; k < len(opts); {
		kind := opts[k]
		if kind == optEnd {
			break
		}
		if kind == optNOP {
			k++
			continue
		}
		if k+1 >= len(opts) || opts[k+1] < 2 || k+int(opts[k+1]) > len(opts) {
			break // malformed: leave the rest alone
		}
		n := int(opts[k+1])
		switch {
		case kind == optMSS && n == 4 && m.ClampMSS > 0:
			if mss := binary.BigEndian.Uint16(opts[k+2:]); int(mss) > m.ClampMSS {
				binary.BigEndian.PutUint16(opts[k+2:], uint16(m.ClampMSS))
				changed = true
			}
		case kind == optWScale && n == 3 && m.WScale == linkemu.WScaleStrip:
			opts[k], opts[k+1], opts[k+2] = optNOP, optNOP, optNOP
			changed = true
		case kind == optWScale && n == 3 && m.WScale == linkemu.WScaleSet && opts[k+2] != m.Shift:
			opts[k+2] = m.Shift
			changed = true
		}
		k += n
	}
	if changed && i.Hdr.Flags&FlagNeedsCsum == 0 {
		// check = ~sum: the new sum is sum - before + after.
		check := binary.BigEndian.Uint16(tcp[16:])
		after := csumAdd(0, opts)
		sum := uint64(^check) + uint64(^csumFold(before)) + uint64(csumFold(after))
		binary.BigEndian.PutUint16(tcp[16:], ^csumFold(sum))
	}
	return changed
}
