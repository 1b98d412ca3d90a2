// Package results is the lab's output format: JSON lines with the schema
// longhaul.lab/v1, written by the lab runner and read by the report. It is
// pure data plus the aggregation both sides share (median and spread per
// case), so the table `lab` prints and the report's plots never disagree.
//
// # Format
//
// A results file is a sequence of JSON objects, one per line. The first
// has "kind":"header" (the scenario, the path, the charts to draw); every
// other line is "kind":"run", one measured run of one case. Unknown kinds
// and fields are ignored by readers of the same major schema version.
package results

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"time"
)

// Schema names this format's version.
const Schema = "longhaul.lab/v1"

// Header is the first line of a results file.
type Header struct {
	Kind     string `json:"kind" const:"header"`
	Schema   string `json:"schema"`
	Scenario string `json:"scenario"`
	Title    string `json:"title"`
	// Seed cites the field report the scenario reproduces.
	Seed    string    `json:"seed,omitempty"`
	Started time.Time `json:"started"`
	Quick   bool      `json:"quick"`
	Repeat  int       `json:"repeat"`
	Path    Path      `json:"path"`
	Host    Host      `json:"host"`
	// CC is the congestion control both namespaces use.
	CC     string  `json:"cc"`
	Charts []Chart `json:"charts"`
	// Columns, if set, are the metrics tables show per case (median and
	// min..max) instead of the first chart's metric beside the model.
	Columns []Column `json:"columns,omitempty"`
}

// Column is one metric of a results table.
type Column struct {
	Metric string `json:"metric"`
	Label  string `json:"label"`
	Unit   string `json:"unit,omitempty"` // as Chart.YUnit, or "pct"
}

// Path is the emulated path every run of the file used (cases may
// override the RTT, see Run.RTTSeconds).
type Path struct {
	RTTSeconds float64 `json:"rtt_s"`
	RateBps    float64 `json:"rate_bps"` // on the wire; 0 = unlimited
	Loss       float64 `json:"loss"`     // fraction per segment
	QueueBytes int64   `json:"queue_bytes"`
	BDPBytes   int64   `json:"bdp_bytes"`
	// GoodputBps is the TCP payload rate the wire rate allows (1448 of
	// every 1538 wire bytes with timestamps on Ethernet).
	GoodputBps float64 `json:"goodput_bps"`
}

// RunPath is a run's own path.
type RunPath struct {
	RTTSeconds float64 `json:"rtt_s"`
	RateBps    float64 `json:"rate_bps"` // on the wire; 0 = unlimited
	QueueBytes int64   `json:"queue_bytes,omitempty"`
	// Veth marks the raw kernel path: a veth pair, no emulator.
	Veth bool `json:"veth,omitempty"`
	// Knobs are the path's impairments as emulate flags
	// ("down-policer=50Mbit/s/64KB"); ServerCPU the server's share of a
	// core; IPv6 that the ends talked over IPv6.
	Knobs     []string `json:"knobs,omitempty"`
	ServerCPU float64  `json:"server_cpu,omitempty"`
	IPv6      bool     `json:"ipv6,omitempty"`
	// Competing is how many bulk cubic downloads shared the path.
	Competing int `json:"competing,omitempty"`
}

// Host describes the machine the lab ran on.
type Host struct {
	Hostname string `json:"hostname"`
	Kernel   string `json:"kernel"`
	CPUs     int    `json:"cpus"`
	Version  string `json:"longhaul_version,omitempty"`
}

// Chart tells the report what to draw from the runs: one series per
// distinct Run.Series (in first-seen order, or Series if given), x from
// Run.X, y from the metric named Metric (median over repeats, with the
// min..max spread), and, if Model names a model field, the model's value
// as a dashed line per series.
type Chart struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Kind   string `json:"kind"` // "line" (x numeric), "bar" (x = case labels) or "tcpinfo" (samples over time)
	XLabel string `json:"x_label"`
	XLog   bool   `json:"x_log,omitempty"`
	XUnit  string `json:"x_unit,omitempty"` // "bytes", "count", "" (plain)
	YLabel string `json:"y_label"`
	YLog   bool   `json:"y_log,omitempty"`
	YUnit  string `json:"y_unit,omitempty"` // "bps", "s", "rounds", "bytes"
	// Metric is a key of Run.Metrics; Model a key of Run.Model ("" none).
	Metric string   `json:"metric"`
	Model  string   `json:"model,omitempty"`
	Series []string `json:"series,omitempty"` // restrict and order series
	// Marks are vertical reference lines, e.g. the BDP knee.
	Marks []Mark `json:"marks,omitempty"`
	// Note is a sentence printed under the chart.
	Note string `json:"note,omitempty"`
	// Case and End choose the run and the end whose tcp_info samples a
	// "tcpinfo" chart draws (the first valid run of Case).
	Case string `json:"case,omitempty"`
	End  string `json:"end,omitempty"`
}

