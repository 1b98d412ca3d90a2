// Package report renders lab results (package results) as one
// self-contained HTML file: the charts a person would draw, drawn by
// uPlot (vendored under uplot/, MIT), with the data embedded as JSON, so
// the file works offline and can be mailed or archived.
//
// Build turns a results file into a Page, a plain value holding every
// number the page shows (golden-tested); Render writes the HTML.
package report

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
	"github.com/longhaul/longhaul/internal/units"
)

// Page is everything the HTML shows.
type Page struct {
	Title     string   `json:"title"`
	Scenario  string   `json:"scenario"`
	Seed      string   `json:"seed,omitempty"`
	Path      string   `json:"path"`
	Host      string   `json:"host"`
	Started   string   `json:"started"`
	Headlines []string `json:"headlines,omitempty"`
	// Fix is what to change, line by line as the command printed it
	// (a test's plans), shown preformatted.
	Fix       []string    `json:"fix,omitempty"`
	Charts    []ChartData `json:"charts"`
	TableHead []string    `json:"table_head"`
	Table     []Row       `json:"table"`
	// Invalid lists the invalid runs, left out of the results, with the
	// reason.
	Invalid []string `json:"invalid,omitempty"`
	// Matrices are the causes matrix's score and confusion tables.
	Matrices []Matrix `json:"matrices,omitempty"`
}

// ChartData is one chart, ready for uPlot: X holds the x values (or case
// indices for bars, named by XNames); each series is aligned to X with
// null for missing points.
type ChartData struct {
	ID     string         `json:"id"`
	Title  string         `json:"title"`
	Kind   string         `json:"kind"`
	Note   string         `json:"note,omitempty"`
	XLabel string         `json:"x_label"`
	XUnit  string         `json:"x_unit,omitempty"`
	XLog   bool           `json:"x_log,omitempty"`
	YLabel string         `json:"y_label"`
	YUnit  string         `json:"y_unit,omitempty"`
	YLog   bool           `json:"y_log,omitempty"`
	X      []float64      `json:"x"`
	XNames []string       `json:"x_names,omitempty"`
	Series []SeriesData   `json:"series"`
	Marks  []results.Mark `json:"marks,omitempty"`
}

// SeriesData is one line (or bar set) of a chart.
type SeriesData struct {
	Label string `json:"label"`
	// Role is "measured" (median; Min and Max give the spread), "model"
	// (dashed) or "sample" (a tcp_info series).
	Role string     `json:"role"`
	Y    []*float64 `json:"y"`
	Min  []*float64 `json:"min,omitempty"`
	Max  []*float64 `json:"max,omitempty"`
	// Axis 1 is the right-hand axis, in RightUnit.
	Axis      int    `json:"axis,omitempty"`
	RightUnit string `json:"right_unit,omitempty"`
}

// Row is one line of the summary table, a cell per TableHead column.
type Row []string

// Build computes the page of a results file.
func Build(f *results.File) (*Page, error) {
	h := f.Header
	p := &Page{
		Title: h.Title, Scenario: h.Scenario, Seed: problemText(h.Seed),
		Path: fmt.Sprintf("RTT %s, rate %s (TCP goodput %s), BDP %s, queue %s, loss %s, congestion control %s",
			units.FormatDuration(secs(h.Path.RTTSeconds)), rateText(h.Path.RateBps), units.FormatRate(h.Path.GoodputBps),
			units.FormatIEC(float64(h.Path.BDPBytes)), units.FormatIEC(float64(h.Path.QueueBytes)),
			fmt.Sprintf("%g%%", h.Path.Loss*100), h.CC),
		Host:    fmt.Sprintf("%s, Linux %s, %d CPUs, longhaul %s", h.Host.Hostname, h.Host.Kernel, h.Host.CPUs, h.Host.Version),
		Started: h.Started.UTC().Format(time.RFC3339),
	}
	if slices.ContainsFunc(f.Runs, func(r results.Run) bool { return r.Path != nil }) {
		// Cases on their own paths (the emulator benchmark): the header's
		// path is only the default, so say so rather than print it.
		p.Path = "each case on its own path (named in the table); congestion control " + h.CC
	}
	sums := results.Summarize(f.Runs)
	p.Headlines = scenario.Headlines(h, sums)
	for _, r := range f.Runs {
		if !r.Valid {
			p.Invalid = append(p.Invalid, fmt.Sprintf("%s, repeat %d: %s", r.Label, r.Repeat, r.Invalid))
		}
	}
	p.TableHead, p.Table = Table(h, sums)
	p.Matrices = CauseMatrices(f.Runs)
	for _, c := range h.Charts {
		var cd ChartData
		switch c.Kind {
		case "line":
			cd = lineChart(c, sums)
		case "bar":
			cd = barChart(c, sums)
		case "tcpinfo":
			var ok bool
			if cd, ok = tcpinfoChart(c, f.Runs); !ok {
				continue
			}
		default:
			return nil, fmt.Errorf("report: chart %q: unknown kind %q", c.ID, c.Kind)
		}
		if len(cd.X) > 0 {
			p.Charts = append(p.Charts, cd)
		}
	}
	return p, nil
}

