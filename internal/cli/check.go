//go:build linux && !longhaul_portable

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/units"
)

// runCheck brings the path up with buffers of 2.5 BDP in both namespaces,
// runs the emulated path's self-test and prints it.
func runCheck(ctx context.Context, a emulateArgs, l emupath.Link, stderr io.Writer) error {
	buf := emupath.CheckBuffer(l)
	dur := max(5*time.Second, 20*l.RTT())
	if a.checkTime.IsSet() {
		dur = a.checkTime.D
	}
	p, err := upPath(ctx, a, l, stderr, emupath.CheckSysctls(buf))
	if err != nil {
		return err
	}
	defer p.Close()
	res, err := emupath.Check(ctx, p, dur)
	if err != nil {
		return err
	}
	printLinkStats(stderr, res.Stats)
	v := res.Judge(l)
	printCheck(stderr, l, buf, res, v)
	if !v.OK() {
		return errors.New("emulate --check: the path does not match its configuration (see above)")
	}
	return nil
}

func printCheck(w io.Writer, l emupath.Link, buf int64, res emupath.CheckResult, v emupath.CheckVerdict) {
	verdict := func(pass bool) string {
		if !pass {
			return "FAIL"
		}
		return "ok"
	}
	rtt := l.RTT()
	fmt.Fprintf(w, "longhaul: self-test (%d UDP probes, one TCP download for %s, buffers %s)\n", len(res.RTTs), units.FormatDuration(res.Duration), units.FormatIEC(float64(buf)))
	configured := units.FormatDuration(rtt)
	if v.ExpectedRTT != rtt {
		configured += " (mean " + units.FormatDuration(v.ExpectedRTT) + " with reordering)"
	}
	fmt.Fprintf(w, "  rtt      configured %-12s measured mean %s, p99 %s (error %+.3f ms)  %s\n",
		configured, units.FormatDuration(v.MeanRTT), units.FormatDuration(v.P99RTT), float64(v.RTTError)/1e6, verdict(v.RTTOK))
	switch {
	case len(v.NotJudged) > 0:
		fmt.Fprintf(w, "  goodput  measured %s, not judged: the down direction has %s on purpose\n",
			units.FormatRate(res.Goodput), strings.Join(v.NotJudged, ", "))
	case v.CeilingBps > 0:
		fmt.Fprintf(w, "  goodput  ceiling %-15s measured %s (%.1f%%)  %s\n",
			units.FormatRate(v.CeilingBps), units.FormatRate(res.Goodput), 100*res.Goodput/v.CeilingBps, verdict(v.GoodputOK))
	default:
		fmt.Fprintf(w, "  goodput  unlimited rate: measured %s (window-bound: %s buffers at %s allow %s)\n",
			units.FormatRate(res.Goodput), units.FormatIEC(float64(buf)), units.FormatDuration(rtt),
			units.FormatRate(v.WindowBoundBps))
	}
	fmt.Fprintf(w, "  emulator %s  %s\n", overloadText(res.Stats.Overloaded), verdict(v.EmulatorOK))
}

func overloadText(o bool) string {
	if o {
		return "overloaded: it dropped or delayed frames itself"
	}
	return "not overloaded"
}
