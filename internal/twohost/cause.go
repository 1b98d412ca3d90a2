package twohost

import (
	"cmp"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// phaseCause names what the path did to a single-stream phase held by
// its congestion window that lost segments: reordering when many of its
// retransmissions were spurious (diagnose.ReorderCause), else
// (diagnose.LossCause) random loss, a shallow buffer or bufferbloat, from the phase's own evidence:
// the RTT of the control pings while it ran against the idle minimum,
// and how its sender lost segments over the whole phase (how many, in
// how many events). A flow at the rate
// the path carried on several streams (or --rate) has none: the path's
// capacity held it.
func phaseCause(p PhaseRaw, f flows.Flow, minRTT time.Duration, pathBps float64) (*diagnose.Cause, bool) {
	v := f.Verdict.Verdict
	if (v != diagnose.LossLimited && v != diagnose.Bottleneck) || minRTT <= 0 {
		return nil, false
	}
	if pathBps > 0 && f.ThroughputBps >= 0.9*pathBps {
		return nil, false
	}
	all := sockSamples(senderSamples(p), f.Local+"-"+f.Remote)
	half := sendingHalf(all)
	if len(half) < 2 {
		return nil, false
	}
	last := half[len(half)-1].Sock
	e := diagnose.LossEvidence{MinRTT: minRTT, LoadedRTT: median(p.LoadedRTTs), Bps: f.ThroughputBps,
		MSS: int(last.MSS), CC: last.CC, Sender: "the " + senderOf(p.Grant.Name)}
	// Losses over the whole phase, slow start's included: how they came
	// (one here and there, or in bursts) is what tells the causes apart.
	var prev, acked int64
	for _, s := range all {
		if d := s.Sock.Retrans - prev; d > 0 {
			e.LossEvents++
			e.Lost += d
		}
		if s.Sock.BytesAcked > acked {
			e.Intervals++
		}
		prev, acked = max(prev, s.Sock.Retrans), max(acked, s.Sock.BytesAcked)
	}
	if last.DataSegsOut > 0 {
		e.LossRate = float64(e.Lost) / float64(last.DataSegsOut)
	}
	for _, s := range half {
		e.PeakBps = max(e.PeakBps, s.Sock.DeliveryBps)
	}
	if e.LoadedRTT == 0 {
		// No pings answered while it ran: the sender's smoothed RTT.
		rtts := make([]time.Duration, 0, len(half))
		for _, s := range half {
			rtts = append(rtts, s.Sock.RTT)
		}
		e.LoadedRTT = median(rtts)
	}
	end := all[len(all)-1].Sock
	if c, ok := diagnose.ReorderCause(diagnose.ReorderEvidence{Events: end.ReordSeen, Degree: end.Reordering,
		Spurious: end.DSACKDups, Retrans: end.Retrans, Segments: end.DataSegsOut, MinRTT: minRTT, Bps: f.ThroughputBps, Sender: e.Sender}); ok {
		return &c, true
	}
	c, ok := diagnose.LossCause(e)
	if !ok || (v == diagnose.Bottleneck && c.Name == diagnose.CauseBufferbloat) {
		// A bottleneck's bloat is a flag of its verdict already.
		return nil, false
	}
	return &c, true
}

// bySocket splits samples by socket, in the order the sockets first
// appear, each socket's in time order.
func bySocket(samples []flows.Sample) [][]flows.Sample {
	at := map[string]int{}
	var out [][]flows.Sample
	for _, s := range samples {
		k := s.Sock.Key()
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], s)
	}
	for _, ss := range out {
		slices.SortStableFunc(ss, func(a, b flows.Sample) int { return cmp.Compare(a.T, b.T) })
	}
	return out
}

// sockSamples are one socket's samples (its key) in time order.
func sockSamples(samples []flows.Sample, key string) []flows.Sample {
	for _, ss := range bySocket(samples) {
		if ss[0].Sock.Key() == key {
			return ss
		}
	}
	return nil
}

// sendingHalf is a socket's samples (in time order) over the second half
// of its active time, up to the last one that moved data (slow start is
// over by then); nil when it moved data in fewer than 3 samples.
func sendingHalf(ss []flows.Sample) []flows.Sample {
	end := len(ss) - 1
	for end > 0 && ss[end].Sock.BytesAcked == ss[end-1].Sock.BytesAcked {
		end--
	}
	if end < 2 {
		return nil
	}
	mid := ss[0].T + (ss[end].T-ss[0].T)/2
	i := 0
	for i < end-1 && ss[i].T < mid {
		i++
	}
	return ss[i : end+1]
}

// capacityPeak is the most the capacity phase's streams were seen
// delivering together (the sum of the kernel's delivery-rate estimates
// of one dump), over the steady half: the path carried at least that.
func capacityPeak(samples []flows.Sample) float64 {
	sorted := slices.Clone(samples)
	slices.SortStableFunc(sorted, func(a, b flows.Sample) int { return cmp.Compare(a.T, b.T) })
	if len(sorted) == 0 {
		return 0
	}
	mid := sorted[0].T + (sorted[len(sorted)-1].T-sorted[0].T)/2
	peak, sum := 0.0, 0.0
	for i, s := range sorted {
		if s.T < mid {
			continue
		}
		sum += s.Sock.DeliveryBps
		if i+1 == len(sorted) || sorted[i+1].T != s.T {
			peak, sum = max(peak, sum), 0
		}
	}
	return peak
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func senderOf(phase string) string {
	s, _ := ends(phase)
	return s
}

// windowScaling is a host's net.ipv4.tcp_window_scaling: 1 on, 0 off, -1
// unknown (no snapshot, or the key missing).
func windowScaling(s *snapshot.Snapshot) int64 {
	if s == nil {
		return -1
	}
	if v, ok := s.Int("net.ipv4.tcp_window_scaling"); ok {
		return v
	}
	return -1
}

// unscaled: the flow was held by its receiver's window on a connection
// that negotiated no window scaling.
func unscaled(f flows.Flow) bool {
	return f.Verdict.Verdict == diagnose.RwndLimited && slices.Contains(f.Verdict.Flags, diagnose.FlagNoWindowScaling)
}

// scaleCause names a middlebox that stripped window scaling: the flow was
// held by an unscaled window although both hosts allow scaling (so each
// SYN left with the option). A host with scaling off is its own limit
// (limitOf), not the path's.
func (d *Doc) scaleCause(phase string, f flows.Flow, minRTT time.Duration, pathBps float64) (*diagnose.Cause, bool) {
	if !unscaled(f) || windowScaling(d.Hosts.Client) != 1 || windowScaling(d.Hosts.Server) != 1 {
		return nil, false
	}
	_, receiver := ends(phase)
	c, ok := diagnose.WindowScaleCause(diagnose.ScaleEvidence{MinRTT: minRTT, Bps: f.ThroughputBps, PathBps: pathBps, Receiver: "the " + receiver})
	return &c, ok
}