// problemText is the reported problem an experiment reproduces, without
// the experiment's internal name before it ("buffers-6x-http-downloads:
// 200 ms, ..." reads "200 ms, ...").
func problemText(seed string) string {
	if id, rest, ok := strings.Cut(seed, ": "); ok && !strings.ContainsAny(id, " ,") {
		return rest
	}
	return seed
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func rateText(bps float64) string {
	if bps == 0 {
		return "unlimited"
	}
	return units.FormatRate(bps)
}

func num(v float64, ok bool) *float64 {
	if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func base(c results.Chart) ChartData {
	return ChartData{ID: c.ID, Title: c.Title, Kind: c.Kind, Note: c.Note, XLabel: c.XLabel, XUnit: c.XUnit, XLog: c.XLog,
		YLabel: c.YLabel, YUnit: c.YUnit, YLog: c.YLog, Marks: c.Marks}
}

// seriesOf groups summaries by series, in the chart's order or first seen.
func seriesOf(c results.Chart, sums []results.Summary) ([]string, map[string][]results.Summary) {
	by := map[string][]results.Summary{}
	var order []string
	for _, s := range sums {
		if len(c.Series) > 0 && !slices.Contains(c.Series, s.Series) {
			continue
		}
		if _, ok := by[s.Series]; !ok {
			order = append(order, s.Series)
		}
		by[s.Series] = append(by[s.Series], s)
	}
	if len(c.Series) > 0 {
		order = slices.DeleteFunc(slices.Clone(c.Series), func(s string) bool { return by[s] == nil })
	}
	return order, by
}

// lineChart: x is the union of the series' x values, sorted.
func lineChart(c results.Chart, sums []results.Summary) ChartData {
	cd := base(c)
	order, by := seriesOf(c, sums)
	drewModel := false
	xs := map[float64]bool{}
	for _, s := range order {
		for _, sm := range by[s] {
			xs[sm.X] = true
		}
	}
	for x := range xs {
		cd.X = append(cd.X, x)
	}
	sort.Float64s(cd.X)
	idx := map[float64]int{}
	for i, x := range cd.X {
		idx[x] = i
	}
	for _, s := range order {
		m := SeriesData{Label: s, Role: "measured", Y: make([]*float64, len(cd.X)), Min: make([]*float64, len(cd.X)), Max: make([]*float64, len(cd.X))}
		mod := SeriesData{Label: s + " (model)", Role: "model", Y: make([]*float64, len(cd.X))}
		hasModel := false
		for _, sm := range by[s] {
			i := idx[sm.X]
			if sm.N > 0 {
				v, ok := sm.Median[c.Metric]
				m.Y[i] = num(v, ok)
				lo, ok := sm.Min[c.Metric]
				m.Min[i] = num(lo, ok)
				hi, ok := sm.Max[c.Metric]
				m.Max[i] = num(hi, ok)
			}
			if c.Model != "" {
				v, ok := sm.Model[c.Model]
				if mod.Y[i] = num(v, ok); mod.Y[i] != nil {
					hasModel = true
				}
			}
		}
		cd.Series = append(cd.Series, m)
		if hasModel {
			cd.Series = append(cd.Series, mod)
			drewModel = true
		}
	}
	if !drewModel {
		cd.Note = withoutModel(cd.Note)
	}
	return cd
}

// withoutModel drops the sentences of a caption that describe the
// model's line or dots, for a chart that draws none: a caption names
// only what is drawn.
func withoutModel(note string) string {
	var keep []string
	for _, s := range strings.SplitAfter(note, ". ") {
		l := strings.ToLower(s)
		if strings.Contains(l, "dashed") || strings.Contains(l, "dots: the path model") {
			continue
		}
		keep = append(keep, s)
	}
	return strings.TrimSpace(strings.Join(keep, ""))
}

// barChart: one bar per case of the chart's series, in order.
func barChart(c results.Chart, sums []results.Summary) ChartData {
	cd := base(c)
	order, by := seriesOf(c, sums)
	var cases []results.Summary
	for _, s := range order {
		cases = append(cases, by[s]...)
	}
	m := SeriesData{Label: "measured (median)", Role: "measured"}
	mod := SeriesData{Label: "model", Role: "model"}
	hasModel := false
	for i, sm := range cases {
		cd.X = append(cd.X, float64(i))
		cd.XNames = append(cd.XNames, sm.Label)
		var y, lo, hi *float64
		if sm.N > 0 {
			v, ok := sm.Median[c.Metric]
			y = num(v, ok)
			v, ok = sm.Min[c.Metric]
			lo = num(v, ok)
			v, ok = sm.Max[c.Metric]
			hi = num(v, ok)
		}
		m.Y, m.Min, m.Max = append(m.Y, y), append(m.Min, lo), append(m.Max, hi)
		var mv *float64
		if c.Model != "" {
			v, ok := sm.Model[c.Model]
			mv = num(v, ok)
			hasModel = hasModel || mv != nil
		}
		mod.Y = append(mod.Y, mv)
	}
	cd.Series = append(cd.Series, m)
	if hasModel {
		cd.Series = append(cd.Series, mod)
	} else {
		cd.Note = withoutModel(cd.Note)
	}
	return cd
}

// tcpinfoChart draws the chosen run's busiest socket at the chosen end.
func tcpinfoChart(c results.Chart, runs []results.Run) (ChartData, bool) {
	cd := base(c)
	var run *results.Run
	for i := range runs {
		if runs[i].Case == c.Case && runs[i].Valid {
			run = &runs[i]
			break
		}
	}
	if run == nil {
		return cd, false
	}
	// The busiest socket: most bytes moved.
	bytesBy := map[string]int64{}
	for _, s := range run.Samples {
		if s.End == c.End {
			bytesBy[s.Sock] = max(bytesBy[s.Sock], s.BytesAcked+s.BytesReceived)
		}
	}
	sock, most := "", int64(-1)
	for k, v := range bytesBy {
		if v > most || (v == most && k < sock) {
			sock, most = k, v
		}
	}
	if sock == "" {
		return cd, false
	}
	cd.Title = fmt.Sprintf("%s: %s, repeat %d (%s %s)", c.Title, run.Label, run.Repeat, c.End, sock)
	cwnd := SeriesData{Label: "cwnd", Role: "sample"}
	wnd := SeriesData{Label: "peer's window (snd_wnd)", Role: "sample"}
	infl := SeriesData{Label: "in flight", Role: "sample"}
	rtt := SeriesData{Label: "RTT (smoothed)", Role: "sample", Axis: 1, RightUnit: "s"}
	for _, s := range run.Samples {
		if s.End != c.End || s.Sock != sock {
			continue
		}
		cd.X = append(cd.X, s.T)
		cwnd.Y = append(cwnd.Y, num(float64(s.CwndB), true))
		wnd.Y = append(wnd.Y, num(float64(s.SndWnd), true))
		infl.Y = append(infl.Y, num(float64(s.InFlight), true))
		rtt.Y = append(rtt.Y, num(s.RTT, s.RTT > 0))
	}
	cd.Series = []SeriesData{cwnd, wnd, infl, rtt}
	return cd, true
}

// Format prints a value in a chart unit the way the CLI does.
func Format(v float64, unit string) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch unit {
	case "bps":
		return units.FormatRate(v)
	case "s":
		return units.FormatDuration(secs(v))
	case "bytes":
		return units.FormatBytes(v)
	case "rounds":
		return fmt.Sprintf("%.1f", v)
	case "pct":
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.3g", v)
}

//go:embed uplot/uPlot.iife.min.js
var uplotJS string

//go:embed uplot/uPlot.min.css
var uplotCSS string

//go:embed page.html
var pageHTML string

//go:embed page.js
var pageJS string

//go:embed axis.js
var axisJS string

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{"num": numeric}).Parse(pageHTML))

