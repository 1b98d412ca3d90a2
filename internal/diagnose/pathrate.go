package diagnose

import "github.com/longhaul/longhaul/internal/pathmodel"

// PathRateShare is the share of the path's rate a flow must carry to
// have run at the path's rate: one threshold for every producer (test's
// directions, a capture, a live socket, a URL download). Such a flow was
// held by nothing on either host and by nothing the path did wrong: its
// losses were the bottleneck's queue overflowing as the flow filled it
// (measured: cubic at 1 Gbit/s x 200 ms lost 0.5% in slow start's
// overshoot and ran at 941-993 Mbit/s over the judged half), and a
// window that stopped it only kept that queue from growing. 10% below
// leaves room for a measured rate's own noise (a capacity phase's
// streams against one flow, a second's samples) without calling a flow
// held back by a tenth of the path free.
const PathRateShare = 0.9

// AtPathRate: a flow that carried bps ran at the path's rate, pathBps
// being what the path carries as TCP payload (a measured rate, or
// pathmodel.Goodput of a link's rate the user gave: WireAtPathRate). An
// unknown rate (0) is never reached.
func AtPathRate(bps, pathBps float64) bool {
	return pathBps > 0 && bps >= PathRateShare*pathBps
}

// WireAtPathRate is AtPathRate against a link's wire rate (--rate): TCP
// carries pathmodel.Goodput of it as payload (94% at a 1500-byte MTU).
func WireAtPathRate(bps, wireBps float64) bool {
	return AtPathRate(bps, pathmodel.Goodput(wireBps))
}
