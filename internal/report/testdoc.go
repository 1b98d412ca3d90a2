package report

import (
	"encoding/json"
	"fmt"
	"github.com/longhaul/longhaul/internal/badinput"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// TestSchema is the schema of `longhaul test --json` documents.
const TestSchema = testdoc.Schema

// IsTest reports whether a document's start names the test schema.
func IsTest(head []byte) bool {
	return strings.Contains(strings.ReplaceAll(string(head), " ", ""), `"schema":"`+TestSchema+`"`)
}

// BuildTest computes the page of a test document: a headline per
// direction, a table of the phases with the model beside each, and per
// phase the throughput over time with the model's line and the sender's
// tcp_info (cwnd, in flight, the peer's window) with the receiver's
// receive space.
func BuildTest(r io.Reader) (*Page, error) {
	var d testdoc.Doc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("report: test result: %w", badinput.JSON(err))
	}
	if d.Schema != TestSchema {
		return nil, fmt.Errorf("report: schema %q is not %s", d.Schema, TestSchema)
	}
	p := &Page{
		Title:    "The path to " + d.Server + ": what limits it, at which host",
		Scenario: "test",
		Path: fmt.Sprintf("RTT %s (under load %s), path rate %s (%s)", units.FormatDuration(secs(d.RTT.MinS)),
			units.FormatDuration(secs(d.RTT.LoadedS)), Format(d.PathRateBps, "bps"), d.PathRateBasis),
		Started:   startedText(d.Started),
		TableHead: []string{"phase", "streams", "throughput", "verdict (sender)", "model", "measured / model", "model after the plans"},
	}
	if d.Hosts.Client != nil && d.Hosts.Server != nil {
		p.Host = fmt.Sprintf("client %s, server %s", d.Hosts.Client.Hostname, d.Hosts.Server.Hostname)
	}
	model := map[string]refLine{}
	if d.PathRateBps > 0 {
		model["capacity"] = refLine{Bps: d.PathRateBps, Label: "path rate (model)",
			Note: "the path's rate the model and the plans use (" + d.PathRateBasis + ")"}
	}
	for _, dir := range d.Directions {
		p.Headlines = append(p.Headlines, dir.Headline)
		if m := dir.Model.ExpectedBps; m > 0 {
			model[dir.Name] = refLine{Bps: m, Label: "model", Note: "the path model's prediction from both hosts' settings"}
		}
	}
	for _, n := range d.Notes {
		p.Headlines = append(p.Headlines, "Note: "+n)
	}
	// What test decided, not decided again here: the verdict's own fix
	// would size buffers for a rate of its own.
	p.Fix = d.Fix
	for _, ph := range d.Phases {
		row := Row{ph.Name, fmt.Sprint(ph.Streams), Format(ph.ThroughputBps, "bps"), "-", "-", "-", "-"}
		for _, dir := range d.Directions {
			if dir.Name != ph.Name {
				continue
			}
			row[3] = dir.Flow.Verdict.Verdict
			if m := dir.Model.ExpectedBps; m > 0 {
				row[4], row[5] = Format(m, "bps"), fmt.Sprintf("%.2f", ph.ThroughputBps/m)
			}
			if a := dir.Model.AfterPlansBps; a > 0 {
				row[6] = Format(a, "bps")
			}
		}
		p.Table = append(p.Table, row)
		p.Charts = append(p.Charts, phaseCharts(ph.Name, ph.Streams, ph.Samples, model[ph.Name])...)
	}
	return p, nil
}

