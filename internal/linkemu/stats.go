package linkemu

import (
	"encoding/json"
	"github.com/longhaul/longhaul/internal/units"
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
	DropsQueue, DropsLoss, DropsPolicer, DropsOverload int64
	// Reordered counts packets held back by Config.Reorder.
	Reordered int64
	// CrossBytes is the competing traffic's wire bytes that entered the
	// bottleneck, CrossDrops its packets the full queue dropped.
	CrossBytes, CrossDrops int64
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
	// Behind is the time the link spent more than MaxLateness behind
	// (the deliveries OverMax counts, as spans of time: one stall of the
	// machine makes every frame due in it late, however many they are).
	Behind time.Duration
	// Overloaded is true when the emulator itself fell behind (overload
	// drops or any OverMax delivery): the run is invalid.
	Overloaded bool
}

// StatsJSON is Stats as JSON carries it: snake_case names, durations in
// seconds.
type StatsJSON struct {
	Packets          int64         `json:"packets"`
	Segments         int64         `json:"segments"`
	Bytes            int64         `json:"bytes"`
	DropsQueue       int64         `json:"drops_queue"`
	DropsLoss        int64         `json:"drops_loss"`
	DropsPolicer     int64         `json:"drops_policer"`
	Reordered        int64         `json:"reordered"`
	CrossBytes       int64         `json:"cross_bytes"`
	CrossDrops       int64         `json:"cross_drops"`
	DropsOverload    int64         `json:"drops_overload"`
	QueuePeakBytes   int64         `json:"queue_peak_bytes"`
	QueuePeakPackets int           `json:"queue_peak_packets"`
	Delivered        int64         `json:"delivered"`
	LatenessP50      units.Seconds `json:"lateness_p50_s"`
	LatenessP99      units.Seconds `json:"lateness_p99_s"`
	LatenessMax      units.Seconds `json:"lateness_max_s"`
	LateOverMax      int64         `json:"late_over_max"`
	WaitP50          units.Seconds `json:"wait_p50_s"`
	WaitP99          units.Seconds `json:"wait_p99_s"`
	WaitMax          units.Seconds `json:"wait_max_s"`
	SlipOverMax      int64         `json:"slip_over_max"`
	OverMax          int64         `json:"over_max"`
	Behind           units.Seconds `json:"behind_s"`
	Overloaded       bool          `json:"overloaded"`
}

// JSON is s in its JSON form.
func (s Stats) JSON() StatsJSON {
	return StatsJSON{
		Packets: s.Packets, Segments: s.Segments, Bytes: s.Bytes,
		DropsQueue: s.DropsQueue, DropsLoss: s.DropsLoss, DropsPolicer: s.DropsPolicer, DropsOverload: s.DropsOverload, Reordered: s.Reordered, CrossBytes: s.CrossBytes, CrossDrops: s.CrossDrops,
		QueuePeakBytes: s.QueuePeakBytes, QueuePeakPackets: s.QueuePeakPackets, Delivered: s.Delivered,
		LatenessP50: units.Seconds(s.LatenessP50), LatenessP99: units.Seconds(s.LatenessP99), LatenessMax: units.Seconds(s.LatenessMax),
		LateOverMax: s.LateOverMax,
		WaitP50:     units.Seconds(s.WaitP50), WaitP99: units.Seconds(s.WaitP99), WaitMax: units.Seconds(s.WaitMax),
		SlipOverMax: s.SlipOverMax, OverMax: s.OverMax, Behind: units.Seconds(s.Behind), Overloaded: s.Overloaded,
	}
}

// MarshalJSON encodes s with snake_case names and durations in seconds.
func (s Stats) MarshalJSON() ([]byte, error) { return json.Marshal(s.JSON()) }

// UnmarshalJSON decodes what MarshalJSON encodes (durations rounded to the
// nanosecond).
func (s *Stats) UnmarshalJSON(b []byte) error {
	var j StatsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Stats{
		Packets: j.Packets, Segments: j.Segments, Bytes: j.Bytes,
		DropsQueue: j.DropsQueue, DropsLoss: j.DropsLoss, DropsPolicer: j.DropsPolicer, DropsOverload: j.DropsOverload, Reordered: j.Reordered, CrossBytes: j.CrossBytes, CrossDrops: j.CrossDrops,
		QueuePeakBytes: j.QueuePeakBytes, QueuePeakPackets: j.QueuePeakPackets, Delivered: j.Delivered,
		LatenessP50: time.Duration(j.LatenessP50), LatenessP99: time.Duration(j.LatenessP99), LatenessMax: time.Duration(j.LatenessMax),
		LateOverMax: j.LateOverMax,
		WaitP50:     time.Duration(j.WaitP50), WaitP99: time.Duration(j.WaitP99), WaitMax: time.Duration(j.WaitMax),
		SlipOverMax: j.SlipOverMax, OverMax: j.OverMax, Behind: time.Duration(j.Behind), Overloaded: j.Overloaded,
	}
	return nil
}
