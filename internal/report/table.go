package report

import (
	"fmt"
	"strings"

	"github.com/longhaul/longhaul/internal/results"
)

// Table is the summary table the report and `longhaul lab` print: per
// case, the header's columns (median, min..max) if it has any, else the
// first chart's metric beside the model.
func Table(h results.Header, sums []results.Summary) ([]string, []Row) {
	if len(h.Columns) > 0 {
		return columnTable(h.Columns, sums)
	}
	if len(h.Charts) == 0 {
		return nil, nil
	}
	c := h.Charts[0]
	return []string{"case", "runs", c.YLabel + " (median)", "min .. max", "model", "measured / model"}, table(c, sums)
}

// runsCell counts a case's valid runs and its invalid ones.
func runsCell(sm results.Summary) string {
	s := fmt.Sprint(sm.N)
	if sm.Invalid > 0 {
		s += fmt.Sprintf(" (+%d invalid)", sm.Invalid)
	}
	return s
}

// columnTable is the table of a scenario's own columns. A case label
// that stands for runs on more than one path (lab causes on both shapes)
// gets the path (the summary's series) in a column of its own before it.
func columnTable(cols []results.Column, sums []results.Summary) ([]string, []Row) {
	head := []string{"case", "runs"}
	paths := sharedLabels(sums)
	if paths {
		head = append([]string{"path"}, head...)
	}
	for _, c := range cols {
		head = append(head, c.Label)
	}
	var rows []Row
	for _, sm := range sums {
		r := Row{sm.Label, runsCell(sm)}
		if paths {
			r = append(Row{sm.Series}, r...)
		}
		for _, c := range cols {
			v, ok := sm.Median[c.Metric]
			if !ok {
				r = append(r, "-")
				continue
			}
			cell := Format(v, c.Unit)
			if lo, hi := Format(sm.Min[c.Metric], c.Unit), Format(sm.Max[c.Metric], c.Unit); sm.N > 1 && lo != hi {
				cell += " (" + lo + " .. " + hi + ")"
			}
			r = append(r, cell)
		}
		rows = append(rows, r)
	}
	return head, rows
}

// sharedLabels: two summaries share a label under different series.
func sharedLabels(sums []results.Summary) bool {
	series := map[string]string{}
	for _, sm := range sums {
		if s, ok := series[sm.Label]; ok && s != sm.Series {
			return true
		}
		series[sm.Label] = sm.Series
	}
	return false
}

// table summarises the first chart's metric per case.
func table(c results.Chart, sums []results.Summary) []Row {
	var rows []Row
	for _, sm := range sums {
		r := Row{sm.Label, runsCell(sm), "-", "-", "-", "-"}
		if v, ok := sm.Median[c.Metric]; ok {
			r[2] = Format(v, c.YUnit)
			r[3] = Format(sm.Min[c.Metric], c.YUnit) + " .. " + Format(sm.Max[c.Metric], c.YUnit)
			if mv, ok := sm.Model[c.Model]; ok && mv > 0 {
				r[4], r[5] = Format(mv, c.YUnit), fmt.Sprintf("%.2f", v/mv)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// numeric: a table cell that reads as a number ("94.1 Mbit/s", "9/10",
// "3 (+1 invalid)", "-" for none), right-aligned; words stay left.
func numeric(cell string) bool {
	if cell == "-" {
		return true
	}
	c := strings.TrimLeft(cell, "+-")
	return c != "" && c[0] >= '0' && c[0] <= '9'
}
