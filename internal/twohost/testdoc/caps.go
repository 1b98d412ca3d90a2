package testdoc

import (
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// Caps are the server's limits per test: sent in the wire's accepted
// message and kept in the document as server_caps.
type Caps struct {
	MaxDurationS float64 `json:"max_duration_s"`
	MaxBytes     int64   `json:"max_bytes"`
	MaxRateBps   float64 `json:"max_rate_bps,omitempty"` // 0: none
	MaxStreams   int     `json:"max_streams"`
	// UDP: the server answers datagram runs (PhaseUDP) on its port
	// number; servers that predate them omit it.
	UDP bool `json:"udp,omitempty"`
}

// Text is the caps as a person reads them, for serve's start line and
// the client's progress: "2 min, 16 GiB and 16 streams per test" (the
// wire and --log-json keep plain numbers).
func (c Caps) Text() string {
	t := units.FormatDuration(time.Duration(c.MaxDurationS*float64(time.Second))) + ", " + units.FormatIEC(float64(c.MaxBytes))
	if c.MaxRateBps > 0 {
		t += ", " + units.FormatRate(c.MaxRateBps)
	}
	return fmt.Sprintf("%s and %d stream(s) per test", t, c.MaxStreams)
}

// CPUUse is a process's CPU over a phase: seconds its threads ran and
// seconds they waited, runnable, for a CPU (cpuuse). The server sends
// its own in the wire's phase-done message.
type CPUUse struct {
	RunS  float64 `json:"run_s"`
	WaitS float64 `json:"wait_s"`
}
