package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/units"
)

func printLinkStats(w io.Writer, s emu.Stats) {
	fmt.Fprintf(w, "longhaul: link statistics after %s (emulator CPU %.1f s, %.0f%% of a core)\n",
		units.FormatDuration(secs(s.Elapsed)), s.CPUSeconds, 100*s.CPUSeconds/max(s.Elapsed, 1e-9))
	fmt.Fprintf(w, "  %-5s %12s %10s %10s %10s %10s %12s %10s %10s\n", "dir", "bytes", "packets", "drop-q", "drop-loss", "drop-ovl", "queue-peak", "late-p50", "late-p99")
	for _, d := range []struct {
		name string
		s    emu.DirStats
	}{{"up", s.Up}, {"down", s.Down}} {
		fmt.Fprintf(w, "  %-5s %12s %10d %10d %10d %10d %12s %10s %10s\n", d.name,
			units.FormatBytes(float64(d.s.Bytes)), d.s.Packets, d.s.DropsQueue, d.s.DropsLoss,
			d.s.DropsOverload+d.s.OverloadFrames, units.FormatBytes(float64(d.s.QueuePeakBytes)),
			units.FormatDuration(d.s.LatenessP50), units.FormatDuration(d.s.LatenessP99))
	}
	if s.Overloaded {
		fmt.Fprintln(w, "longhaul: WARNING: the emulator was overloaded (it dropped or delayed frames itself): results of this run are not valid")
	}
}

func writeStatsFile(path string, s emu.Stats) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("emulate: --stats-json: %w", err)
	}
	if err := writeJSON(f, s); err != nil {
		f.Close()
		return fmt.Errorf("emulate: --stats-json: %w", err)
	}
	return f.Close()
}
