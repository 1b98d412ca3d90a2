// Command evalcaptures scores analyze against the labelled corpus of
// public captures in testdata/corpus/manifest.tsv: for every flow of the
// manifest whose capture is present under -root (at SOURCE/PATH, with the
// manifest's sha256), it runs the analysis and checks the verdict against
// the accepted ones, the flags the label requires, the verdicts it marks
// wrong, and the output invariants (tcpflow.CheckInvariants). It fetches
// nothing: captures that are absent are counted as such. It prints one
// line per miss and the score; the exit status is 1 when a flow gets a
// verdict marked wrong or breaks an invariant.
//
// -list prints every flow of every present capture with its verdict (to
// find the flow a new label is about).
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/longhaul/longhaul/internal/tcpflow"
)

// label is one line of the manifest.
type label struct {
	source, commit, path, sha, flow string
	expect, also, wrong, flags      []string
	why                             string
	line                            int
}

func main() {
	manifest := flag.String("manifest", "testdata/corpus/manifest.tsv", "the labelled corpus")
	root := flag.String("root", "testdata/corpus/cache", "where the captures are: ROOT/SOURCE/PATH (SOURCE is owner+repo)")
	list := flag.Bool("list", false, "print every flow of every present capture with its verdict")
	verbose := flag.Bool("v", false, "print every flow's result, not only the misses")
	flag.Parse()
	labels, err := readManifest(*manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "evalcaptures:", err)
		os.Exit(2)
	}
	os.Exit(run(os.Stdout, labels, *root, *list, *verbose))
}

func readManifest(path string) ([]label, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer fh.Close()
	var out []label
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 10 {
			return nil, fmt.Errorf("manifest line %d: %d fields, want 10 (source commit path sha256 flow expect also wrong flags why)", n, len(f))
		}
		out = append(out, label{source: f[0], commit: f[1], path: f[2], sha: f[3], flow: f[4],
			expect: split(f[5]), also: split(f[6]), wrong: split(f[7]), flags: split(f[8]), why: f[9], line: n})
	}
	return out, sc.Err()
}

func split(s string) []string {
	if s == "" || s == "-" {
		return nil
	}
	return strings.Split(s, ",")
}

// result of one capture file, analysed once for all its labels.
type result struct {
	an  *tcpflow.Analysis
	err error
}

func run(w io.Writer, labels []label, root string, list, verbose bool) int {
	cache := map[string]result{}
	var present, ok, wrongN, inv, absent int
	for _, l := range labels {
		file := filepath.Join(root, strings.ReplaceAll(l.source, "/", "+"), l.path)
		r, seen := cache[file]
		if !seen {
			r = analyzeFile(file, l.sha)
			cache[file] = r
			if list && r.err == nil {
				for _, f := range r.an.Flows {
					fmt.Fprintf(w, "%s\t%s>%s\t%s\t%.2f\t%v\t%d\t%s\n", l.path, f.Sender, f.Receiver, f.Verdict.Verdict, f.Share, f.Flags, f.Bytes, f.Summary)
				}
			}
		}
		if errors.Is(r.err, os.ErrNotExist) {
			absent++
			continue
		}
		if r.err != nil {
			fmt.Fprintf(w, "MISS  line %d %s: %v\n", l.line, l.path, r.err)
			present++
			continue
		}
		present++
		f := findFlow(r.an, l.flow)
		if f == nil {
			fmt.Fprintf(w, "MISS  line %d %s %s: flow not found\n", l.line, l.path, l.flow)
			continue
		}
		msgs := tcpflow.CheckInvariants(f)
		if len(msgs) > 0 {
			inv++
		}
		got := f.Verdict.Verdict
		var bad []string
		switch {
		case slices.Contains(l.wrong, got):
			wrongN++
			bad = append(bad, "WRONG verdict "+got)
		case !slices.Contains(l.expect, got) && !slices.Contains(l.also, got):
			bad = append(bad, "verdict "+got+" not accepted")
		}
		for _, fl := range l.flags {
			if !slices.Contains(f.Flags, fl) {
				bad = append(bad, "missing flag "+fl)
			}
		}
		bad = append(bad, msgs...)
		if len(bad) == 0 {
			ok++
			if verbose {
				fmt.Fprintf(w, "ok    line %d %s %s: %s %v\n", l.line, l.path, l.flow, got, f.Flags)
			}
			continue
		}
		fmt.Fprintf(w, "MISS  line %d %s %s: %s (want %s; label: %s)\n      %s\n", l.line, l.path, l.flow, strings.Join(bad, "; "),
			strings.Join(append(append([]string(nil), l.expect...), l.also...), "|"), l.why, f.Summary)
	}
	pct := 0.0
	if present > 0 {
		pct = 100 * float64(ok) / float64(present)
	}
	fmt.Fprintf(w, "score: %d/%d flows accepted (%.1f%%), %d wrong, %d with invariant violations, %d labels whose capture is absent\n", ok, present, pct, wrongN, inv, absent)
	if wrongN > 0 || inv > 0 {
		return 1
	}
	return 0
}

func analyzeFile(file, sha string) result {
	b, err := os.ReadFile(file)
	if err != nil {
		return result{err: err}
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != sha {
		return result{err: fmt.Errorf("sha256 %s, manifest says %s: another version of the file", got, sha)}
	}
	an, err := tcpflow.Analyze(strings.NewReader(string(b)), tcpflow.Options{})
	if an == nil {
		return result{err: err}
	}
	return result{an: an}
}

// findFlow finds the flow whose main direction is "sender>receiver", or
// either way round.
func findFlow(an *tcpflow.Analysis, flow string) *tcpflow.FlowReport {
	a, b, _ := strings.Cut(flow, ">")
	for _, f := range an.Flows {
		if (f.Client == a && f.Server == b) || (f.Client == b && f.Server == a) {
			return f
		}
	}
	return nil
}
