package linkemu

import (
	"encoding/json"
	"math"
	"time"
)

// Stats are the counters of one Link. Drops are in segments.
//
// In JSON (MarshalJSON/UnmarshalJSON) fields are snake_case and durations
// are float64 seconds with an "_s" suffix, e.g. "lateness_p99_s": 0.0012.
type Stats struct {
	// Packets, Segments and Bytes count what was accepted (Packets counts
	// packets with at least one surviving segment; Bytes are wire bytes,
	// overhead included).
	Packets, Segments, Bytes int64
	// Dropped segments by cause.
	DropsQueue, DropsLoss, DropsOverload int64
	// Peak bottleneck queue occupancy, in wire bytes and in segments.
	QueuePeakBytes   int64
	QueuePeakPackets int
	// Delivered counts Link.Delivered reports; the lateness fields summarize
	// them (p50/p99 from a histogram: exact to the µs below ~1 ms, within
	// 0.2% above, rounded up; max exact).
	Delivered                             int64
	LatenessP50, LatenessP99, LatenessMax time.Duration
	// LateOverMax counts deliveries later than Config.MaxLateness.
	LateOverMax int64
	// WaitP50, WaitP99 and WaitMax summarize the part of the lateness
	// spent waiting behind the data plane's own earlier writes (see
	// Link.Delivered); SlipOverMax counts deliveries whose lateness less
	// that wait exceeds MaxLateness.
	WaitP50, WaitP99, WaitMax time.Duration
	SlipOverMax               int64
	// OverMax is what the validity rule counts: LateOverMax on a
	// rate-limited link, SlipOverMax on an unlimited one.
	OverMax int64
	// Overloaded is true when the emulator itself fell behind (overload
	// drops or any OverMax delivery): the run is invalid.
	Overloaded bool
}

type statsJSON struct {
	Packets          int64   `json:"packets"`
	Segments         int64   `json:"segments"`
	Bytes            int64   `json:"bytes"`
	DropsQueue       int64   `json:"drops_queue"`
	DropsLoss        int64   `json:"drops_loss"`
	DropsOverload    int64   `json:"drops_overload"`
	QueuePeakBytes   int64   `json:"queue_peak_bytes"`
	QueuePeakPackets int     `json:"queue_peak_packets"`
	Delivered        int64   `json:"delivered"`
	LatenessP50      float64 `json:"lateness_p50_s"`
	LatenessP99      float64 `json:"lateness_p99_s"`
	LatenessMax      float64 `json:"lateness_max_s"`
	LateOverMax      int64   `json:"late_over_max"`
	WaitP50          float64 `json:"wait_p50_s"`
	WaitP99          float64 `json:"wait_p99_s"`
	WaitMax          float64 `json:"wait_max_s"`
	SlipOverMax      int64   `json:"slip_over_max"`
	OverMax          int64   `json:"over_max"`
	Overloaded       bool    `json:"overloaded"`
}

// MarshalJSON encodes s with snake_case names and durations in seconds.
func (s Stats) MarshalJSON() ([]byte, error) {
	return json.Marshal(statsJSON{
		Packets:          s.Packets,
		Segments:         s.Segments,
		Bytes:            s.Bytes,
		DropsQueue:       s.DropsQueue,
		DropsLoss:        s.DropsLoss,
		DropsOverload:    s.DropsOverload,
		QueuePeakBytes:   s.QueuePeakBytes,
		QueuePeakPackets: s.QueuePeakPackets,
		Delivered:        s.Delivered,
		LatenessP50:      s.LatenessP50.Seconds(),
		LatenessP99:      s.LatenessP99.Seconds(),
		LatenessMax:      s.LatenessMax.Seconds(),
		LateOverMax:      s.LateOverMax,
		WaitP50:          s.WaitP50.Seconds(),
		WaitP99:          s.WaitP99.Seconds(),
		WaitMax:          s.WaitMax.Seconds(),
		SlipOverMax:      s.SlipOverMax,
		OverMax:          s.OverMax,
		Overloaded:       s.Overloaded,
	})
}

// UnmarshalJSON decodes what MarshalJSON encodes (durations rounded to the
// nanosecond).
func (s *Stats) UnmarshalJSON(b []byte) error {
	var j statsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Stats{
		Packets:          j.Packets,
		Segments:         j.Segments,
		Bytes:            j.Bytes,
		DropsQueue:       j.DropsQueue,
		DropsLoss:        j.DropsLoss,
		DropsOverload:    j.DropsOverload,
		QueuePeakBytes:   j.QueuePeakBytes,
		QueuePeakPackets: j.QueuePeakPackets,
		Delivered:        j.Delivered,
		LatenessP50:      seconds(j.LatenessP50),
		LatenessP99:      seconds(j.LatenessP99),
		LatenessMax:      seconds(j.LatenessMax),
		LateOverMax:      j.LateOverMax,
		WaitP50:          seconds(j.WaitP50),
		WaitP99:          seconds(j.WaitP99),
		WaitMax:          seconds(j.WaitMax),
		SlipOverMax:      j.SlipOverMax,
		OverMax:          j.OverMax,
		Overloaded:       j.Overloaded,
	}
	return nil
}

func seconds(f float64) time.Duration {
	return time.Duration(math.Round(f * float64(time.Second)))
}
