package lab

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/scenario"
	"github.com/longhaul/longhaul/internal/tcpflow"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// judged is the part of a verdict the matrix reads: the cause named,
// else what the tool saw the path do wrong without it limiting the flow
// (analyze's and flows' seen: reordering tolerated), which names the
// path's failure as test's reordering note does, else the flags that
// stand for one (a capture or a socket flags a queue's delay as
// bufferbloat, a connection without window scaling as
// no-window-scaling). A seen failure comes before a flag: it is named
// with its numbers and fix, a flag is a symptom (the bufferbloat flag's
// round trip doubled at its 90th percentile also where a full one-BDP
// queue held late segments: the lab's reordering path, 50 ms, 1 run in
// 10 of analyze).
type judged struct {
	Cause *diagnose.Cause
	Flags []string
	Seen  []diagnose.Cause
}

func (j judged) named() string {
	switch {
	case j.Cause != nil && j.Cause.Name != "":
		return j.Cause.Name
	case len(j.Seen) > 0 && j.Seen[0].Name != "":
		return j.Seen[0].Name
	case slices.Contains(j.Flags, diagnose.FlagBufferbloat):
		return diagnose.FlagBufferbloat
	case slices.Contains(j.Flags, diagnose.FlagNoWindowScaling):
		return diagnose.FlagNoWindowScaling
	}
	return scenario.NoCause
}

// testNamed reads `longhaul test --json` (longhaul.test/v1): the cause
// its download direction names (or, naming none, what it saw the path do
// wrong without it holding the flow: reordering tolerated, at the
// path's rate), else the first the whole test names (a
// PMTU black hole is the path's, found before any direction ran), the
// single stream's rate, the path's rate it reports and the server's port.
func testNamed(doc []byte) (named string, single, pathRate float64, port string, ok bool) {
	var d testdoc.Doc
	if json.Unmarshal(doc, &d) != nil {
		return "", 0, 0, "", false
	}
	if i := strings.LastIndexByte(d.Server, ':'); i >= 0 {
		port = d.Server[i+1:]
	}
	for _, dir := range d.Directions {
		if dir.Name != "download" {
			continue
		}
		named = judged{Cause: dir.Cause, Seen: dir.Seen, Flags: dir.Flow.Flags}.named()
		if named == scenario.NoCause && len(d.Causes) > 0 && d.Causes[0].Name != "" {
			named = d.Causes[0].Name
		}
		return named, dir.ThroughputBps, d.PathRateBps, port, true
	}
	return "", 0, 0, port, false
}

// analyzeNamed reads `longhaul analyze --json`: the cause named for the
// single-stream download, the first flow (in the capture's order) whose
// server, on port, sent 1 MB or more; the capacity phase's streams and
// the probes come after it. When it names none, a PMTU black hole named
// on any of the server's connections is the run's (the connection that
// stalled on it is not the download, which test ran with small segments),
// else scenario.AtLinkRate when the download carried at least 90% of
// linkGoodput (bit/s; 0 unknown) over the capture, slow start included.
func analyzeNamed(doc []byte, port string, linkGoodput float64) (string, bool) {
	var d tcpflow.Doc
	if json.Unmarshal(doc, &d) != nil || d.Analysis == nil {
		return "", false
	}
	named, found, hole, bps := "", false, false, 0.0
	for _, f := range d.Flows {
		if f == nil {
			continue
		}
		for _, dir := range f.Directions {
			if !strings.HasSuffix(dir.Sender, ":"+port) {
				continue
			}
			j := judged{Cause: dir.Cause, Flags: dir.Flags, Seen: dir.Seen}
			if !found && dir.Bytes >= 1<<20 {
				named, found, bps = j.named(), true, dir.ThroughputBps
			}
			hole = hole || j.named() == diagnose.CausePMTUBlackHole
		}
	}
	switch {
	case !found || named != scenario.NoCause: // as read
	case hole:
		named = diagnose.CausePMTUBlackHole
	case linkGoodput > 0 && bps >= 0.9*linkGoodput:
		named = scenario.AtLinkRate
	}
	return named, found
}

// flowsNamed reads `longhaul flows --json`: the cause named for the
// busiest socket sending from the server's port (test's download, as
// analyzeNamed reads it: the server's namespace also holds the sender of
// a competing download, busier than the one it competes with), or
// scenario.AtLinkRate for none where that socket carried at least 90% of
// linkGoodput (bit/s; 0 unknown) over flows' window.
func flowsNamed(doc []byte, port string, linkGoodput float64) (string, bool) {
	var d flows.Doc
	if json.Unmarshal(doc, &d) != nil {
		return "", false
	}
	best, found := -1, false
	for i, f := range d.Flows {
		if f.Direction == "send" && strings.HasSuffix(f.Local, ":"+port) && (!found || f.BytesSent > d.Flows[best].BytesSent) {
			best, found = i, true
		}
	}
	if !found {
		return "", false
	}
	f := d.Flows[best]
	if n := flowJudged(f).named(); n != scenario.NoCause || linkGoodput <= 0 || f.ThroughputBps < 0.9*linkGoodput {
		return n, true
	}
	return scenario.AtLinkRate, true
}

// flowsBlackHole: a flows document names a PMTU black hole on any socket
// (one stuck on it moved nothing, so it is not the busiest).
func flowsBlackHole(doc []byte) bool {
	var d flows.Doc
	if json.Unmarshal(doc, &d) != nil {
		return false
	}
	for _, f := range d.Flows {
		if flowJudged(f).named() == diagnose.CausePMTUBlackHole {
			return true
		}
	}
	return false
}

// flowJudged is the part of a socket's verdict the matrix reads.
func flowJudged(f flows.Flow) judged { return judged{Cause: f.Cause, Flags: f.Flags, Seen: f.Seen} }
