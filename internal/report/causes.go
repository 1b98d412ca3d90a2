package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
)

// Matrix is a table of counts: the causes matrix's score per case and
// tool, or one tool's confusion matrix (the failure the path had against
// the cause named).
type Matrix struct {
	Title string   `json:"title"`
	Note  string   `json:"note,omitempty"`
	Head  []string `json:"head"`
	Rows  []Row    `json:"rows"`
}

// CauseMatrices are the causes matrix's tables, from its valid runs: the
// score of each case per tool (right of runs, documented weaker verdicts
// apart, what was named instead), then each tool's confusion matrix.
// Runs without a truth make none.
func CauseMatrices(runs []results.Run) []Matrix {
	var judged []results.Run
	for _, r := range runs {
		if r.Valid && r.Truth != "" && r.Named != nil {
			judged = append(judged, r)
		}
	}
	if len(judged) == 0 {
		return nil
	}
	out := []Matrix{causeScore(judged)}
	for _, tool := range scenario.CauseTools() {
		out = append(out, confusion(tool, judged))
	}
	return out
}

// causeScore is right/runs per case and tool, the weaker verdicts as
// "+Nw", and the names given instead of the truth.
func causeScore(runs []results.Run) Matrix {
	tools := scenario.CauseTools()
	m := Matrix{Title: "Named right, per case and tool",
		Note: "right / valid runs; +Nw: a documented weaker verdict where the tool cannot see the cause (a capture or tcp_info cannot show another process's CPU, nor that a middlebox removed an option, nor random loss that did not hold a download running at the link's rate: at-link-rate); clean: nothing named (a capture or socket may flag the clean queue's delay as bufferbloat)",
		Head: append(append([]string{"path", "case"}, tools...), "named instead")}
	total := map[string][3]int{}
	for _, cs := range groupCases(runs) {
		row := Row{cs[0].Series, cs[0].Label}
		var instead []string
		for _, tool := range tools {
			var right, weak int
			wrong := map[string]int{}
			for _, r := range cs {
				switch got := r.Named[tool]; scenario.JudgeCause(tool, r.Truth, got) {
				case scenario.Right:
					right++
				case scenario.Weaker:
					weak++
				default:
					wrong[got]++
				}
			}
			row = append(row, scoreCell(right, weak, len(cs)))
			t := total[tool]
			total[tool] = [3]int{t[0] + right, t[1] + weak, t[2] + len(cs)}
			if len(wrong) > 0 {
				instead = append(instead, tool+": "+countList(wrong))
			}
		}
		m.Rows = append(m.Rows, append(row, strings.Join(instead, "; ")))
	}
	row := Row{"all", fmt.Sprintf("%d runs", len(runs))}
	for _, tool := range tools {
		t := total[tool]
		row = append(row, scoreCell(t[0], t[1], t[2]))
	}
	m.Rows = append(m.Rows, append(row, ""))
	return m
}

func scoreCell(right, weak, n int) string {
	s := fmt.Sprintf("%d/%d", right, n)
	if weak > 0 {
		s += fmt.Sprintf(" (+%dw)", weak)
	}
	return s
}

// countList is "name xN, ..." in name order.
func countList(n map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%s x%d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

// groupCases groups runs by case, in first-seen order.
func groupCases(runs []results.Run) [][]results.Run {
	var out [][]results.Run
	idx := map[string]int{}
	for _, r := range runs {
		i, ok := idx[r.Case]
		if !ok {
			i = len(out)
			idx[r.Case] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

// confusion is one tool's counts of each named cause per truth, over all
// paths: rows in the order the cases came, columns the truths in that
// order, then the other names ("-": nothing named, "?": the tool gave no
// verdict).
func confusion(tool string, runs []results.Run) Matrix {
	var truths []string
	counts := map[string]map[string]int{}
	others := map[string]int{}
	for _, r := range runs {
		if !slices.Contains(truths, r.Truth) {
			truths = append(truths, r.Truth)
			counts[r.Truth] = map[string]int{}
		}
		got := r.Named[tool]
		counts[r.Truth][got]++
		others[got]++
	}
	cols := slices.Clone(truths)
	for _, k := range slices.Sorted(maps.Keys(others)) {
		if !slices.Contains(cols, k) && k != scenario.Clean && (k != scenario.NoCause || !slices.Contains(truths, scenario.Clean)) {
			cols = append(cols, k)
		}
	}
	m := Matrix{Title: "Confusion matrix: " + tool, Head: append([]string{"path had \\ " + tool + " named"}, cols...),
		Note: `rows: the failure the emulated path had; columns: the cause named ("clean" and "-": none, "?": no verdict)`}
	for _, t := range truths {
		row := Row{t}
		for _, c := range cols {
			n := counts[t][c]
			if c == scenario.Clean {
				n = counts[t][scenario.NoCause]
			}
			row = append(row, cell(n))
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

func cell(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}
