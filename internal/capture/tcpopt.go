package capture

import (
	"encoding/binary"
	"fmt"
)

// TCP option kinds (IANA "TCP Option Kind Numbers").
const (
	optEnd       = 0
	optNOP       = 1
	optMSS       = 2
	optWScale    = 3
	optSACKOK    = 4
	optSACK      = 5
	optTimestamp = 8
)

// tsOnly is NOP, NOP, then the timestamps option's kind and length.
const tsOnly = optNOP<<24 | optNOP<<16 | optTimestamp<<8 | 10

// SACKBlock is one SACK block: bytes Left..Right-1 were received.
type SACKBlock struct{ Left, Right uint32 }

// Options are the TCP options a flow analysis uses.
type Options struct {
	HasMSS        bool
	MSS           uint16
	HasWScale     bool
	WScale        uint8 // as sent; RFC 7323 caps the effective shift at 14
	SACKPermitted bool
	HasTimestamp  bool
	TSval, TSecr  uint32
	NSACK         int
	SACK          [4]SACKBlock
	// Layout holds the kinds of the first 8 options in order, one byte
	// each (NOP and end-of-list included), the first in the highest
	// byte used: the order stacks write SYN options in tells them apart.
	// Set by SetLayout, not by ParseOptions.
	Layout uint64
	NKinds uint8
}

// SetLayout records in o the kinds of the first 8 options of b (raw TCP
// options), NOP and end-of-list included. It is kept apart from
// ParseOptions: only SYNs need it, and ParseOptions runs per packet.
func (o *Options) SetLayout(b []byte) {
	o.Layout, o.NKinds = 0, 0
	for i := 0; i < len(b) && o.NKinds < 8; {
		k := b[i]
		o.Layout = o.Layout<<8 | uint64(k)
		o.NKinds++
		if k == optEnd {
			return
		}
		if k == optNOP || i+1 >= len(b) || b[i+1] < 2 {
			i++
			continue
		}
		i += int(b[i+1])
	}
}

// ParseOptions decodes the TCP options in b into o (reset first). It
// stops at the end-of-list option and returns an error, with what it
// decoded before, for an option whose length is wrong or runs past b.
func ParseOptions(b []byte, o *Options) error {
	if len(b) == 12 && binary.BigEndian.Uint32(b) == tsOnly {
		// What Linux and the BSDs put on every segment: the fast path.
		*o = Options{HasTimestamp: true, TSval: binary.BigEndian.Uint32(b[4:]), TSecr: binary.BigEndian.Uint32(b[8:])}
		return nil
	}
	*o = Options{}
	for i := 0; i < len(b); {
		kind := b[i]
		switch kind {
		case optEnd:
			return nil
		case optNOP:
			i++
			continue
		}
		if i+1 >= len(b) {
			return fmt.Errorf("tcp option %d at offset %d: no length byte", kind, i)
		}
		l := int(b[i+1])
		if l < 2 || i+l > len(b) {
			return fmt.Errorf("tcp option %d at offset %d: length %d does not fit %d bytes", kind, i, l, len(b)-i)
		}
		v := b[i+2 : i+l]
		switch kind {
		case optMSS:
			if l != 4 {
				return fmt.Errorf("tcp option mss: length %d, want 4", l)
			}
			o.HasMSS, o.MSS = true, binary.BigEndian.Uint16(v)
		case optWScale:
			if l != 3 {
				return fmt.Errorf("tcp option window scale: length %d, want 3", l)
			}
			o.HasWScale, o.WScale = true, v[0]
		case optSACKOK:
			if l != 2 {
				return fmt.Errorf("tcp option sack-permitted: length %d, want 2", l)
			}
			o.SACKPermitted = true
		case optSACK:
			if (l-2)%8 != 0 {
				return fmt.Errorf("tcp option sack: length %d is not 2 + 8n", l)
			}
			for j := 0; j+8 <= len(v) && o.NSACK < len(o.SACK); j += 8 {
				o.SACK[o.NSACK] = SACKBlock{binary.BigEndian.Uint32(v[j:]), binary.BigEndian.Uint32(v[j+4:])}
				o.NSACK++
			}
		case optTimestamp:
			if l != 10 {
				return fmt.Errorf("tcp option timestamps: length %d, want 10", l)
			}
			o.HasTimestamp = true
			o.TSval, o.TSecr = binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:])
		}
		i += l
	}
	return nil
}

// Shift returns the effective window scale shift (RFC 7323 2.3: values
// above 14 are treated as 14).
func (o *Options) Shift() uint8 { return min(o.WScale, 14) }
