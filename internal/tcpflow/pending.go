package tcpflow

import (
	"net/netip"
	"slices"

	"github.com/longhaul/longhaul/internal/capture"
)

// A connection attempt that is only a SYN (a port scan, a SYN flood, a
// dead server) is held in a compact record instead of a Flow (~100 bytes
// instead of ~8 kB), so that a capture of a million of them stays within
// a few hundred megabytes. The first other packet of the connection, in
// either direction, turns the record into a Flow by replaying the SYN
// into it, so nothing is lost; records still waiting at the end become
// Flows too when there are few of them (the output is then what it
// always was) and are counted instead when there are many.

// maxListedAttempts is how many unanswered SYNs the analysis lists one by
// one; above it they are counted in Analysis.UnansweredSYNs.
const maxListedAttempts = 10000

// pendKey4 and pendKey6 are a connection's addresses and ports, packed
// (12 bytes for IPv4: a SYN flood is mostly IPv4).
type (
	pendKey4 [12]byte
	pendKey6 [36]byte
)

// pending holds the SYNs, by address family.
type pending struct {
	v4 map[pendKey4]pendSYN
	v6 map[pendKey6]pendSYN
}

func newPending() pending {
	return pending{v4: map[pendKey4]pendSYN{}, v6: map[pendKey6]pendSYN{}}
}

func (p *pending) len() int { return len(p.v4) + len(p.v6) }

func (p *pending) put(k key, v pendSYN) {
	if k.src.Addr().Is4() {
		p.v4[pack4(k)] = v
	} else {
		p.v6[pack6(k)] = v
	}
}

// take removes and returns the SYN held for k.
func (p *pending) take(k key) (pendSYN, bool) {
	if k.src.Addr().Is4() {
		pk := pack4(k)
		v, ok := p.v4[pk]
		delete(p.v4, pk)
		return v, ok
	}
	pk := pack6(k)
	v, ok := p.v6[pk]
	delete(p.v6, pk)
	return v, ok
}

// each calls fn for every held SYN with its connection's key.
func (p *pending) each(fn func(key, pendSYN)) {
	for pk, v := range p.v4 {
		fn(key{netip.AddrPortFrom(netip.AddrFrom4([4]byte(pk[0:4])), port(pk[8:])), netip.AddrPortFrom(netip.AddrFrom4([4]byte(pk[4:8])), port(pk[10:]))}, v)
	}
	for pk, v := range p.v6 {
		fn(key{netip.AddrPortFrom(netip.AddrFrom16([16]byte(pk[0:16])), port(pk[32:])), netip.AddrPortFrom(netip.AddrFrom16([16]byte(pk[16:32])), port(pk[34:]))}, v)
	}
}

func port(b []byte) uint16 { return uint16(b[0])<<8 | uint16(b[1]) }

func pack4(k key) pendKey4 {
	var p pendKey4
	s, d := k.src.Addr().As4(), k.dst.Addr().As4()
	copy(p[0:4], s[:])
	copy(p[4:8], d[:])
	p[8], p[9], p[10], p[11] = byte(k.src.Port()>>8), byte(k.src.Port()), byte(k.dst.Port()>>8), byte(k.dst.Port())
	return p
}

func pack6(k key) pendKey6 {
	var p pendKey6
	s, d := k.src.Addr().As16(), k.dst.Addr().As16()
	copy(p[0:16], s[:])
	copy(p[16:32], d[:])
	p[32], p[33], p[34], p[35] = byte(k.src.Port()>>8), byte(k.src.Port()), byte(k.dst.Port()>>8), byte(k.dst.Port())
	return p
}

// pendSYN is what a SYN needs to be replayed: the segment's fields and
// its options.
type pendSYN struct {
	t                      int64
	id                     int32
	seq, ack, tsval, tsecr uint32
	layout                 uint64
	win, mss, ipid         uint16
	ttl, wscale, nkinds    uint8
	bits                   uint8
}

const (
	pendV4 = 1 << iota
	pendMSS
	pendWScale
	pendSACKOK
	pendTS
	pendOptCut
)

// pureSYN is a SYN without ACK, RST, FIN or data: what a new connection
// attempt starts with.
func pureSYN(s *capture.Segment) bool {
	return s.Flags&(capture.FlagSYN|capture.FlagACK|capture.FlagRST|capture.FlagFIN) == capture.FlagSYN && s.PayloadLen == 0
}

func hold(s *capture.Segment, o *capture.Options, t int64, id int) pendSYN {
	p := pendSYN{t: t, id: int32(id), seq: s.Seq, ack: s.Ack, win: s.Window, ipid: s.IPID, ttl: s.TTL,
		tsval: o.TSval, tsecr: o.TSecr, layout: o.Layout, nkinds: o.NKinds, mss: o.MSS, wscale: o.WScale}
	for _, b := range []struct {
		on  bool
		bit uint8
	}{{s.IPVersion == 4, pendV4}, {o.HasMSS, pendMSS}, {o.HasWScale, pendWScale}, {o.SACKPermitted, pendSACKOK}, {o.HasTimestamp, pendTS}, {s.OptionsCut, pendOptCut}} {
		if b.on {
			p.bits |= b.bit
		}
	}
	return p
}

// replay rebuilds the SYN's segment and options.
func (p pendSYN) replay(k key) (capture.Segment, capture.Options) {
	s := capture.Segment{IPVersion: 6, Src: k.src.Addr(), Dst: k.dst.Addr(), SrcPort: k.src.Port(), DstPort: k.dst.Port(),
		Seq: p.seq, Ack: p.ack, Flags: capture.FlagSYN, Window: p.win, IPID: p.ipid, TTL: p.ttl, OptionsCut: p.bits&pendOptCut != 0}
	if p.bits&pendV4 != 0 {
		s.IPVersion = 4
	}
	o := capture.Options{HasMSS: p.bits&pendMSS != 0, MSS: p.mss, HasWScale: p.bits&pendWScale != 0, WScale: p.wscale,
		SACKPermitted: p.bits&pendSACKOK != 0, HasTimestamp: p.bits&pendTS != 0, TSval: p.tsval, TSecr: p.tsecr,
		Layout: p.layout, NKinds: p.nkinds}
	return s, o
}

// takePending returns the flow a held SYN becomes when another packet of
// its connection (k is that packet's direction) arrives, and true; false
// when no SYN is held for k.
func (a *Analyzer) takePending(k key) (ref, bool) {
	for dir, kk := range [2]key{k, {k.dst, k.src}} {
		p, ok := a.pending.take(kk)
		if !ok {
			continue
		}
		f := a.materialize(kk, p)
		return ref{f, uint8(dir)}, true
	}
	return ref{}, false
}

// materialize turns a held SYN into a Flow with the ID it got when it
// was seen.
func (a *Analyzer) materialize(k key, p pendSYN) *Flow {
	s, o := p.replay(k)
	r := a.newFlowID(k, &s, p.t, int(p.id))
	r.f.packet(0, &s, &o, p.t)
	return r.f
}

// finishPending lists the SYNs never answered when there are few, else
// counts them; the flows are then put back in the order they were seen.
func (a *Analyzer) finishPending() int64 {
	n := a.pending.len()
	if n == 0 {
		return 0
	}
	defer func() { a.pending = newPending() }()
	if n > maxListedAttempts {
		return int64(n)
	}
	a.pending.each(func(k key, p pendSYN) { a.materialize(k, p) })
	slices.SortFunc(a.flows, func(x, y *Flow) int { return x.ID - y.ID })
	return 0
}
