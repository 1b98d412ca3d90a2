package report

import (
	"reflect"
	"testing"

	"github.com/longhaul/longhaul/internal/results"
)

func TestCauseMatrices(t *testing.T) {
	run := func(c, truth, test, analyze, flows string, valid bool) results.Run {
		return results.Run{Case: c, Series: "50 ms x 100 Mbit/s", Label: c, Truth: truth, Valid: valid,
			Named: map[string]string{"test": test, "analyze": analyze, "flows": flows}}
	}
	runs := []results.Run{
		run("clean", "clean", "-", "bufferbloat", "-", true),
		run("clean", "clean", "random-loss", "-", "-", true),
		run("policer", "policer", "policer", "shallow-buffer", "bufferbloat", true),
		run("policer", "policer", "policer", "policer", "?", true),
		run("policer", "policer", "-", "-", "-", false), // invalid: left out
		run("cpu", "cpu-bound", "cpu-bound", "-", "-", true),
	}
	ms := CauseMatrices(runs)
	if len(ms) != 4 {
		t.Fatalf("%d matrices, want the score and one per tool", len(ms))
	}
	score := ms[0]
	want := []Row{
		{"50 ms x 100 Mbit/s", "clean", "1/2", "2/2", "2/2", "test: random-loss x1"},
		{"50 ms x 100 Mbit/s", "policer", "2/2", "1/2 (+1w)", "0/2", "flows: ? x1, bufferbloat x1"},
		{"50 ms x 100 Mbit/s", "cpu", "1/1", "0/1 (+1w)", "0/1 (+1w)", ""},
		{"all", "5 runs", "4/5", "3/5 (+2w)", "2/5 (+1w)", ""},
	}
	if !reflect.DeepEqual(score.Rows, want) {
		t.Errorf("score rows\n%q\nwant\n%q", score.Rows, want)
	}
	an := ms[2]
	if an.Title != "Confusion matrix: analyze" || !reflect.DeepEqual(an.Head, []string{"path had \\ analyze named", "clean", "policer", "cpu-bound", "bufferbloat", "shallow-buffer"}) {
		t.Errorf("analyze's matrix: %s %q", an.Title, an.Head)
	}
	wantAn := []Row{{"clean", "1", "", "", "1", ""}, {"policer", "", "1", "", "", "1"}, {"cpu-bound", "1", "", "", "", ""}}
	if !reflect.DeepEqual(an.Rows, wantAn) {
		t.Errorf("analyze's rows %q, want %q", an.Rows, wantAn)
	}
	if CauseMatrices(runs[4:5]) != nil || CauseMatrices([]results.Run{{Case: "x", Valid: true}}) != nil {
		t.Error("matrices without valid judged runs")
	}
}

// The summary table names the path when one case label stands for runs
// on two paths (lab causes on both shapes), and only then.
func TestTablePathColumn(t *testing.T) {
	h := results.Header{Columns: []results.Column{{Metric: "single_bps", Label: "one stream (test)", Unit: "bps"}}}
	sum := func(c, series, label string, bps float64) results.Summary {
		return results.Summary{Case: c, Series: series, Label: label, N: 1, Median: map[string]float64{"single_bps": bps}}
	}
	both := []results.Summary{
		sum("50ms-100M-random-loss", "50 ms x 100 Mbit/s", "random loss 0.01%", 61e6),
		sum("100ms-500M-random-loss", "100 ms x 500 Mbit/s", "random loss 0.01%", 68e6),
	}
	head, rows := Table(h, both)
	if !reflect.DeepEqual(head, []string{"path", "case", "runs", "one stream (test)"}) ||
		!reflect.DeepEqual(rows[1], Row{"100 ms x 500 Mbit/s", "random loss 0.01%", "1", "68 Mbit/s"}) {
		t.Errorf("two paths: %q %q", head, rows)
	}
	one := []results.Summary{both[0], sum("50ms-100M-clean", "50 ms x 100 Mbit/s", "clean", 94e6)}
	if head, _ := Table(h, one); !reflect.DeepEqual(head, []string{"case", "runs", "one stream (test)"}) {
		t.Errorf("one path: %q", head)
	}
}

// Numbers right, words left: the page's table cells.
func TestNumericCells(t *testing.T) {
	for cell, want := range map[string]bool{"94.1 Mbit/s": true, "9/10": true, "3 (+1 invalid)": true, "-": true, "-0.2": true,
		"random loss 0.01%": false, "test: - x1": false, "": false, "policer": false} {
		if numeric(cell) != want {
			t.Errorf("numeric(%q) = %v", cell, !want)
		}
	}
}
