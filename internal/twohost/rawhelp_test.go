package twohost

import (
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Raw measurements for tests, as a test's two ends would record them.

// host is a snapshot with the given buffers on a 6.x kernel.
func host(rmem, wmem string) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Source: "test", Sysctls: map[string]string{
		"net.ipv4.tcp_rmem": rmem, "net.ipv4.tcp_wmem": wmem, "net.core.rmem_max": "212992", "net.core.wmem_max": "212992",
		"net.ipv4.tcp_slow_start_after_idle": "0", "net.ipv4.tcp_no_metrics_save": "1", "net.ipv4.tcp_mem": "94000 125000 190000",
		"net.ipv4.tcp_window_scaling": "1", "net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_mtu_probing": "0"}, PageSize: 4096}
	s.Kernel.Release, s.Kernel.Major, s.Kernel.Minor = "6.8.0", 6, 8
	return s
}

// stream is a sender's samples: rate bits/s for secs seconds at rtt,
// flight bytes in flight, with the given shares of each 100 ms spent
// rwnd- and sndbuf-limited; lossEvery > 0 retransmits a segment that
// often (in samples) while in recovery.
type stream struct {
	port                uint16
	rate                float64
	rtt                 time.Duration
	flight              int64
	rwndShare, sndShare float64
	ssthresh            int64
	lossEvery           int
	unscaled            bool // the handshake negotiated no window scaling
}

func (st stream) samples(secs float64) []flows.Sample {
	k := flows.Sock{Local: netip.MustParseAddrPort("198.18.0.2:9978"), Remote: netip.AddrPortFrom(netip.MustParseAddr("198.18.0.1"), st.port),
		State: "ESTABLISHED", MSS: 1448, Cwnd: 2 * st.flight, Ssthresh: st.ssthresh, SndWnd: 8 << 20, WindowScale: !st.unscaled,
		RTT: st.rtt, MinRTT: st.rtt}
	var out []flows.Sample
	dt := 100 * time.Millisecond
	for i := 0; float64(i)*dt.Seconds() <= secs; i++ {
		k.Inflight = st.flight
		if i > 0 {
			k.BytesAcked += int64(st.rate * dt.Seconds() / 8)
			k.Busy += dt
			k.RwndLimited += time.Duration(st.rwndShare * float64(dt))
			k.SndbufLimited += time.Duration(st.sndShare * float64(dt))
			k.DataSegsOut += int64(st.rate*dt.Seconds()/8) / 1448
			k.CAState = 0
			if st.lossEvery > 0 && i%st.lossEvery == 0 {
				k.Retrans += 10
				k.BytesRetrans += 14480
				k.CAState = 3
			}
		}
		out = append(out, flows.Sample{T: float64(i) * dt.Seconds(), Sock: k})
	}
	return out
}

func rawWith(client, server *snapshot.Snapshot, phases ...judge.PhaseRaw) *judge.Raw {
	return &judge.Raw{Server: "198.18.0.2:9978", Started: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Client: client, ServerSnap: server,
		Caps: testdoc.Caps{MaxDurationS: 120, MaxBytes: 1 << 34, MaxStreams: 16}, IdleRTTs: []time.Duration{50 * time.Millisecond}, PhaseLength: 4 * time.Second, Phases: phases}
}

func phaseOf(name string, streams ...stream) judge.PhaseRaw {
	p := judge.PhaseRaw{Grant: wire.Grant{Phase: 1, Name: name, Streams: len(streams), DurationS: 4}, Done: wire.PhaseDone{Phase: 1, Reason: "duration"}}
	for _, s := range streams {
		ss := s.samples(4)
		if name == wire.PhaseUpload {
			p.Client = append(p.Client, ss...)
		} else {
			p.Server = append(p.Server, ss...)
		}
	}
	return p
}
