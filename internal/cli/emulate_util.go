//go:build linux && !longhaul_portable

package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/units"
)

func printLinkStats(w io.Writer, s emu.Stats) {
	fmt.Fprintf(w, "longhaul: link statistics after %s (emulator CPU %.1f s, %.0f%% of a core)\n",
		units.FormatDuration(units.FromSeconds(s.Elapsed)), s.CPUSeconds, 100*s.CPUSeconds/max(s.Elapsed, 1e-9))
	fmt.Fprintf(w, "  %-5s %12s %10s %10s %10s %10s %10s %10s %12s %10s %10s %10s %10s\n", "dir", "bytes", "packets", "drop-q", "drop-loss", "drop-pol", "reordered", "drop-ovl", "queue-peak", "late-p50", "late-p99", "wait-p99", "behind")
	dirs := []struct {
		name string
		s    emu.DirStats
	}{{"up", s.Up}, {"down", s.Down}}
	for _, d := range dirs {
		fmt.Fprintf(w, "  %-5s %12s %10d %10d %10d %10d %10d %10d %12s %10s %10s %10s %10s\n", d.name,
			units.FormatBytes(float64(d.s.Bytes)), d.s.Packets, d.s.DropsQueue, d.s.DropsLoss, d.s.DropsPolicer, d.s.Reordered,
			d.s.DropsOverload+d.s.OverloadFrames, units.FormatBytes(float64(d.s.QueuePeakBytes)),
			units.FormatDuration(d.s.LatenessP50), units.FormatDuration(d.s.LatenessP99), units.FormatDuration(d.s.WaitP99),
			units.FormatDuration(d.s.Behind))
	}
	if s.Overloaded {
		fmt.Fprintln(w, "longhaul: WARNING: the emulator was overloaded (it dropped or delayed frames itself): results of this run are not valid")
		return
	}
	for _, d := range dirs {
		// On an unlimited link a burst leaves at the data plane's own
		// speed; say so when that wait is more than the lateness bound.
		if d.s.RateBps == 0 && d.s.WaitP99 > linkemu.DefaultMaxLateness {
			fmt.Fprintf(w, "longhaul: note: %s has no rate limit, so the emulator's writes were its bottleneck: frames waited %s (p99) behind earlier writes, adding that to the RTT; a --rate below the goodput reached emulates a clean link\n",
				d.name, units.FormatDuration(d.s.WaitP99))
		}
	}
}

// watchOverload polls the emulator's counters every interval while the
// command runs and warns on w as soon as the emulator overloads, so the
// warning comes before the command's own verdict (a test prints its
// verdict at the end), not after it. stop ends the polling and reports
// whether it warned: a run called not valid stays so (exit 5), although
// the counters at its end may forgive a stall that a longer run
// spreads below the allowance (emu's maxBehind).
func watchOverload(stats func() emu.Stats, w io.Writer, every time.Duration) (stop func() bool) {
	done, finished := make(chan struct{}), make(chan struct{})
	var warned bool // written before finished is closed
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if stats().Overloaded {
					fmt.Fprintln(w, "longhaul: WARNING: the emulator is overloaded (it dropped or delayed frames itself): results of this run are not valid, whatever the command says below")
					warned = true
					return
				}
			}
		}
	}()
	return func() bool { close(done); <-finished; return warned }
}

// finishEmulate ends a run: the link statistics printed and written
// (--stats-json), then the run's outcome. A run the watcher called not
// valid (warned) is overloaded in both and exits 5 when its command
// succeeded, as the warning said.
func finishEmulate(w io.Writer, stats statsFile, st emu.Stats, warned bool, code int, err error) error {
	forgiven := warned && !st.Overloaded
	st.Overloaded = st.Overloaded || warned
	printLinkStats(w, st)
	if forgiven {
		fmt.Fprintln(w, "longhaul: the frames the emulator delayed while it was overloaded (warned above) are within the allowance over the whole run, but they were delayed when the command measured: the run stays not valid")
	}
	if werr := stats.write(st); werr != nil && err == nil {
		err = werr
	}
	return emulateOutcome(code, err, st.Overloaded)
}

// statsFile is --stats-json, opened before the run so that a path that
// cannot be written is refused before the command runs, not after.
type statsFile struct{ f *os.File }

func openStatsFile(path string) (statsFile, error) {
	if path == "" {
		return statsFile{}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return statsFile{}, usagef("--stats-json: %v", err)
	}
	return statsFile{f}, nil
}

func (s statsFile) write(st emu.Stats) error {
	if s.f == nil {
		return nil
	}
	if err := writeJSON(s.f, st); err != nil {
		return fmt.Errorf("emulate: --stats-json: %w", err)
	}
	return nil
}

func (s statsFile) Close() {
	if s.f != nil {
		s.f.Close()
	}
}
