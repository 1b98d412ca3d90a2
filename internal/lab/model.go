package lab

import (
	"fmt"
	"strconv"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// Settings are the values in effect during a run, read back per end
// ("client", "server"), as stored in results.Run.Settings.
type Settings map[string]map[string]string

func (st Settings) triple(end, key string) pathmodel.Triple {
	t, err := parseTriple(st[end][key])
	if err != nil {
		return pathmodel.Triple{}
	}
	return t
}

func (st Settings) int(end, key string) int64 {
	n, _ := strconv.ParseInt(st[end][key], 10, 64)
	return n
}

// Model is the path model's prediction for a case, computed from the
// settings actually in effect (read back from the kernel) and, for sizes
// the peers add (HTTP headers), from the measured metrics. It returns
// the predictions under the metric names the runs use, and notes that
// explain them. It is pure.
func Model(s *Scenario, c Case, st Settings, measured map[string]float64) (map[string]float64, []string, error) {
	in := pathmodel.Input{RTT: s.RTT, RateBps: s.GoodputBps(), Kernel: s.Facts.Kernel,
		CoreRmemMax: st.int("client", "net.core.rmem_max"), CoreWmemMax: st.int("server", "net.core.wmem_max")}
	out := map[string]float64{}
	var notes []string
	switch c.Kind {
	case KindDownload, KindIperf:
		in.Rmem, in.Wmem = st.triple("client", "net.ipv4.tcp_rmem"), st.triple("server", "net.ipv4.tcp_wmem")
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
		in.Rmem, in.Wmem = st.triple("client", "net.ipv4.tcp_rmem"), st.triple("server", "net.ipv4.tcp_wmem")
		in.InitCwnd = int(st.int("server", "route.initcwnd"))
		in.InitRwnd = int(st.int("client", "route.initrwnd"))
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
		// The client sends: the server is the receiver.
		in.Rmem, in.Wmem = st.triple("server", "net.ipv4.tcp_rmem"), st.triple("client", "net.ipv4.tcp_wmem")
		in.CoreRmemMax, in.CoreWmemMax = st.int("server", "net.core.rmem_max"), st.int("client", "net.core.wmem_max")
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
		return nil, nil, fmt.Errorf("lab: case %s: unknown kind %q", c.ID, c.Kind)
	}
	return out, notes, nil
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
