package scenario

import (
	"fmt"
	"math"
	"time"

	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/units"
)

// Headlines are the scenario's conclusions in sentences, computed from
// the summaries (medians over valid runs): what the seed claimed, as
// measured here. It is pure.
func Headlines(h results.Header, sums []results.Summary) []string {
	hs := headlineSums{h: h, rtt: units.FromSeconds(h.Path.RTTSeconds), sums: sums, by: map[string]results.Summary{}}
	for _, sm := range sums {
		hs.by[sm.Case] = sm
	}
	switch h.Scenario {
	case "buffers":
		return hs.buffers()
	case "initcwnd":
		return hs.initcwnd()
	case "upload":
		return hs.upload()
	case "verify":
		return hs.verify()
	case "longrtt":
		return hs.longrtt()
	case "emulator":
		return hs.emulator()
	}
	return nil
}

// headlineSums are the summaries a headline is computed from.
type headlineSums struct {
	h    results.Header
	rtt  time.Duration
	sums []results.Summary
	by   map[string]results.Summary
}

// med is the median of a case's metric over its valid runs.
func (hs headlineSums) med(id, metric string) (float64, bool) {
	sm, ok := hs.by[id]
	if !ok || sm.N == 0 {
		return 0, false
	}
	v, ok := sm.Median[metric]
	return v, ok && !math.IsNaN(v)
}

func (hs headlineSums) buffers() []string {
	var out []string
	good := hs.h.Path.GoodputBps
	plan, okP := hs.med("plan", "throughput_bps")
	old, okO := hs.med("old-ubuntu", "throughput_bps")
	if okP {
		l := fmt.Sprintf("longhaul's plan: %s, %.0f%% of the path's goodput (%s)", units.FormatRate(plan), 100*plan/good, units.FormatRate(good))
		if okO && old > 0 {
			l += fmt.Sprintf(", %.1fx the old Ubuntu defaults (%s)", plan/old, units.FormatRate(old))
		}
		out = append(out, l+".")
	}
	worst, worstCase, n := 0.0, "", 0
	for _, sm := range hs.sums {
		v, ok := sm.Median["throughput_bps"]
		if sm.N == 0 || !ok || sm.Model["window_bound"] != 1 || sm.Model["throughput_bps"] <= 0 {
			continue
		}
		n++
		if e := math.Abs(v/sm.Model["throughput_bps"] - 1); e > worst {
			worst, worstCase = e, sm.Label
		}
	}
	if n > 0 {
		out = append(out, fmt.Sprintf("Where the window binds (%d cases), measured throughput is within %.0f%% of the model's ceiling (worst: %s).", n, 100*worst, worstCase))
	}
	return out
}

func (hs headlineSums) initcwnd() []string {
	base, ok1 := hs.med("default-17 kB", "rounds")
	fixed, ok2 := hs.med("iw20-irw20-17 kB", "rounds")
	if !ok1 || !ok2 {
		return nil
	}
	return []string{fmt.Sprintf("17 kB at %s: %.1f round trips with the default initcwnd, %.1f with initcwnd 20 + initrwnd 20 (model: %.0f and %.0f).",
		units.FormatDuration(hs.rtt), base, fixed, hs.by["default-17 kB"].Model["rounds"], hs.by["iw20-irw20-17 kB"].Model["rounds"])}
}

func (hs headlineSums) upload() []string {
	small, ok1 := hs.med("rcvbuf-small", "upload_s")
	def, ok2 := hs.med("default", "upload_s")
	if !ok1 {
		return nil
	}
	l := fmt.Sprintf("With nginx rcvbuf=2920 the upload takes %s", dur(small))
	if w, ok := hs.med("rcvbuf-small", "window_bytes"); ok {
		l += fmt.Sprintf(" (the server advertised %s: %s at %s, so %s by window/RTT)", units.FormatBytes(w),
			units.FormatByteRate(w/hs.rtt.Seconds()), units.FormatDuration(hs.rtt), dur(float64(hs.by["rcvbuf-small"].Median["bytes"])/w*hs.rtt.Seconds()))
	}
	if ok2 && def > 0 {
		l += fmt.Sprintf("; without it %s, %.0fx faster", dur(def), small/def)
	}
	return []string{l + "."}
}

func (hs headlineSums) verify() []string {
	base, ok1 := hs.med("baseline", "throughput_bps")
	plan, ok2 := hs.med("plan", "throughput_bps")
	if !ok1 || !ok2 || base <= 0 {
		return nil
	}
	l := fmt.Sprintf("The plan: %s against %s with %s: %.1fx", units.FormatRate(plan), units.FormatRate(base), hs.by["baseline"].Label, plan/base)
	if mb, mp := hs.by["baseline"].Model["throughput_bps"], hs.by["plan"].Model["throughput_bps"]; mb > 0 && mp > 0 {
		l += fmt.Sprintf(" (the model predicted %.1fx: %s against %s)", mp/mb, units.FormatRate(mp), units.FormatRate(mb))
	}
	return []string{l + fmt.Sprintf("; %.0f%% of the path's goodput.", 100*plan/hs.h.Path.GoodputBps)}
}

func (hs headlineSums) longrtt() []string {
	best, bestCase := 0.0, ""
	for _, sm := range hs.sums {
		if v, ok := sm.Median["throughput_bps"]; ok && sm.N > 0 && v > best {
			best, bestCase = v, sm.Label
		}
	}
	if bestCase == "" {
		return nil
	}
	return []string{fmt.Sprintf("Best: %s with %s (path goodput %s).", units.FormatRate(best), bestCase, units.FormatRate(hs.h.Path.GoodputBps))}
}

func dur(sec float64) string { return units.FormatDuration(units.FromSeconds(sec)) }
