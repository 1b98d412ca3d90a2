package report

import (
	"encoding/json"
	"fmt"
	"github.com/longhaul/longhaul/internal/badinput"
	"io"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// TestURLSchema is the schema of `longhaul test URL --json` documents.
const TestURLSchema = testdoc.URLSchema

// IsTestURL reports whether a document's start names the URL test's
// schema.
func IsTestURL(head []byte) bool {
	return strings.Contains(strings.ReplaceAll(string(head), " ", ""), `"schema":"`+TestURLSchema+`"`)
}

// BuildTestURL computes the page of a URL test: the headline, what to
// change as test printed it, the download's rate over time (averaged
// over a round trip) and this host's advertised window and receive space
// against what its tcp_rmem allows.
func BuildTestURL(r io.Reader) (*Page, error) {
	var d testdoc.URLDoc
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("report: URL test result: %w", badinput.JSON(err))
	}
	if d.Schema != TestURLSchema {
		return nil, fmt.Errorf("report: schema %q is not %s", d.Schema, TestURLSchema)
	}
	title := "Download of " + d.URL + ": what limits it"
	if d.Direction == testdoc.URLUpload {
		title = "Upload (" + d.Method + ") to " + d.URL + ": what limits it"
	}
	p := &Page{
		Title: title, Scenario: "test URL",
		Path: fmt.Sprintf("%s (%s), RTT under load %s; only this host's side is seen", d.Remote, d.Status,
			units.FormatDuration(secs(d.LoadedRTT))),
		Started:   startedText(d.Started),
		Headlines: []string{d.Headline},
		Fix:       d.Fix,
		TableHead: []string{"bytes", "time", "throughput", "steady half"},
		Table: []Row{{units.FormatBytes(float64(d.Bytes)), units.FormatDuration(secs(d.DurationS)),
			Format(d.ThroughputBps, "bps"), Format(d.SteadyBps, "bps")}},
	}
	if d.Client != nil {
		p.Host = "this host " + d.Client.Hostname
	}
	for _, n := range d.Notes {
		p.Headlines = append(p.Headlines, "Note: "+n)
	}
	if d.Direction == testdoc.URLUpload {
		p.Charts = uploadCharts(d.SendSamples)
		return p, nil
	}
	// The receiver's samples as one socket's, for the rate arithmetic.
	var ss []results.Sample
	for _, s := range d.Samples {
		ss = append(ss, results.Sample{T: s.T, End: "client", Sock: "download", BytesAcked: s.BytesReceived, RTT: s.RcvRTT})
	}
	if xs, ys, w := rateSeries(ss, "client"); len(xs) > 0 {
		p.Charts = append(p.Charts, ChartData{ID: "url-rate", Kind: "line", X: xs, Title: "Download: throughput over time",
			XLabel: "time", XUnit: "s", YLabel: "throughput", YUnit: "bps",
			Note:   fmt.Sprintf("Bytes this host received, averaged over the %s before each point (a round trip).", units.FormatDuration(secs(w).Round(time.Millisecond))),
			Series: []SeriesData{{Label: "received (tcp_info)", Role: "sample", Y: ys}}})
	}
	if wc := urlWindowChart(d); len(wc.X) > 0 {
		p.Charts = append(p.Charts, wc)
	}
	return p, nil
}

// urlWindowChart draws the window this host advertised and its receive
// space, with what its tcp_rmem allows as a dashed line.
func urlWindowChart(d testdoc.URLDoc) ChartData {
	cd := ChartData{ID: "url-window", Kind: "line", Title: "Download: this host's receive window",
		XLabel: "time", XUnit: "s", YLabel: "bytes", YUnit: "bytes",
		Note: "Every 100 ms: the window this host advertised (tcpi_rcv_wnd) and its receive buffer space (autotuning)."}
	wnd := SeriesData{Label: "advertised window", Role: "sample"}
	space := SeriesData{Label: "receive space", Role: "sample"}
	ceil := SeriesData{Label: "what tcp_rmem allows", Role: "model"}
	for _, s := range d.Samples {
		cd.X = append(cd.X, s.T)
		wnd.Y = append(wnd.Y, num(float64(s.RcvWnd), true))
		space.Y = append(space.Y, num(float64(s.RcvSpace), true))
		ceil.Y = append(ceil.Y, num(float64(d.WindowCeilingBytes), d.WindowCeilingBytes > 0))
	}
	cd.Series = []SeriesData{wnd, space}
	if d.WindowCeilingBytes > 0 {
		cd.Series = append(cd.Series, ceil)
		cd.Note += " Dashed: the largest window this host's net.ipv4.tcp_rmem allows."
	}
	return cd
}

// uploadCharts draw an upload from this host's sending socket: its rate
// (bytes acknowledged, averaged over a round trip) and the server's
// advertised window against the congestion window and the flight.
func uploadCharts(ss []results.Sample) []ChartData {
	var out []ChartData
	if xs, ys, w := rateSeries(ss, "client"); len(xs) > 0 {
		out = append(out, ChartData{ID: "url-rate", Kind: "line", X: xs, Title: "Upload: throughput over time",
			XLabel: "time", XUnit: "s", YLabel: "throughput", YUnit: "bps",
			Note:   fmt.Sprintf("Bytes the server acknowledged, averaged over the %s before each point (a round trip).", units.FormatDuration(secs(w).Round(time.Millisecond))),
			Series: []SeriesData{{Label: "acknowledged (tcp_info)", Role: "sample", Y: ys}}})
	}
	cd := ChartData{ID: "url-window", Kind: "line", Title: "Upload: the server's window and this host's flight",
		XLabel: "time", XUnit: "s", YLabel: "bytes", YUnit: "bytes",
		Note: "Every 100 ms from this host's socket: the window the server advertised (tcpi_snd_wnd), the congestion window and the bytes in flight."}
	wnd := SeriesData{Label: "server's advertised window", Role: "sample"}
	cwnd := SeriesData{Label: "congestion window", Role: "sample"}
	flight := SeriesData{Label: "in flight", Role: "sample"}
	for _, s := range ss {
		cd.X = append(cd.X, s.T)
		wnd.Y = append(wnd.Y, num(float64(s.SndWnd), true))
		cwnd.Y = append(cwnd.Y, num(float64(s.CwndB), true))
		flight.Y = append(flight.Y, num(float64(s.InFlight), true))
	}
	if len(cd.X) > 0 {
		cd.Series = []SeriesData{wnd, cwnd, flight}
		out = append(out, cd)
	}
	return out
}
