package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/longhaul/longhaul/internal/atomicfile"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/longhaul/longhaul/internal/report"
)

func newReportCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "report RESULTS.jsonl|ANALYSIS.json|TEST.json|TEST-URL.json [-o report.html]",
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
its charting library and data and works offline.`,
		Example: `  longhaul report longhaul-lab/buffers-20261122-101500/results.jsonl -o buffers.html
  longhaul analyze upload.pcap --timeline > upload.json && longhaul report upload.json -o upload.html
  longhaul test server.example.net --auth token -o run1 && longhaul report run1/test.json`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("report needs one results file (see %s --help)", c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
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
	c.Flags().StringVarP(&out, "output", "o", "", "HTML file to write (default report.html beside RESULTS)")
	return c
}

// writeReport renders a results file as HTML; the file is replaced only
// once the page is complete.
func writeReport(ctx context.Context, in, out string, warn io.Writer) error {
	f, err := openRegular("report:", in, "a results.jsonl written by longhaul lab or a longhaul analyze --json document")
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReader(ctxReader{ctx, f})
	page, dropped, err := report.Load(br)
	if err != nil {
		return fmt.Errorf("%w: %s", err, in)
	}
	if dropped != "" {
		fmt.Fprintf(warn, "longhaul: report: %s: left out a damaged last line (%s): a run killed while writing?\n", in, dropped)
	}
	var b bytes.Buffer
	if err := report.Render(&b, page); err != nil {
		return err
	}
	return atomicfile.WriteFile(out, b.Bytes(), 0o644)
}
