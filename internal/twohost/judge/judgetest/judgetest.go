package judgetest

import (
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// Host is a snapshot with the given buffers on a 6.x kernel.
func Host(rmem, wmem string) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Source: "test", Sysctls: map[string]string{
		"net.ipv4.tcp_rmem": rmem, "net.ipv4.tcp_wmem": wmem, "net.core.rmem_max": "212992", "net.core.wmem_max": "212992",
		"net.ipv4.tcp_slow_start_after_idle": "0", "net.ipv4.tcp_no_metrics_save": "1", "net.ipv4.tcp_mem": "94000 125000 190000",
		"net.ipv4.tcp_window_scaling": "1", "net.ipv4.tcp_congestion_control": "cubic", "net.ipv4.tcp_mtu_probing": "0"}, PageSize: 4096}
	s.Kernel.Release, s.Kernel.Major, s.Kernel.Minor = "6.8.0", 6, 8
	return s
}

// Stream is a sender's samples: Rate bits/s at RTT, Flight bytes in
// flight, with the given shares of each 100 ms spent rwnd- and
// sndbuf-limited; LossEvery > 0 retransmits a segment that often (in
// samples) while in recovery.
type Stream struct {
	Port                uint16
	Rate                float64
	RTT                 time.Duration
	Flight              int64
	RwndShare, SndShare float64
	Ssthresh            int64
	LossEvery           int
	Unscaled            bool // the handshake negotiated no window scaling
}

// Samples are the stream's samples every 100 ms for secs seconds.
func (st Stream) Samples(secs float64) []flows.Sample {
	k := flows.Sock{Local: netip.MustParseAddrPort("198.18.0.2:9978"), Remote: netip.AddrPortFrom(netip.MustParseAddr("198.18.0.1"), st.Port),
		State: "ESTABLISHED", MSS: 1448, Cwnd: 2 * st.Flight, Ssthresh: st.Ssthresh, SndWnd: 8 << 20, WindowScale: !st.Unscaled,
		RTT: st.RTT, MinRTT: st.RTT}
	var out []flows.Sample
	dt := 100 * time.Millisecond
	for i := 0; float64(i)*dt.Seconds() <= secs; i++ {
		k.Inflight = st.Flight
		if i > 0 {
			k.BytesAcked += int64(st.Rate * dt.Seconds() / 8)
			k.Busy += dt
			k.RwndLimited += time.Duration(st.RwndShare * float64(dt))
			k.SndbufLimited += time.Duration(st.SndShare * float64(dt))
			k.DataSegsOut += int64(st.Rate*dt.Seconds()/8) / 1448
			k.CAState = 0
			if st.LossEvery > 0 && i%st.LossEvery == 0 {
				k.Retrans += 10
				k.BytesRetrans += 14480
				k.CAState = 3
			}
		}
		out = append(out, flows.Sample{T: float64(i) * dt.Seconds(), Sock: k})
	}
	return out
}