// phaseCharts draws a phase: the sender's throughput (summed over its
// sockets, averaged over at least a round trip) with the model as a
// dashed line (for the capacity phase, the path's rate the model and the
// plans use), and for one-stream phases the sender's cwnd, flight and
// peer window with the receiver's receive space. Captions name only what
// is drawn.
func phaseCharts(name string, streams int, samples []results.Sample, model refLine) []ChartData {
	sender, receiver := "server", "client"
	if name == "upload" {
		sender, receiver = "client", "server"
	}
	xs, rate, window := rateSeries(samples, sender)
	if len(xs) == 0 {
		return nil
	}
	what := "The sender's delivered bytes (acknowledged or SACKed)"
	if streams > 1 {
		what += fmt.Sprintf(", summed over its %d sockets on one time grid,", streams)
	}
	tp := ChartData{ID: name + "-rate", Kind: "line", X: xs, Title: fmt.Sprintf("%s: throughput over time (%s sends, %d stream(s))", name, sender, streams),
		XLabel: "time", XUnit: "s", YLabel: "throughput", YUnit: "bps",
		Note:   fmt.Sprintf("%s averaged over the %s before each point (at least one round trip: ACKs come in bursts once per round trip).", what, units.FormatDuration(secs(window).Round(time.Millisecond))),
		Series: []SeriesData{{Label: "measured (" + sender + " tcp_info)", Role: "sample", Y: rate}}}
	if model.Bps > 0 {
		m := make([]*float64, len(xs))
		for i := range m {
			m[i] = num(model.Bps, true)
		}
		tp.Series = append(tp.Series, SeriesData{Label: model.Label, Role: "model", Y: m})
		tp.Note += " Dashed: " + model.Note + "."
	}
	out := []ChartData{tp}
	if streams == 1 {
		if wc, ok := windowChart(name, samples, sender, receiver); ok {
			out = append(out, wc)
		}
	}
	return out
}

// startedText is a document's start for people: to the second, in UTC,
// as the lab's pages say theirs (the document itself keeps Go's
// nanoseconds); "" when the document has none.
func startedText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// refLine is a chart's dashed reference line.
type refLine struct {
	Bps         float64
	Label, Note string
}

// windowChart draws one stream's windows over time; series with no
// sample are left out, and the caption names the ones drawn.
func windowChart(name string, samples []results.Sample, sender, receiver string) (ChartData, bool) {
	var xs []float64
	idx := map[float64]int{}
	for _, s := range samples {
		if _, ok := idx[s.T]; !ok {
			idx[s.T] = -1
			xs = append(xs, s.T)
		}
	}
	sort.Float64s(xs)
	for i, x := range xs {
		idx[x] = i
	}
	col := func() []*float64 { return make([]*float64, len(xs)) }
	cwnd, infl, wnd, space := col(), col(), col(), col()
	for _, s := range samples {
		i := idx[s.T]
		if s.End == sender {
			cwnd[i], infl[i], wnd[i] = num(float64(s.CwndB), true), num(float64(s.InFlight), true), num(float64(s.SndWnd), true)
		} else if s.End == receiver {
			space[i] = num(float64(s.RcvSpace), true)
		}
	}
	all := []struct {
		s    SeriesData
		note string
	}{
		{SeriesData{Label: sender + " cwnd", Role: "sample", Y: cwnd}, "the " + sender + "'s congestion window"},
		{SeriesData{Label: sender + " in flight", Role: "sample", Y: infl}, "its bytes in flight"},
		{SeriesData{Label: receiver + "'s window (at the " + sender + ")", Role: "sample", Y: wnd}, "the window the " + receiver + " advertised"},
		{SeriesData{Label: receiver + " receive space", Role: "sample", Y: space}, "the " + receiver + "'s receive buffer space (autotuning)"},
	}
	cd := ChartData{ID: name + "-windows", Kind: "line", X: xs, Title: fmt.Sprintf("%s: both ends' tcp_info", name),
		XLabel: "time", XUnit: "s", YLabel: "bytes", YUnit: "bytes"}
	var drawn []string
	for _, a := range all {
		if slices.ContainsFunc(a.s.Y, func(v *float64) bool { return v != nil }) {
			cd.Series = append(cd.Series, a.s)
			drawn = append(drawn, a.note)
		}
	}
	if len(drawn) == 0 {
		return cd, false
	}
	cd.Note = "Every 100 ms from each end: " + listWords(drawn) + "."
	return cd, true
}

// listWords joins "a", "b" and "c" as "a, b and c".
func listWords(w []string) string {
	if len(w) < 2 {
		return strings.Join(w, "")
	}
	return strings.Join(w[:len(w)-1], ", ") + " and " + w[len(w)-1]
}
