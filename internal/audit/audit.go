// Package audit judges a host snapshot: pure checks that turn what a host
// allows into findings, each with what was observed, what was expected,
// why it matters (with the path model's numbers) and the exact fix.
//
// Findings are data; an audit never fails because a setting is bad. With a
// path (RTT, rate, flows) the buffer checks say what that path needs;
// without one they say what the host allows at common RTTs.
package audit

import (
	"sort"
	"time"

	"github.com/longhaul/longhaul/internal/snapshot"
)

// Severity orders findings: crit limits transfers badly or breaks
// something, warn costs performance on long paths, info is context.
type Severity string

const (
	Info Severity = "info"
	Warn Severity = "warn"
	Crit Severity = "crit"
)

func (s Severity) rank() int {
	switch s {
	case Crit:
		return 0
	case Warn:
		return 1
	}
	return 2
}

// Finding is one verdict about the host.
type Finding struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	// Key is the sysctl, route or file the finding is about, if one.
	Key      string `json:"key,omitempty"`
	Observed string `json:"observed"`
	Expected string `json:"expected"`
	Why      string `json:"why"`
	Fix      string `json:"fix"`
}

// Path is what the host's settings are judged against; zero RTT or rate
// means no path was given.
type Path struct {
	RTT     time.Duration
	RateBps float64
	Flows   int
}

func (p Path) given() bool { return p.RTT > 0 && p.RateBps > 0 }

func (p Path) flows() int { return max(p.Flows, 1) }

// Check is one pure check.
type Check func(s *snapshot.Snapshot, p Path) []Finding

// Checks lists every check, in the order their findings are reported
// within one severity.
var Checks = []Check{
	checkRmem,
	checkWmem,
	checkAutotuning,
	checkCoreMax,
	checkTCPMem,
	checkOptions,
	checkSlowStartAfterIdle,
	checkCongestionControl,
	checkMetrics,
	checkInitialWindows,
	checkLink,
	checkConflicts,
	checkUnknownKeys,
	checkDaemons,
}

// Run applies every check and sorts findings by severity, stable within
// one severity.
func Run(s *snapshot.Snapshot, p Path) []Finding {
	var out []Finding
	for _, c := range Checks {
		out = append(out, c(s, p)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Severity.rank() < out[j].Severity.rank() })
	return out
}

// Summary counts findings by severity, every severity present (the
// audit document's "summary").
func Summary(findings []Finding) map[string]int {
	out := map[string]int{string(Crit): 0, string(Warn): 0, string(Info): 0}
	for _, f := range findings {
		out[string(f.Severity)]++
	}
	return out
}

// AtLeast counts the findings at or above severity s.
func AtLeast(findings []Finding, s Severity) int {
	n := 0
	for _, f := range findings {
		if f.Severity.rank() <= s.rank() {
			n++
		}
	}
	return n
}
