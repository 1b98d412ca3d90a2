package judge

import (
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// sndbufModel is a direction's evidence for diagnose.SndbufHidden: its
// flow's flight and RTT against what the path model says the sender's
// tcp_wmem holds.
func sndbufModel(dir testdoc.Direction) diagnose.SndbufModel {
	f, m := dir.Flow, dir.Model
	return diagnose.SndbufModel{Known: f.SndbufBytes > 0, Inflight: f.InflightBytes, ModelFlight: m.SenderInFlightBytes,
		SenderLimits: m.LimitedBy == "sender", RTT: secsDur(f.RTT), MinRTT: secsDur(f.MinRTT), Retrans: f.Retrans,
		Sender: dir.Sender, Scope: "the steady half"}
}

func secsDur(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
