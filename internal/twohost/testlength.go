package twohost

import (
	"math"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// The parts of a test's length beyond its phases' transfers, as the
// client spends them (client.go): its set-up (both ends' snapshots, the
// control connection's handshake: connect, hello, auth, start) and
// RTTProbes pings one at a time, pingGap apart; each phase's request,
// its streams' handshakes and its end. They are the client's own budget
// (phaseExtra) plus the round trips a long path adds to it: on the safe
// side. Measured on an emulated 170 ms, 100 Mbit/s path: 26.6 s for 3
// phases of 40 round trips (TestLength 30.3 s), 12.6 s for 3 phases of
// 2 s (15.9 s), 9.0 s for 2 (11.9 s).
const (
	// MinPhase is the shortest phase a client asks for, and
	// DeadlineSlack what it keeps of its deadline for the goodbye and
	// the judging after the last phase (phaseplan.go).
	MinPhase          = 2 * time.Second
	DeadlineSlack     = 500 * time.Millisecond
	RTTProbes         = 10
	pingGap           = 50 * time.Millisecond
	setupFixed        = time.Second
	setupRoundTrips   = 4
	PhaseOverhead     = 1500 * time.Millisecond
	phaseRoundTrips   = 3
	maxTestLengthDays = 1
)

// TestLength is about how long a test of phases phases of length phase
// takes on a path of round trip rtt, handshakes to bye: what a client
// announces in Start.PlannedS and what `longhaul mesh-cost` counts per
// probe.
func TestLength(phases int, phase, rtt time.Duration) time.Duration {
	rtt = max(rtt, 0)
	setup := setupFixed + setupRoundTrips*rtt + RTTProbes*(rtt+pingGap)
	per := phase + PhaseOverhead + phaseRoundTrips*rtt
	d := setup + time.Duration(max(phases, 0))*per
	return min(d, maxTestLengthDays*24*time.Hour)
}

// PlannedSeconds is TestLength as Start.PlannedS carries it: seconds,
// rounded up to a tenth, within 0..MaxPlannedS.
func PlannedSeconds(d time.Duration) float64 {
	return min(math.Ceil(max(d.Seconds(), 0)*10)/10, wire.MaxPlannedS)
}
