package tcpflow

import "github.com/longhaul/longhaul/internal/capture"

// Packet feeds one captured packet.
func (a *Analyzer) Packet(p *capture.Packet) {
	r := capture.Decode(p.LinkType, p.Data, p.OrigLen, &a.seg)
	badOpt := false
	if r == capture.OK {
		badOpt = capture.ParseOptions(a.seg.Options, &a.opt) != nil
	}
	a.segment(&a.seg, &a.opt, badOpt, r, p.Time)
}