// Mark is a labelled vertical line at X.
type Mark struct {
	X     float64 `json:"x"`
	Label string  `json:"label"`
}

// Run is one measured run of one case.
type Run struct {
	Kind     string `json:"kind" const:"run"`
	Scenario string `json:"scenario"`
	// Case identifies the setting (unique within the scenario); Series
	// and X place it on the charts; Label is the human name in tables.
	Case   string  `json:"case"`
	Series string  `json:"series"`
	X      float64 `json:"x"`
	Label  string  `json:"label"`
	Repeat int     `json:"repeat"` // 1-based
	// Attempt is the run's attempt at its repeat when an invalid one was
	// made again (lab --retry-invalid): 2 for the first retry; 0
	// (absent) for the first.
	Attempt int `json:"attempt,omitempty"`
	// Path is this run's own path when its case has one (the header's
	// otherwise).
	Path *RunPath `json:"path,omitempty"`
	// Valid is false when the result must not be used: the emulator
	// overloaded, or the peer failed. Invalid says why.
	Valid   bool      `json:"valid"`
	Invalid string    `json:"invalid,omitempty"`
	Started time.Time `json:"started"`
	CC      string    `json:"cc"`
	// Settings are the values in effect, read back from the kernel per
	// end ("client", "server"): sysctls by dotted key, route metrics as
	// "route.initcwnd"/"route.initrwnd", socket options as "so.rcvbuf".
	Settings map[string]map[string]string `json:"settings"`
	// Metrics are the measured numbers: throughput_bps (steady state),
	// avg_bps, bytes, seconds, ttlb_s, rounds, streams, ... (SI units).
	Metrics map[string]float64 `json:"metrics"`
	// Model holds the path model's predictions for the same names.
	Model map[string]float64 `json:"model,omitempty"`
	// Notes explain the run in words (e.g. "-w 16M clamped to rmem_max").
	Notes []string `json:"notes,omitempty"`
	// Link is the emulator's statistics for the run (emu.Stats JSON).
	Link json.RawMessage `json:"link,omitempty"`
	// Samples are tcp_info samples from both ends at a fixed interval.
	Samples []Sample `json:"samples,omitempty"`
	// Capture is the pcap of the run, relative to the results file.
	Capture string `json:"capture,omitempty"`
	// Truth is the failure the run's path had (the causes matrix), and
	// Named what each tool named ("-": nothing), by tool.
	Truth string            `json:"truth,omitempty"`
	Named map[string]string `json:"named,omitempty"`
}

// Sample is one tcp_info reading of one socket (struct tcp_info,
// include/uapi/linux/tcp.h), converted to bytes, seconds and bits/s.
type Sample struct {
	T        float64 `json:"t"`   // seconds since the run started
	End      string  `json:"end"` // "client" or "server"
	Sock     string  `json:"sock"`
	State    string  `json:"state,omitempty"`
	CwndB    int64   `json:"cwnd_bytes"`     // snd_cwnd x snd_mss
	InFlight int64   `json:"inflight_bytes"` // (unacked - sacked - lost + retrans) x snd_mss
	SndWnd   int64   `json:"snd_wnd_bytes"`  // peer's advertised window (tcpi_snd_wnd)
	RcvSpace int64   `json:"rcv_space_bytes"`
	RTT      float64 `json:"rtt_s"`
	// Counters, cumulative since the socket opened.
	BytesAcked int64 `json:"bytes_acked"`
	// Delivered is bytes_acked plus the SACKed segments (tcpi_sacked x
	// snd_mss): unlike bytes_acked it does not stall behind a hole while
	// loss is repaired, and unlike tcpi_delivered x snd_mss it does not
	// count a partial segment as a full one.
	Delivered     int64   `json:"delivered_bytes,omitempty"`
	BytesReceived int64   `json:"bytes_received"`
	Retrans       int64   `json:"total_retrans"`
	DeliveryRate  float64 `json:"delivery_rate_bps"`
	BusyS         float64 `json:"busy_s"`
	RwndLimitedS  float64 `json:"rwnd_limited_s"`
	SndbufLimS    float64 `json:"sndbuf_limited_s"`
	NotSent       int64   `json:"notsent_bytes"`
	// The kernel's reordering counters (flows.Sock), when it saw any.
	ReordSeen  int64 `json:"reord_seen,omitempty"`
	Reordering int64 `json:"reordering,omitempty"`
	DSACKDups  int64 `json:"dsack_dups,omitempty"`
	RcvOOO     int64 `json:"rcv_ooo_packets,omitempty"`
}

