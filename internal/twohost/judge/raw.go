package judge

import (
	"time"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Raw is what a test measured, before judging.
type Raw struct {
	Server      string
	Started     time.Time
	Client      *snapshot.Snapshot
	ServerSnap  *snapshot.Snapshot
	Caps        testdoc.Caps
	IdleRTTs    []time.Duration
	PhaseLength time.Duration
	Phases      []PhaseRaw
	// BlackHoleMSS is the segment size the test ran with after the
	// server's first large message never arrived at full size; 0 when
	// it did.
	BlackHoleMSS int
	// PhaseCut says why the phases are shorter than the round trips
	// asked (a prober's deadline); "" when they are not.
	PhaseCut string
}

// PhaseRaw is one phase's measurement from both ends.
type PhaseRaw struct {
	// AskedCC is the congestion control this host asked the server to
	// send with ("" none); Grant.CC says whether it did.
	AskedCC string
	// AskedPace is the rate this host asked the server to pace a loss
	// probe at (ClientOptions.LossProbes; 0 none); Grant.RateBps is what
	// the server granted.
	AskedPace   float64
	Grant       wire.Grant
	Client      []flows.Sample  // this host's data sockets
	Server      []flows.Sample  // streamed by the server
	LoadedRTTs  []time.Duration // pings over the control connection during the phase
	ClientBytes int64
	Done        wire.PhaseDone
	// ClientCPU is this process's CPU over the phase (nil not measured);
	// Done.CPU the server's.
	ClientCPU *testdoc.CPUUse
	// UDP is what a datagram run (PhaseUDP) showed; nil for the others.
	UDP *wire.UDPStats
}
