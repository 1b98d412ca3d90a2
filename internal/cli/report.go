package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/longhaul/longhaul/internal/atomicfile"
	"github.com/longhaul/longhaul/internal/report"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
)

func newReportCmd() *cobra.Command {
	var out string
	var text bool
	c := &cobra.Command{
		Use:   "report RESULTS.jsonl...|ANALYSIS.json|TEST.json|TEST-URL.json [-o report.html] [--text]",
		Short: "Render lab results, a capture analysis or a two-host test as one self-contained HTML report",
		Long: `report turns a results file written by longhaul lab (results.jsonl, schema
longhaul.lab/v1) into one HTML file with the charts (throughput vs buffer
size, time to last byte vs object size, upload times, parallel streams,
tcp_info over time), the model beside each measurement and a summary
table. Given the output of longhaul analyze --timeline instead, it draws
each big flow's time-sequence graph (data, ACK, ACK + receive window,
retransmissions and zero-window marks) and bytes in flight against the
window. Given a longhaul test result (longhaul.test/v1), it shows each
direction's verdict, the phases with the model beside them, throughput
over time with the model's line and both ends' tcp_info; given a test
of a URL (longhaul.test-url/v1), the download's throughput and this
host's receive window over time. The file embeds
its charting library and data and works offline.

Several results files of one experiment (a long matrix run in parts with
--case, or repeated another day) make one report of all their runs: the
same scenario, congestion control and path; the page names every build
that made a part (a part made by an older build carries that build's
verdicts: longhaul test --judge judges its documents again). --text
prints the tables the lab prints at the end of a run instead of writing
HTML.

The file - reads the results or the document from standard input (with
-o, or --text): longhaul analyze x.pcap --timeline | longhaul report - -o x.html.`,
		Example: `  longhaul report longhaul-lab/buffers-20261122-101500/results.jsonl -o buffers.html
  longhaul analyze upload.pcap --timeline > upload.json && longhaul report upload.json -o upload.html
  longhaul test server.example.net --auth token -o run1 && longhaul report run1/test.json
  # one matrix run in two parts: one report, and its tables on the terminal
  longhaul report causes-1/results.jsonl causes-2/results.jsonl -o causes.html
  longhaul report causes-1/results.jsonl causes-2/results.jsonl --text`,
		Args: func(c *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("report needs a results file (see %s --help)", c.CommandPath())
			case countStdin(args) > 1:
				return usagef("report: - (standard input) can be read once: give it once")
			case len(args) == 1 && args[0] == "-" && out == "" && !text:
				return usagef("report -: name the HTML file with -o FILE.html (standard input has no directory to put report.html in)")
			case len(args) > 1 && out == "" && !text:
				return usagef("report: name the report of %d results files with -o FILE.html (or print their tables with --text)", len(args))
			case text && out != "":
				return usagef("report: --text prints the tables and writes no HTML: give -o or --text, not both")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if text || len(args) > 1 {
				f, err := loadLabResults(c.Context(), args, c.ErrOrStderr())
				if err != nil {
					return err
				}
				if text {
					printLabTable(c.OutOrStdout(), f.Header, f.Runs)
					return nil
				}
				return writeLabReport(f, out, c.OutOrStdout())
			}
			if out == "" {
				out = filepath.Join(filepath.Dir(args[0]), "report.html")
			}
			if err := writeReport(c.Context(), args[0], out, c.ErrOrStderr()); err != nil {
				return err
			}
			fmt.Fprintln(c.OutOrStdout(), out)
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "HTML file to write (default report.html beside RESULTS; needed for several)")
	c.Flags().BoolVar(&text, "text", false, "print the summary tables (and the causes matrix's scores) of lab results instead of writing HTML")
	return c
}

// openReport opens what report reads: - is standard input (a pipe, read
// so that Ctrl-C stops it); a name must be a regular file, read as it
// always was (a FIFO is refused at once rather than waited on: a report
// is made of files a run wrote).
func openReport(ctx context.Context, in, want string) (io.ReadCloser, error) {
	if in == "-" {
		return openInput(ctx, "report:", in, want)
	}
	f, err := openRegular("report:", in, want)
	if err != nil {
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{ctxReader{ctx, f}, f}, nil
}

// countStdin counts the arguments that name standard input.
func countStdin(args []string) int {
	n := 0
	for _, a := range args {
		if a == "-" {
			n++
		}
	}
	return n
}

// loadLabResults reads lab results files and merges them.
func loadLabResults(ctx context.Context, paths []string, warn io.Writer) (*results.File, error) {
	var files []*results.File
	for _, in := range paths {
		f, err := openReport(ctx, in, "a results.jsonl written by longhaul lab")
		if err != nil {
			return nil, err
		}
		res, err := results.Read(bufio.NewReader(f))
		f.Close()
		if errors.Is(err, results.ErrSchema) {
			return nil, usagef("report: %s: %v: several files, or --text, take results written by longhaul lab", in, err)
		}
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", in, err)
		}
		if res.Dropped != "" {
			fmt.Fprintf(warn, "longhaul: report: %s: left out a damaged last line (%s): a run killed while writing?\n", in, res.Dropped)
		}
		files = append(files, res)
	}
	merged, err := results.Merge(files)
	if err != nil {
		return nil, usagef("report: %v", err)
	}
	return merged, nil
}

// writeLabReport renders merged lab results as HTML.
func writeLabReport(f *results.File, out string, stdout io.Writer) error {
	page, err := report.Build(f)
	if err != nil {
		return err
	}
	if err := writePage(page, out); err != nil {
		return err
	}
	fmt.Fprintln(stdout, out)
	return nil
}

// writeReport renders a results file as HTML; the file is replaced only
// once the page is complete.
func writeReport(ctx context.Context, in, out string, warn io.Writer) error {
	f, err := openReport(ctx, in, "a results.jsonl written by longhaul lab or a longhaul analyze --json document")
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	page, dropped, err := report.Load(br)
	if err != nil {
		return fmt.Errorf("%w: %s", err, in)
	}
	if dropped != "" {
		fmt.Fprintf(warn, "longhaul: report: %s: left out a damaged last line (%s): a run killed while writing?\n", in, dropped)
	}
	return writePage(page, out)
}

// writePage renders page as HTML to out, replaced only once complete.
func writePage(page *report.Page, out string) error {
	var b bytes.Buffer
	if err := report.Render(&b, page); err != nil {
		return err
	}
	return atomicfile.WriteFile(out, b.Bytes(), 0o644)
}

// printLabTable prints the summary table the report shows, then the
// scenario's headlines.
func printLabTable(w io.Writer, h results.Header, runs []results.Run) {
	sums := results.Summarize(runs)
	head, rows := report.Table(h, sums)
	printColumns(w, head, rows)
	for _, m := range report.CauseMatrices(runs) {
		fmt.Fprintf(w, "\n%s\n", m.Title)
		printColumns(w, m.Head, m.Rows)
	}
	for _, l := range scenario.Headlines(h, sums) {
		fmt.Fprintln(w, l)
	}
}

// printColumns prints a table's head and rows in aligned columns.
func printColumns(w io.Writer, head []string, rows []report.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