// Render writes the page as one HTML document.
func Render(w io.Writer, p *Page) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	// JSON inside <script>: no "</" may close the element early.
	data = bytes.ReplaceAll(data, []byte("</"), []byte(`<\/`))
	return pageTmpl.Execute(w, map[string]any{
		"Page":     p,
		"UplotJS":  template.JS(uplotJS),
		"UplotCSS": template.CSS(uplotCSS),
		"PageJS":   template.JS(axisJS + pageJS),
		"Data":     template.JS(data),
	})
}

// Load reads any document report draws, telling them apart by their
// first bytes: a test or test URL result, an analyze --json document, or
// lab results (JSON lines). dropped names a damaged last line of lab
// results that was left out (a run killed while writing). A file that is
// none of them, or is damaged, is bad input.
func Load(br *bufio.Reader) (page *Page, dropped string, err error) {
	head, _ := br.Peek(512)
	switch {
	case IsTest(head):
		page, err = BuildTest(br)
	case IsTestURL(head):
		page, err = BuildTestURL(br)
	case IsAnalysis(head):
		page, err = BuildAnalysis(br)
	default:
		res, rerr := results.Read(br)
		if rerr != nil {
			if errors.Is(rerr, results.ErrSchema) {
				return nil, "", badinput.Errorf("report: %w: it was not written by longhaul lab, test or analyze --json", rerr)
			}
			return nil, "", badinput.Errorf("report: %w", rerr)
		}
		page, err = Build(res)
		return page, res.Dropped, err
	}
	return page, "", badinput.Wrap(err)
}
