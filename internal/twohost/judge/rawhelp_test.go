package judge

import (
	"time"

	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/judge/judgetest"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Raw measurements for tests (judgetest's samples and snapshots), as a
// test's two ends would record them.

type stream = judgetest.Stream

var host = judgetest.Host

func rawWith(client, server *snapshot.Snapshot, phases ...PhaseRaw) *Raw {
	return &Raw{Server: "198.18.0.2:9978", Started: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), Client: client, ServerSnap: server,
		Caps: testdoc.Caps{MaxDurationS: 120, MaxBytes: 1 << 34, MaxStreams: 16}, IdleRTTs: []time.Duration{50 * time.Millisecond}, PhaseLength: 4 * time.Second, Phases: phases}
}

func phaseOf(name string, streams ...stream) PhaseRaw {
	p := PhaseRaw{Grant: wire.Grant{Phase: 1, Name: name, Streams: len(streams), DurationS: 4}, Done: wire.PhaseDone{Phase: 1, Reason: "duration"}}
	for _, s := range streams {
		ss := s.Samples(4)
		if name == wire.PhaseUpload {
			p.Client = append(p.Client, ss...)
		} else {
			p.Server = append(p.Server, ss...)
		}
	}
	return p
}
