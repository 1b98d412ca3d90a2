package tun

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// Helpers only the tests need: the emulator never builds frames or asks
// these questions.

// IsGSO reports whether the frame is a GSO super-packet of more than one
// segment.
func (i Info) IsGSO() bool { return i.NumSegs > 1 }

// Packet returns the linkemu view of the frame. It allocates SegPayload;
// FillPacket reuses a buffer instead.
func (i Info) Packet() linkemu.Packet {
	var p linkemu.Packet
	i.FillPacket(&p)
	return p
}

// Encode writes h into the first VirtioNetHdrLen bytes of b.
func (h VirtioNetHdr) Encode(b []byte) error {
	if len(b) < VirtioNetHdrLen {
		return fmt.Errorf("%w: %d bytes of room, need %d", errShortHdr, len(b), VirtioNetHdrLen)
	}
	h.put(b)
	return nil
}
