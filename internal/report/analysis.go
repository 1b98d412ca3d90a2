package report

import (
	"encoding/json"
	"fmt"
	"github.com/longhaul/longhaul/internal/badinput"
	"io"
	"sort"
	"strings"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/tcpflow"
	"github.com/longhaul/longhaul/internal/units"
)

// AnalysisSchema is the schema of `longhaul analyze --json` documents.
const AnalysisSchema = tcpflow.Schema

// IsAnalysis reports whether a document's start names the analyze
// schema (the first 512 bytes hold the "schema" field).
func IsAnalysis(head []byte) bool {
	return strings.Contains(strings.ReplaceAll(string(head), " ", ""), `"schema":"`+AnalysisSchema+`"`)
}

// maxFlowCharts bounds the flows drawn: the biggest ones.
const maxFlowCharts = 4

// BuildAnalysis computes the page of an analyze document written with
// --timeline: a table of the flows, each flow's verdict, and for the
// biggest flows a time-sequence graph and in-flight vs window.
func BuildAnalysis(r io.Reader) (*Page, error) {
	var a tcpflow.Doc
	if err := json.NewDecoder(r).Decode(&a); err != nil {
		return nil, fmt.Errorf("report: analysis: %w", badinput.JSON(err))
	}
	if a.Schema != AnalysisSchema {
		return nil, fmt.Errorf("report: schema %q is not %s", a.Schema, AnalysisSchema)
	}
	if a.Analysis == nil {
		a.Analysis = &tcpflow.Analysis{}
	}
	p := &Page{
		Title:     "What limited each TCP flow in " + a.File,
		Scenario:  "analyze",
		Path:      fmt.Sprintf("%s, %s, %d TCP flow(s)", a.Format, units.FormatDuration(secs(a.Duration)), len(a.Flows)),
		TableHead: []string{"flow", "verdict", "throughput", "share", "ceiling", "throughput / ceiling"},
	}
	if a.Error != "" {
		p.Invalid = append(p.Invalid, "the capture ended badly: "+a.Error+" (flows read before it are shown)")
	}
	flows := make([]*tcpflow.FlowReport, 0, len(a.Flows))
	for _, f := range a.Flows {
		if f == nil { // null in the document reads as a flow of zeros
			f = &tcpflow.FlowReport{}
		}
		flows = append(flows, f)
	}
	sort.SliceStable(flows, func(i, j int) bool { return flows[i].Bytes > flows[j].Bytes })
	for _, f := range flows {
		name := fmt.Sprintf("%d: %s -> %s", f.ID, f.Sender, f.Receiver)
		row := Row{name, f.Verdict.Verdict, Format(f.ThroughputBps, "bps"), fmt.Sprintf("%.0f%%", 100*f.Share), "-", "-"}
		if f.CeilingBps > 0 {
			row[4], row[5] = Format(f.CeilingBps, "bps"), fmt.Sprintf("%.2f", f.ThroughputBps/f.CeilingBps)
		}
		p.Table = append(p.Table, row)
		p.Headlines = append(p.Headlines, fmt.Sprintf("Flow %s: %s (%.0f%% of the time): %s.%s Fix: %s", name, f.Verdict.Verdict, 100*f.Share, strings.TrimSuffix(f.Summary, "."), pathWords(f), f.Fix))
	}
	drawn := 0
	for _, f := range flows {
		if drawn == maxFlowCharts {
			break
		}
		for _, d := range f.Directions {
			if d.Timeline == nil || len(d.Timeline.Points) == 0 || d.Sender != f.Sender {
				continue
			}
			p.Charts = append(p.Charts, flowCharts(f, d.Timeline.Points, d.Timeline.Events)...)
			drawn++
		}
	}
	if drawn == 0 && len(flows) > 0 {
		p.Invalid = append(p.Invalid, "no time series in the document: write it with longhaul analyze --timeline")
	}
	return p, nil
}

// flowCharts draws one direction's timeline: sequence numbers against
// time with the ACK and receive-window lines and the events as marks, and
// bytes in flight against the window.
func flowCharts(f *tcpflow.FlowReport, points []diagnose.Point, events []diagnose.Event) []ChartData {
	xs := make([]float64, 0, len(points)+len(events))
	for _, pt := range points {
		xs = append(xs, pt.T)
	}
	for _, e := range events {
		xs = append(xs, e.T)
	}
	sort.Float64s(xs)
	xs = dedup(xs)
	idx := map[float64]int{}
	for i, x := range xs {
		idx[x] = i
	}
	col := func() []*float64 { return make([]*float64, len(xs)) }
	seq, ack, wnd, infl, rwnd := col(), col(), col(), col(), col()
	for _, pt := range points {
		i := idx[pt.T]
		seq[i], ack[i], infl[i] = num(float64(pt.Seq), true), num(float64(pt.Ack), true), num(float64(pt.Inflight), true)
		if pt.Rwnd >= 0 {
			wnd[i], rwnd[i] = num(float64(pt.Ack+pt.Rwnd), true), num(float64(pt.Rwnd), true)
		}
	}
	ts := ChartData{ID: fmt.Sprintf("flow%d-tsg", f.ID), Kind: "line", X: xs,
		Title:  fmt.Sprintf("Flow %d: time-sequence graph (%s -> %s)", f.ID, f.Sender, f.Receiver),
		XLabel: "time", XUnit: "s", YLabel: "sequence (bytes from the first)", YUnit: "bytes",
		Note: "Data sent (highest sequence), the receiver's ACK and ACK + window: the gap between the data line and the window line is what the window still allows; marks are retransmissions and zero-window events.",
		Series: []SeriesData{{Label: "data sent", Role: "sample", Y: seq}, {Label: "ACK", Role: "sample", Y: ack},
			{Label: "ACK + receive window", Role: "sample", Y: wnd}}}
	kinds := map[string][]*float64{}
	var order []string
	for _, e := range events {
		k := e.Kind.String()
		if strings.HasPrefix(k, "retrans") {
			k = "retransmission"
		}
		if _, ok := kinds[k]; !ok {
			kinds[k] = col()
			order = append(order, k)
		}
		kinds[k][idx[e.T]] = num(float64(e.Seq), true)
	}
	for _, k := range order {
		ts.Series = append(ts.Series, SeriesData{Label: k, Role: "event", Y: kinds[k]})
	}
	fl := ChartData{ID: fmt.Sprintf("flow%d-inflight", f.ID), Kind: "line", X: xs,
		Title:  fmt.Sprintf("Flow %d: bytes in flight and the receive window", f.ID),
		XLabel: "time", XUnit: "s", YLabel: "bytes", YUnit: "bytes",
		Series: []SeriesData{{Label: "in flight", Role: "sample", Y: infl}, {Label: "receive window", Role: "sample", Y: rwnd}}}
	return []ChartData{ts, fl}
}

func dedup(xs []float64) []float64 {
	out := xs[:0]
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// pathWords is what analyze said of the path of a flow's main direction
// (its cause, or why the capture cannot tell), as it printed it.
func pathWords(f *tcpflow.FlowReport) string {
	for _, d := range f.Directions {
		switch {
		case d.Sender != f.Sender:
		case d.Cause != nil:
			return fmt.Sprintf(" Path (%s): %s.", d.Cause.Name, strings.TrimSuffix(d.Cause.Text, "."))
		case d.CauseNote != "":
			return " Path: " + strings.TrimSuffix(d.CauseNote, ".") + "."
		}
	}
	return ""
}
