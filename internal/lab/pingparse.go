package lab

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// pingResult is what iputils ping printed: each reply's RTT and its
// summary.
type pingResult struct {
	Sent, Received int
	// RTTs are the per-reply times, printed rounded to three significant
	// digits (1 ms at >= 100 ms); Min, Avg and Max come from the summary
	// line, exact to the microsecond.
	RTTs          []time.Duration
	Min, Avg, Max time.Duration
}

var (
	pingReply   = regexp.MustCompile(`time=([0-9.]+) ms`)
	pingCounts  = regexp.MustCompile(`(\d+) packets transmitted, (\d+) (?:packets )?received`)
	pingSummary = regexp.MustCompile(`= ([0-9.]+)/([0-9.]+)/([0-9.]+)/([0-9.]+) ms`)
)

// parsePing reads iputils ping's output.
func parsePing(out string) (pingResult, error) {
	var r pingResult
	for _, m := range pingReply.FindAllStringSubmatch(out, -1) {
		r.RTTs = append(r.RTTs, msDuration(m[1]))
	}
	m := pingCounts.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("ping printed no summary: %q", finalLine(out))
	}
	r.Sent, _ = strconv.Atoi(m[1])
	r.Received, _ = strconv.Atoi(m[2])
	if r.Received == 0 {
		return r, fmt.Errorf("no reply to %d pings", r.Sent)
	}
	s := pingSummary.FindStringSubmatch(out)
	if s == nil {
		return r, fmt.Errorf("ping printed no rtt summary: %q", finalLine(out))
	}
	r.Min, r.Avg, r.Max = msDuration(s[1]), msDuration(s[2]), msDuration(s[3])
	return r, nil
}

// finalLine is the last non-empty line of s.
func finalLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func msDuration(s string) time.Duration {
	v, _ := strconv.ParseFloat(s, 64)
	return time.Duration(math.Round(v * 1e6))
}

// errMetrics adds the RTT error against the configured RTT under
// prefix: mean, min and max from the exact summary, p99 by nearest rank
// from the replies (the exact maximum when that rank is the largest,
// as with 100 replies or fewer).
func (r pingResult) errMetrics(m map[string]float64, prefix string, rtt time.Duration) {
	m[prefix+"err_mean_s"] = (r.Avg - rtt).Seconds()
	m[prefix+"err_min_s"] = (r.Min - rtt).Seconds()
	m[prefix+"err_max_s"] = (r.Max - rtt).Seconds()
	m[prefix+"replies"] = float64(r.Received)
	m[prefix+"sent"] = float64(r.Sent)
	if n := len(r.RTTs); n > 0 {
		sorted := slices.Sorted(slices.Values(r.RTTs))
		k := max(0, min(n-1, int(math.Ceil(0.99*float64(n)))-1))
		p99 := sorted[k]
		if k == n-1 {
			p99 = r.Max
		}
		m[prefix+"err_p99_s"] = (p99 - rtt).Seconds()
	}
}
