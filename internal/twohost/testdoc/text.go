package testdoc

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/units"
)

// FormatSeconds prints seconds as a duration: to 100 µs from a millisecond up,
// to the microsecond below (a loopback or LAN round trip of 30 µs read
// "0 s").
func FormatSeconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	if d >= time.Millisecond || d <= -time.Millisecond {
		return units.FormatDuration(d.Round(100 * time.Microsecond))
	}
	return units.FormatDuration(d.Round(time.Microsecond))
}

// WriteText prints a document for people.
func WriteText(w io.Writer, d *Doc) {
	fmt.Fprintf(w, "longhaul test %s: rtt min %s", d.Server, FormatSeconds(d.RTT.MinS))
	if d.RTT.LoadedS > 0 {
		fmt.Fprintf(w, ", under load %s", FormatSeconds(d.RTT.LoadedS))
	}
	fmt.Fprintf(w, "; phases of %s\n", FormatSeconds(d.PhaseLengthS))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nphase\tstreams\tthroughput\tverdicts (sender)\tended by")
	for _, p := range d.Phases {
		name, verdicts := p.Name, phaseVerdicts(d, p.Name)
		if p.CC != "" {
			name, verdicts = ccPhaseText(d, p)
		} else if u := d.UDPPhase; p.Name == PhaseUDP && u != nil {
			name, verdicts = fmt.Sprintf("udp (paced %s)", units.FormatRate(u.RateBps)), fmt.Sprintf("%d of %d datagrams arrived, queue %s", u.Received, u.Sent, FormatSeconds(u.QueueS))
		} else if x, ok := pacedOf(d, p); ok {
			name, verdicts = fmt.Sprintf("%s (paced %s)", p.Name, units.FormatRate(x.GrantedRateBps)), fmt.Sprintf("%s, lost %.2g%%", x.Verdict, 100*x.LossRate)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", name, p.Streams, units.FormatRate(p.ThroughputBps), verdicts, p.EndReason)
	}
	tw.Flush()
	for _, c := range d.Causes {
		fmt.Fprintf(w, "\npath: %s\n", c.Text)
	}
	for _, dir := range d.Directions {
		fmt.Fprintf(w, "\n%s (%s sends, %s receives): %s\n", dir.Name, dir.Sender, dir.Receiver, units.FormatRate(dir.ThroughputBps))
		fmt.Fprintf(w, "  limited by %s\n", dir.Limit.Text)
		// A share is the sender's time in the state: a direction judged
		// from the receiving end alone (an iperf3 download) has none.
		share := ""
		if dir.Flow.Share > 0 {
			share = fmt.Sprintf(" (%.0f%% of the steady half)", 100*dir.Flow.Share)
		}
		fmt.Fprintf(w, "  verdict %s%s: %s\n", dir.Flow.Verdict.Verdict, share, strings.TrimSpace(dir.Flow.Summary))
		for _, c := range dir.Seen {
			fmt.Fprintf(w, "  also seen: %s\n", c.Text)
		}
		if dir.Model.ExpectedBps > 0 {
			fmt.Fprintf(w, "  model %s from the %s's %s and the %s's %s: %s (measured %.0f%% of it)\n", units.FormatRate(dir.Model.ExpectedBps),
				dir.Receiver, dir.Model.ReceiverSettings, dir.Sender, dir.Model.SenderSettings, dir.Model.Note, 100*dir.Model.MeasuredVsModel)
		} else {
			fmt.Fprintf(w, "  model: %s\n", dir.Model.Note)
		}
		if dir.Model.AfterPlansBps > 0 {
			fmt.Fprintf(w, "  with both plans applied the model expects %s (limited by the %s)\n", units.FormatRate(dir.Model.AfterPlansBps), dir.Model.AfterPlansLimit)
		}
	}
	if c := d.Capacity; c != nil {
		more := ""
		if c.AtLeast {
			more = "at least "
		}
		fmt.Fprintf(w, "\npath capacity: %s%s with %d streams\n", more, units.FormatRate(c.Bps), c.Streams)
	}
	writePlans(w, d)
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// pacedOf is the paced download (a loss probe) a phase record is.
func pacedOf(d *Doc, p Phase) (PacedPhase, bool) {
	if p.Name != PhaseDownload || p.RateBps <= 0 {
		return PacedPhase{}, false
	}
	for _, x := range d.PacedPhases {
		if p.RateBps == x.GrantedRateBps {
			return x, true
		}
	}
	return PacedPhase{}, false
}

// ccPhaseText names a download run with a congestion control asked of
// the server, and its verdict.
func ccPhaseText(d *Doc, p Phase) (name, verdict string) {
	for _, x := range d.CCPhases {
		if x.CC != p.CC {
			continue
		}
		if !x.Granted {
			return p.Name + " (" + p.CC + " asked)", x.Verdict + "; the server sent with its default: it lacks " + p.CC + " or predates the request"
		}
		return p.Name + " (" + p.CC + ")", x.Verdict
	}
	return p.Name + " (" + p.CC + ")", diagnose.Unknown
}

func phaseVerdicts(d *Doc, name string) string {
	if name == PhaseCapacity && d.Capacity != nil {
		count := map[string]int{}
		var order []string
		for _, v := range d.Capacity.Verdicts {
			if count[v] == 0 {
				order = append(order, v)
			}
			count[v]++
		}
		var parts []string
		for _, v := range order {
			parts = append(parts, fmt.Sprintf("%d %s", count[v], v))
		}
		return strings.Join(parts, ", ")
	}
	for _, dir := range d.Directions {
		if dir.Name == name {
			return dir.Flow.Verdict.Verdict
		}
	}
	return "-"
}

// writePlans prints the document's fix lines: decided once (setFixes),
// printed here and shown by the report as they are.
func writePlans(w io.Writer, d *Doc) {
	if len(d.Fix) == 0 {
		return
	}
	fmt.Fprintln(w)
	for _, l := range d.Fix {
		fmt.Fprintln(w, l)
	}
}

// CompareRow is one direction of a before/after comparison.
type CompareRow struct {
	Direction    string  `json:"direction"`
	BeforeBps    float64 `json:"before_bps"`
	AfterBps     float64 `json:"after_bps"`
	Gain         float64 `json:"gain"`
	PredictedBps float64 `json:"predicted_bps,omitempty"` // the model's after-plans value in before
	AfterVsModel float64 `json:"after_over_predicted,omitempty"`
	BeforeLimit  string  `json:"before_limit"`
	AfterLimit   string  `json:"after_limit"`
}

// Compare sets two documents of the same path side by side.
func Compare(before, after *Doc) ([]CompareRow, error) {
	var rows []CompareRow
	for _, b := range before.Directions {
		for _, a := range after.Directions {
			if a.Name != b.Name {
				continue
			}
			r := CompareRow{Direction: b.Name, BeforeBps: b.ThroughputBps, AfterBps: a.ThroughputBps,
				PredictedBps: b.Model.AfterPlansBps, BeforeLimit: b.Limit.Host, AfterLimit: a.Limit.Host}
			if b.ThroughputBps > 0 {
				r.Gain = a.ThroughputBps / b.ThroughputBps
			}
			if r.PredictedBps > 0 {
				r.AfterVsModel = a.ThroughputBps / r.PredictedBps
			}
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, errors.New("compare: the two results share no direction (download, upload)")
	}
	return rows, nil
}

// WriteCompare prints a comparison.
func WriteCompare(w io.Writer, rows []CompareRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "direction\tbefore\tafter\tgain\tmodel predicted\tafter/predicted\tlimited by (before -> after)")
	for _, r := range rows {
		pred, ratio := "-", "-"
		if r.PredictedBps > 0 {
			pred, ratio = units.FormatRate(r.PredictedBps), fmt.Sprintf("%.0f%%", 100*r.AfterVsModel)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\t%s\t%s -> %s\n", r.Direction, units.FormatRate(r.BeforeBps), units.FormatRate(r.AfterBps),
			r.Gain, pred, ratio, r.BeforeLimit, r.AfterLimit)
	}
	tw.Flush()
}

// PlanLines are a plan's items as test prints them, one a line (an
// application's socket options left to the plan files).
func PlanLines(items []plan.Item) []string {
	var out []string
	for _, it := range items {
		if it.Kind == plan.KindApp {
			continue // about applications' socket options: see the plan files
		}
		out = append(out, PlanLine(it))
	}
	return out
}

// PlanLine is one item of a plan as test prints it.
func PlanLine(it plan.Item) string { return fmt.Sprintf("%s: %s -> %s", it.Key, it.Current, it.New) }
