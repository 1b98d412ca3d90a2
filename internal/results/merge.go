package results

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrMerge is returned for files that are not parts of one experiment.
var ErrMerge = errors.New("results of different experiments")

// Merge joins the results files of one experiment made by separate runs
// of longhaul lab (a long matrix run in parts, or repeated another day):
// the runs of all, in order, under the first file's header, which then
// starts with the earliest run and names every host, kernel and build
// that made a part. The parts must share the scenario, the congestion
// control, quick or not, and the path (unless each run has its own: the
// causes matrix, the emulator benchmark).
func Merge(files []*File) (*File, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: no files", ErrMerge)
	}
	first := files[0].Header
	out := &File{Header: first}
	h := &out.Header
	var hosts, kernels, versions []string
	for i, f := range files {
		g := f.Header
		switch {
		case g.Scenario != first.Scenario:
			return nil, fmt.Errorf("%w: part %d is scenario %q, part 1 %q", ErrMerge, i+1, g.Scenario, first.Scenario)
		case g.CC != first.CC:
			return nil, fmt.Errorf("%w: part %d ran %s, part 1 %s", ErrMerge, i+1, g.CC, first.CC)
		case g.Quick != first.Quick:
			return nil, fmt.Errorf("%w: part %d is %s, part 1 %s", ErrMerge, i+1, quickText(g.Quick), quickText(first.Quick))
		case g.Path != first.Path && !ownPaths(files):
			return nil, fmt.Errorf("%w: part %d ran on another path than part 1 (RTT %gs, rate %g bit/s against %gs, %g bit/s)",
				ErrMerge, i+1, g.Path.RTTSeconds, g.Path.RateBps, first.Path.RTTSeconds, first.Path.RateBps)
		}
		if g.Started.Before(h.Started) {
			h.Started = g.Started
		}
		h.Repeat = max(h.Repeat, g.Repeat)
		hosts, kernels, versions = addNew(hosts, g.Host.Hostname), addNew(kernels, g.Host.Kernel), addNew(versions, g.Host.Version)
		out.Runs = append(out.Runs, f.Runs...)
		if f.Dropped != "" && out.Dropped == "" {
			out.Dropped = fmt.Sprintf("part %d: %s", i+1, f.Dropped)
		}
	}
	h.Host.Hostname, h.Host.Kernel, h.Host.Version = strings.Join(hosts, ", "), strings.Join(kernels, ", "), strings.Join(versions, ", ")
	return out, nil
}

// ownPaths reports whether every run of the files has its own path.
func ownPaths(files []*File) bool {
	for _, f := range files {
		if slices.ContainsFunc(f.Runs, func(r Run) bool { return r.Path == nil }) {
			return false
		}
	}
	return true
}

func addNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func quickText(q bool) string {
	if q {
		return "--quick"
	}
	return "not --quick"
}
