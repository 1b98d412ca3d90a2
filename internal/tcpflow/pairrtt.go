package tcpflow

import "net/netip"

// The path's round trip between two hosts, across their connections:
// the least clean handshake of any of them. A connection that opened
// while other traffic kept the bottleneck's queue full never sees the
// path idle (its own handshake and every sample carry the queue), and a
// queue it never saw empty is no queue to it: a shared bottleneck's
// flow then looks held at no queue (measured: a cubic download opened
// next to a bulk transfer on 50 ms x 100 Mbit/s, 88.8 ms at its
// handshake, its 51 losses in slow start named a shallow buffer).
// Another connection between the same hosts that opened while the path
// was idle shows the path's own round trip (52.8 ms there).

// hostPair is two hosts, in address order.
type hostPair [2]netip.Addr

func pairOf(f *Flow) hostPair {
	x, y := f.Addr[0].Addr(), f.Addr[1].Addr()
	if y.Less(x) {
		x, y = y, x
	}
	return hostPair{x, y}
}

// notePairRTT keeps f's handshake round trip for its hosts when it is
// clean and consistent with its data (no SYN proxy answered it: the
// handshake no shorter than a third of the data's fastest round trip).
func (a *Analyzer) notePairRTT(f *Flow) {
	h1, h2, ok := f.halves()
	if !ok || h1+h2 <= 0 {
		return
	}
	rtt := h1 + h2
	for i := range f.dir {
		if d := &f.dir[i]; d.rttN > 0 && 3*rtt < f.minRTT(d) {
			return
		}
	}
	if a.pairRTT == nil {
		a.pairRTT = map[hostPair]int64{}
	}
	k := pairOf(f)
	if old, ok := a.pairRTT[k]; !ok || rtt < old {
		a.pairRTT[k] = rtt
	}
}

// pathRTT is the least round trip any connection between f's hosts
// showed (notePairRTT), 0 unknown.
func (a *Analyzer) pathRTT(f *Flow) int64 { return a.pairRTT[pairOf(f)] }