// File is a whole results file in memory.
type File struct {
	Header Header
	Runs   []Run
	// Dropped describes a truncated last line that was left out (a run
	// killed while writing), for the reader to say so; "" when none.
	Dropped string
}

// Writer appends lines to a results stream.
type Writer struct {
	enc *json.Encoder
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{enc: json.NewEncoder(w)} }

// Header writes the header line; it fills Kind and Schema.
func (w *Writer) Header(h Header) error {
	h.Kind, h.Schema = "header", Schema
	return w.enc.Encode(h)
}

// Run writes one run line; it fills Kind.
func (w *Writer) Run(r Run) error {
	r.Kind = "run"
	return w.enc.Encode(r)
}

// ErrSchema is returned for a file of another schema or none.
var ErrSchema = errors.New("not a longhaul lab results file")

// Read parses a results stream. A truncated last line (a run that was
// killed while writing) is ignored; any other bad line is an error
// naming its line number.
func Read(r io.Reader) (*File, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20) // grows to a line's length
	var f File
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return nil, pendingErr
		}
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var k struct {
			Kind   string `json:"kind"`
			Schema string `json:"schema"`
		}
		if err := json.Unmarshal(b, &k); err != nil {
			if f.Header.Schema == "" {
				return nil, fmt.Errorf("results: line %d is not JSON: %w", line, ErrSchema)
			}
			pendingErr = fmt.Errorf("results: line %d: %w", line, err)
			continue
		}
		switch k.Kind {
		case "header":
			if k.Schema != Schema {
				return nil, fmt.Errorf("results: line %d: schema %q: %w (want %s)", line, k.Schema, ErrSchema, Schema)
			}
			if err := json.Unmarshal(b, &f.Header); err != nil {
				return nil, fmt.Errorf("results: line %d: header: %w", line, err)
			}
		case "run":
			if f.Header.Schema == "" {
				return nil, fmt.Errorf("results: line %d: run before the header: %w", line, ErrSchema)
			}
			var run Run
			if err := json.Unmarshal(b, &run); err != nil {
				return nil, fmt.Errorf("results: line %d: run: %w", line, err)
			}
			f.Runs = append(f.Runs, run)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("results: %w", err)
	}
	if f.Header.Schema == "" {
		return nil, fmt.Errorf("results: no header line: %w", ErrSchema)
	}
	if pendingErr != nil {
		f.Dropped = pendingErr.Error()
	}
	return &f, nil
}

// Summary aggregates the valid runs of one case.
type Summary struct {
	Case, Series, Label string
	X                   float64
	// N counts valid runs, Invalid the others.
	N, Invalid int
	// Median, Min and Max per metric over valid runs.
	Median, Min, Max map[string]float64
	// Model is the first run's model (the model does not vary by repeat).
	Model map[string]float64
}

// Summarize groups runs by case in first-seen order.
func Summarize(runs []Run) []Summary {
	idx := map[string]int{}
	var out []Summary
	vals := map[string]map[string][]float64{}
	for _, r := range runs {
		i, ok := idx[r.Case]
		if !ok {
			i = len(out)
			idx[r.Case] = i
			out = append(out, Summary{Case: r.Case, Series: r.Series, Label: r.Label, X: r.X, Model: r.Model,
				Median: map[string]float64{}, Min: map[string]float64{}, Max: map[string]float64{}})
			vals[r.Case] = map[string][]float64{}
		}
		if !r.Valid {
			out[i].Invalid++
			continue
		}
		out[i].N++
		for k, v := range r.Metrics {
			vals[r.Case][k] = append(vals[r.Case][k], v)
		}
	}
	for i := range out {
		for k, v := range vals[out[i].Case] {
			out[i].Median[k] = Median(v)
			out[i].Min[k] = slices.Min(v)
			out[i].Max[k] = slices.Max(v)
		}
	}
	return out
}

// Median returns the median of v (the mean of the middle two for an even
// count); NaN for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// JSONSchema is the JSON Schema (draft 2020-12) of one line of a results
// file; a test validates real output against it.
//
//go:embed schema.json
var JSONSchema []byte
