package scenario

import (
	"fmt"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Model is the path model's prediction for a case, computed from the
// settings actually in effect (read back from the kernel) and, for sizes
// the peers add (HTTP headers), from the measured metrics. It returns
// the predictions under the metric names the runs use, and notes that
// explain them. It is pure.
func Model(s *Scenario, c Case, st State, measured map[string]float64) (map[string]float64, []string, error) {
	if p := s.PathOf(c); c.Kind == KindPing || p.Veth || p.RateBps == 0 || p.RTT == 0 {
		return nil, nil, nil // nothing the model predicts: an idle, unlimited or zero-delay path
	}
	if c.Kind == KindCauses {
		// What the link carries: the rate test should report for the
		// path whatever the failure held one stream to.
		return map[string]float64{"path_rate_bps": pathmodel.Goodput(s.PathOf(c).RateBps)}, nil, nil
	}
	in, err := modelInput(s, c, st)
	if err != nil {
		return nil, nil, fmt.Errorf("case %s: settings read back: %w", c.ID, err)
	}
	out := map[string]float64{}
	var notes []string
	switch c.Kind {
	case KindDownload, KindIperf:
		if c.Kind == KindIperf {
			in.Flows = c.Streams
			in.SoRcvbuf, in.SoSndbuf = c.Window, c.Window
		}
		r, err := pathmodel.Compute(in)
		if err != nil {
			return nil, nil, err
		}
		out["throughput_bps"] = r.ExpectedBps
		out["bdp_bytes"] = float64(r.BDPBytes)
		bound := 0.0
		if r.LimitedBy != "path" {
			bound = 1
		}
		out["window_bound"] = bound
		notes = append(notes, limitNote(r))
		if sb := r.Receiver.SockBuf; sb != nil && sb.Clamped {
			notes = append(notes, fmt.Sprintf("-w %s is above net.core.rmem_max %s: the kernel clamps SO_RCVBUF to %s and doubles it to a %s buffer (window %s), and autotuning is off",
				units.FormatIEC(float64(sb.RequestedBytes)), units.FormatIEC(float64(sb.CoreMaxBytes)), units.FormatIEC(float64(sb.CoreMaxBytes)),
				units.FormatIEC(float64(sb.BufferBytes)), units.FormatIEC(sb.WindowBytes)))
		}
	case KindObject:
		in.InitCwnd, in.InitRwnd = st.Server.InitCwnd, st.Client.InitRwnd
		in.TransferBytes = c.Bytes + int64(measured["header_bytes"])
		r, err := pathmodel.Compute(in)
		if err != nil {
			return nil, nil, err
		}
		t := r.Transfer
		out["ttlb_s"], out["rounds"] = t.Seconds, float64(t.RoundTrips)
		notes = append(notes, fmt.Sprintf("model: %d segments in %d data round(s) %v, first flight limited by %s",
			t.Segments, t.DataRounds, t.Flights, t.FirstFlightLimit))
	case KindUpload:
		in.SoRcvbuf = c.RcvBuf
		in.TransferBytes = c.Bytes
		r, err := pathmodel.Compute(in)
		if err != nil {
			return nil, nil, err
		}
		out["upload_s"] = r.Transfer.Seconds
		if r.Receiver.WindowBytes > 0 && c.RcvBuf > 0 {
			out["window_bytes"] = r.Receiver.WindowBytes
			notes = append(notes, fmt.Sprintf("model: rcvbuf=%d gives a %s receive buffer and a %s window: %s at %s",
				c.RcvBuf, units.FormatBytes(float64(r.Receiver.BufferBytes)), units.FormatBytes(r.Receiver.WindowBytes),
				units.FormatByteRate(r.Receiver.CeilingBps/8), units.FormatDuration(s.RTT)))
		}
		if w := measured["window_bytes"]; w > 0 {
			// The same arithmetic with the window the server really
			// advertised: the check of "in proportion to window/RTT".
			out["window_time_s"] = float64(c.Bytes) / w * s.RTT.Seconds()
		}
	default:
		return nil, nil, fmt.Errorf("case %s: unknown kind %q", c.ID, c.Kind)
	}
	return out, notes, nil
}

// modelInput is the path model's input for a run: the receiver's
// tcp_rmem and rmem_max, the sender's tcp_wmem and wmem_max, as read
// back. The client receives except in uploads.
func modelInput(s *Scenario, c Case, st State) (pathmodel.Input, error) {
	p := s.PathOf(c)
	in := pathmodel.Input{RTT: p.RTT, RateBps: pathmodel.Goodput(p.RateBps), Kernel: s.Facts.Kernel}
	if c.Kind != KindDownload && c.Kind != KindIperf && c.Kind != KindObject && c.Kind != KindUpload {
		return in, nil // Model says "unknown kind"
	}
	recv, send := st.Client, st.Server
	if c.Kind == KindUpload {
		recv, send = st.Server, st.Client
	}
	var err error
	if in.Rmem, err = recv.Triple("net.ipv4.tcp_rmem"); err != nil {
		return in, err
	}
	if in.Wmem, err = send.Triple("net.ipv4.tcp_wmem"); err != nil {
		return in, err
	}
	if in.CoreRmemMax, err = recv.Int("net.core.rmem_max"); err != nil {
		return in, err
	}
	in.CoreWmemMax, err = send.Int("net.core.wmem_max")
	return in, err
}

// limitNote says what the model expects to limit a bulk transfer.
func limitNote(r pathmodel.Result) string {
	switch r.LimitedBy {
	case "receiver":
		return fmt.Sprintf("model: the receiver's %s (%s) allows a %s window: %s per flow",
			r.Receiver.Source, units.FormatIEC(float64(r.Receiver.BufferBytes)), units.FormatIEC(r.Receiver.WindowBytes), units.FormatRate(r.Receiver.CeilingBps))
	case "sender":
		return fmt.Sprintf("model: the sender's %s (%s) allows %s in flight: %s per flow",
			r.Sender.Source, units.FormatIEC(float64(r.Sender.BufferBytes)), units.FormatIEC(r.Sender.WindowBytes), units.FormatRate(r.Sender.CeilingBps))
	}
	return fmt.Sprintf("model: buffers cover the BDP (%s); the path's %s is the limit", units.FormatIEC(float64(r.BDPBytes)), units.FormatRate(r.RateBps))
}
