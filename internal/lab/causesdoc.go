package lab

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/scenario"
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
	Cause *causeName  `json:"cause"`
	Flags []string    `json:"flags"`
	Seen  []causeName `json:"seen"`
}

type causeName struct {
	Name string `json:"name"`
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
	var d struct {
		Server   string  `json:"server"`
		PathRate float64 `json:"path_rate_bps"`
		Causes   []struct {
			Name string `json:"name"`
		} `json:"causes"`
		Directions []struct {
			Name       string      `json:"name"`
			Throughput float64     `json:"throughput_bps"`
			Cause      *causeName  `json:"cause"`
			Seen       []causeName `json:"seen"`
			Flow       *judged     `json:"flow"`
		} `json:"directions"`
	}
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
		j := judged{Cause: dir.Cause, Seen: dir.Seen}
		if dir.Flow != nil {
			j.Flags = dir.Flow.Flags
		}
		named = j.named()
		if named == scenario.NoCause && len(d.Causes) > 0 && d.Causes[0].Name != "" {
			named = d.Causes[0].Name
		}
		return named, dir.Throughput, d.PathRate, port, true
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
	var d struct {
		Flows []struct {
			Directions []struct {
				judged
				Sender string  `json:"sender"`
				Bytes  int64   `json:"bytes"`
				Bps    float64 `json:"throughput_bps"`
			} `json:"directions"`
		} `json:"flows"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return "", false
	}
	named, found, hole, bps := "", false, false, 0.0
	for _, f := range d.Flows {
		for _, dir := range f.Directions {
			if !strings.HasSuffix(dir.Sender, ":"+port) {
				continue
			}
			if !found && dir.Bytes >= 1<<20 {
				named, found, bps = dir.named(), true, dir.Bps
			}
			hole = hole || dir.named() == diagnose.CausePMTUBlackHole
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
	var d struct {
		Flows []struct {
			judged
			Local     string  `json:"local"`
			Direction string  `json:"direction"`
			BytesSent int64   `json:"bytes_sent"`
			Bps       float64 `json:"throughput_bps"`
		} `json:"flows"`
	}
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
	if n := f.named(); n != scenario.NoCause || linkGoodput <= 0 || f.Bps < 0.9*linkGoodput {
		return n, true
	}
	return scenario.AtLinkRate, true
}

// flowsBlackHole: a flows document names a PMTU black hole on any socket
// (one stuck on it moved nothing, so it is not the busiest).
func flowsBlackHole(doc []byte) bool {
	var d struct {
		Flows []judged `json:"flows"`
	}
	if json.Unmarshal(doc, &d) != nil {
		return false
	}
	for _, f := range d.Flows {
		if f.named() == diagnose.CausePMTUBlackHole {
			return true
		}
	}
	return false
}
