package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/units"
)

// TestSchema is the schema of `longhaul test --json` documents.
const TestSchema = "longhaul.test/v1"

// testDoc is the part of a test document the report draws.
type testDoc struct {
	Schema  string `json:"schema"`
	Started string `json:"started"`
	Server  string `json:"server"`
	RTT     struct {
		MinS    float64 `json:"min_s"`
		LoadedS float64 `json:"loaded_s"`
	} `json:"rtt"`
	PathRateBps   float64 `json:"path_rate_bps"`
	PathRateBasis string  `json:"path_rate_basis"`
	Capacity      *struct {
		Bps     float64 `json:"bps"`
		Streams int     `json:"streams"`
	} `json:"capacity"`
	Directions []struct {
		Name          string  `json:"name"`
		Sender        string  `json:"sender"`
		ThroughputBps float64 `json:"throughput_bps"`
		Headline      string  `json:"headline"`
		Flow          struct {
			Verdict string `json:"verdict"`
			Fix     string `json:"fix"`
		} `json:"flow"`
		Model struct {
			ExpectedBps   float64 `json:"expected_bps"`
			AfterPlansBps float64 `json:"after_plans_bps"`
		} `json:"model"`
	} `json:"directions"`
	Phases []struct {
		Name          string           `json:"name"`
		Streams       int              `json:"streams"`
		ThroughputBps float64          `json:"throughput_bps"`
		Samples       []results.Sample `json:"samples"`
	} `json:"phases"`
	Hosts struct {
		Client *struct {
			Hostname string `json:"hostname"`
		} `json:"client"`
		Server *struct {
			Hostname string `json:"hostname"`
		} `json:"server"`
	} `json:"hosts"`
}

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
	var d testDoc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("report: test result: %w", err)
	}
	if d.Schema != TestSchema {
		return nil, fmt.Errorf("report: schema %q is not %s", d.Schema, TestSchema)
	}
	p := &Page{
		Title:    "The path to " + d.Server + ": what limits it, at which host",
		Scenario: "test",
		Path: fmt.Sprintf("RTT %s (under load %s), path rate %s (%s)", units.FormatDuration(secs(d.RTT.MinS)),
			units.FormatDuration(secs(d.RTT.LoadedS)), Format(d.PathRateBps, "bps"), d.PathRateBasis),
		Started:   d.Started,
		TableHead: []string{"phase", "streams", "throughput", "verdict (sender)", "model", "measured / model", "model after the plans"},
	}
	if d.Hosts.Client != nil && d.Hosts.Server != nil {
		p.Host = fmt.Sprintf("client %s, server %s", d.Hosts.Client.Hostname, d.Hosts.Server.Hostname)
	}
	model := map[string]float64{}
	for _, dir := range d.Directions {
		p.Headlines = append(p.Headlines, dir.Headline+". Fix: "+dir.Flow.Fix)
		model[dir.Name] = dir.Model.ExpectedBps
	}
	for _, ph := range d.Phases {
		row := Row{ph.Name, fmt.Sprint(ph.Streams), Format(ph.ThroughputBps, "bps"), "-", "-", "-", "-"}
		for _, dir := range d.Directions {
			if dir.Name != ph.Name {
				continue
			}
			row[3] = dir.Flow.Verdict
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

// phaseCharts draws a phase: the sender's delivery rate (summed over its
// sockets, per sample interval) with the model as a dashed line, and for
// one-stream phases the sender's cwnd, flight and peer window with the
// receiver's receive space.
func phaseCharts(name string, streams int, samples []results.Sample, model float64) []ChartData {
	sender, receiver := "server", "client"
	if name == "upload" {
		sender, receiver = "client", "server"
	}
	xs, rate := senderRate(samples, sender)
	if len(xs) == 0 {
		return nil
	}
	tp := ChartData{ID: name + "-rate", Kind: "line", X: xs, Title: fmt.Sprintf("%s: throughput over time (%s sends, %d stream(s))", name, sender, streams),
		XLabel: "time", XUnit: "s", YLabel: "throughput", YUnit: "bps",
		Note:   "The sender's acknowledged bytes per 100 ms sample; the dashed line is the path model's prediction from both hosts' settings.",
		Series: []SeriesData{{Label: "measured (" + sender + " tcp_info)", Role: "sample", Y: rate}}}
	if model > 0 {
		m := make([]*float64, len(xs))
		for i := range m {
			m[i] = num(model, true)
		}
		tp.Series = append(tp.Series, SeriesData{Label: "model", Role: "model", Y: m})
	}
	out := []ChartData{tp}
	if streams == 1 {
		out = append(out, windowChart(name, samples, sender, receiver))
	}
	return out
}

// senderRate is the sender's summed acknowledged-bytes rate per sample.
func senderRate(samples []results.Sample, sender string) ([]float64, []*float64) {
	byT := map[float64]map[string]int64{}
	for _, s := range samples {
		if s.End == sender {
			if byT[s.T] == nil {
				byT[s.T] = map[string]int64{}
			}
			byT[s.T][s.Sock] = s.BytesAcked
		}
	}
	var ts []float64
	for t := range byT {
		ts = append(ts, t)
	}
	sort.Float64s(ts)
	var xs []float64
	var ys []*float64
	last := map[string]int64{}
	for i, t := range ts {
		var moved int64
		for k, v := range byT[t] {
			moved += v - last[k]
			last[k] = v
		}
		if i == 0 {
			continue
		}
		xs = append(xs, t)
		ys = append(ys, num(float64(moved)*8/(t-ts[i-1]), true))
	}
	return xs, ys
}

// windowChart draws one stream's windows over time.
func windowChart(name string, samples []results.Sample, sender, receiver string) ChartData {
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
	return ChartData{ID: name + "-windows", Kind: "line", X: xs, Title: fmt.Sprintf("%s: both ends' tcp_info", name),
		XLabel: "time", XUnit: "s", YLabel: "bytes", YUnit: "bytes",
		Note: "The sender's congestion window, bytes in flight and the receiver's advertised window, and the receiver's receive buffer space (autotuning), every 100 ms from each end.",
		Series: []SeriesData{{Label: sender + " cwnd", Role: "sample", Y: cwnd}, {Label: sender + " in flight", Role: "sample", Y: infl},
			{Label: receiver + "'s window (at the " + sender + ")", Role: "sample", Y: wnd}, {Label: receiver + " receive space", Role: "sample", Y: space}}}
}
