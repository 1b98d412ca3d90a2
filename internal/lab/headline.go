package lab

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
	rtt := time.Duration(h.Path.RTTSeconds * float64(time.Second))
	by := map[string]results.Summary{}
	for _, sm := range sums {
		by[sm.Case] = sm
	}
	med := func(id, metric string) (float64, bool) {
		sm, ok := by[id]
		if !ok || sm.N == 0 {
			return 0, false
		}
		v, ok := sm.Median[metric]
		return v, ok && !math.IsNaN(v)
	}
	var out []string
	switch h.Scenario {
	case "buffers":
		good := h.Path.GoodputBps
		plan, okP := med("plan", "throughput_bps")
		old, okO := med("old-ubuntu", "throughput_bps")
		if okP {
			l := fmt.Sprintf("longhaul's plan: %s, %.0f%% of the path's goodput (%s)", units.FormatRate(plan), 100*plan/good, units.FormatRate(good))
			if okO && old > 0 {
				l += fmt.Sprintf(", %.1fx the old Ubuntu defaults (%s)", plan/old, units.FormatRate(old))
			}
			out = append(out, l+".")
		}
		worst, worstCase, n := 0.0, "", 0
		for _, sm := range sums {
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
	case "initcwnd":
		base, ok1 := med("default-17 kB", "rounds")
		fixed, ok2 := med("iw20-irw20-17 kB", "rounds")
		if ok1 && ok2 {
			out = append(out, fmt.Sprintf("17 kB at %s: %.1f round trips with the default initcwnd, %.1f with initcwnd 20 + initrwnd 20 (model: %.0f and %.0f).",
				units.FormatDuration(rtt), base, fixed, by["default-17 kB"].Model["rounds"], by["iw20-irw20-17 kB"].Model["rounds"]))
		}
	case "upload":
		small, ok1 := med("rcvbuf-small", "upload_s")
		def, ok2 := med("default", "upload_s")
		if ok1 {
			l := fmt.Sprintf("With nginx rcvbuf=2920 the upload takes %s", dur(small))
			if w, ok := med("rcvbuf-small", "window_bytes"); ok {
				l += fmt.Sprintf(" (the server advertised %s: %s at %s, so %s by window/RTT)", units.FormatBytes(w),
					units.FormatByteRate(w/rtt.Seconds()), units.FormatDuration(rtt), dur(float64(by["rcvbuf-small"].Median["bytes"])/w*rtt.Seconds()))
			}
			if ok2 && def > 0 {
				l += fmt.Sprintf("; without it %s, %.0fx faster", dur(def), small/def)
			}
			out = append(out, l+".")
		}
	case "verify":
		base, ok1 := med("baseline", "throughput_bps")
		plan, ok2 := med("plan", "throughput_bps")
		if ok1 && ok2 && base > 0 {
			l := fmt.Sprintf("The plan: %s against %s with %s: %.1fx", units.FormatRate(plan), units.FormatRate(base), by["baseline"].Label, plan/base)
			if mb, mp := by["baseline"].Model["throughput_bps"], by["plan"].Model["throughput_bps"]; mb > 0 && mp > 0 {
				l += fmt.Sprintf(" (the model predicted %.1fx: %s against %s)", mp/mb, units.FormatRate(mp), units.FormatRate(mb))
			}
			out = append(out, l+fmt.Sprintf("; %.0f%% of the path's goodput.", 100*plan/h.Path.GoodputBps))
		}
	case "longrtt":
		best, bestCase := 0.0, ""
		for _, sm := range sums {
			if v, ok := sm.Median["throughput_bps"]; ok && sm.N > 0 && v > best {
				best, bestCase = v, sm.Label
			}
		}
		if bestCase != "" {
			out = append(out, fmt.Sprintf("Best: %s with %s (path goodput %s).", units.FormatRate(best), bestCase, units.FormatRate(h.Path.GoodputBps)))
		}
	}
	return out
}

func dur(sec float64) string {
	return units.FormatDuration(time.Duration(sec * float64(time.Second)))
}
