package tcpflow

import (
	"net/netip"
	"testing"
	"time"
)

// The path's round trip between two hosts is the least clean handshake
// of their connections: one opened while the queue stood full (88.8 ms)
// learns the path's 52.8 ms from one opened idle; other hosts keep
// their own; a handshake far shorter than its own data's round trip (a
// SYN proxy answered it) teaches nothing.
func TestPathRTTAcrossConnections(t *testing.T) {
	ms := int64(time.Millisecond)
	srv := netip.MustParseAddrPort("198.18.0.2:9978")
	conn := func(client string, rtt int64) *Flow {
		return &Flow{Addr: [2]netip.AddrPort{netip.MustParseAddrPort(client), srv}, client: 0, synT: 0, synAckT: 0, ackT: rtt}
	}
	busy := conn("198.18.0.1:50632", 88800*time.Microsecond.Nanoseconds())
	idle := conn("198.18.0.1:47764", 52800*time.Microsecond.Nanoseconds())
	other := conn("198.18.0.3:40000", 10*ms)
	proxied := conn("198.18.0.4:40000", ms)
	proxied.dir[1].rttN, proxied.dir[1].rttMin = 5, 50*ms
	a := &Analyzer{}
	for _, f := range []*Flow{busy, idle, other, proxied} {
		a.notePairRTT(f)
	}
	if got := a.pathRTT(busy); got != 52800*time.Microsecond.Nanoseconds() {
		t.Errorf("busy connection's path RTT %v, want 52.8 ms", time.Duration(got))
	}
	if got := a.pathRTT(other); got != 10*ms {
		t.Errorf("other host's %v, want 10 ms", time.Duration(got))
	}
	if got := a.pathRTT(proxied); got != 0 {
		t.Errorf("proxied handshake's %v, want none", time.Duration(got))
	}
}
