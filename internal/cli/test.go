//go:build linux && !longhaul_portable

package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/atomicfile"
	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/secret"
	"github.com/longhaul/longhaul/internal/twohost"
	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type testArgs struct {
	auth, tlsPin, out, netns string
	download, upload         bool
	streams, rounds          int
	duration                 units.Duration
	rate                     units.Rate
	json, compare            bool
	ccs                      ccListFlag
	lossProbes               bool
	judge                    string
	// test URL --upload's body: generated (size) or a file, and the
	// method.
	size         units.Size
	body, method string
}

// testLong is test's help.
const testLong = `test measures the path between this host (the client) and one running
longhaul serve (port 9978 unless given), and explains it: both hosts'
settings (snapshots) are exchanged, the RTT is measured idle and under
load, a download (the server sends) and an upload (this host sends) run
on one stream each, long enough to leave slow start (--rounds round trips,
at least 2 s, within the server's caps), then a download on --streams
parallel streams estimates the path's capacity. Both ends sample
tcp_info every 100 ms (the server streams its samples); the sender's
busy, receive-window-limited and send-buffer-limited times decide the
verdict, which names the host and the setting ("the server's send
buffer: net.ipv4.tcp_wmem max 4 MiB ..."). Beside it: the path model's
prediction from both hosts' settings, and a plan per host (-o DIR writes
client-plan.json and server-plan.json for longhaul apply on each host).
When the path itself holds a direction back, its cause is named with the
fix for whoever can act: random loss, a shallow buffer, bufferbloat, a
policer (told apart with --loss-probes, which re-runs the download paced
and with bbr, then has the server pace UDP datagrams above the path's
ceiling on its port number: a queue stands under them, a policer keeps
none), reordering, window scaling stripped by a middlebox, a
CPU-bound end; a PMTU black hole (the server's large messages never
arrive) is retried with small segments and named for the whole path.

test URL (http:// or https://) judges a plain download from any web
server, when no longhaul runs at the far end (what curl would fetch): one
fresh TCP connection, no proxy, no compression, until the body ends or
--duration (default 30 s). This host's tcp_info every 100 ms (its
advertised window, its RTT estimate under load, out-of-order arrivals)
and its snapshot tell whether its receive buffer held the download back
(then its tcp_rmem is named, and with --rate a plan is made), whether the
transfer was too short to leave slow start, or that the limit is at the
far end or on the path, which only a test against longhaul serve tells
apart.

test URL --upload sends a body instead (POST, or PUT with --method PUT)
on one fresh connection: --size bytes generated here (default 100 MB, a
random block repeated) or --body FILE, until the server answers or
--duration. This host's sending socket is sampled every 100 ms (the
server's advertised window, the time the window and the send buffer
held the sender, cwnd, RTT, retransmissions) and judged as test judges
an upload: the server's receive window with its size (a small SO_RCVBUF
set by its application, such as nginx's listen ... rcvbuf=), this host's
tcp_wmem (with --rate a plan, -o writes it), or the path (its loss).
The URL must accept the body and answer 2xx: an endpoint that reads
uploads, or a WebDAV or object store's PUT.

test iperf3://HOST[:PORT] tests against an unmodified iperf3 server (port
5201 unless given; iperf3 >= 3.1, run as iperf3 -s, or -s -J for its
congestion window and RTT): an upload, a download (iperf3's reverse
mode) and with --streams given a download on that many streams, each
for --duration (default 5 s). This host's sockets are sampled every
100 ms and judged as test judges them: this host's settings by name,
the iperf3 server's receive window with its size on the upload, and on
the download the server's own intervals (cwnd, RTT, retransmissions)
where it sends them; what cannot be seen from here is said. --json
writes the test document's shape (the server's snapshot null).

--compare BEFORE.json AFTER.json sets two results side by side: the gain
measured after applying the plans against the gain the model predicted.

Against longhaul serve, -o DIR also writes raw.json, what the test
measured before judging (schema longhaul.test-raw/v1): --judge
DIR/raw.json judges it again on any host, without the network, with
this version's rules (a newer longhaul, or a second opinion on a run
someone sent).`

func newTestCmd() *cobra.Command {
	var a testArgs
	c := &cobra.Command{
		Use:   "test HOST[:PORT] --auth TOKEN-FILE [flags] | test URL [flags] | test iperf3://HOST[:PORT] [flags] | test --compare BEFORE.json AFTER.json | test --judge RAW.json",
		Short: "Measure and explain the path to a host running longhaul serve: which host and setting limit it",
		Long:  testLong,
		Example: `  longhaul test server.example.net --auth token -o run1
  longhaul test 203.0.113.7:9978 --auth token --download --streams 16 --rounds 100
  longhaul test server.example.net --auth token --download --cc-phase bbr
  longhaul test server.example.net --auth token --download --loss-probes
  longhaul test server.example.net --auth token --tls-pin sha256:3f5a... --json > run.json
  longhaul test --compare run1/test.json run2/test.json
  longhaul test --judge run1/raw.json
  longhaul test https://mirror.example.net/big.iso --duration 20s --rate 1Gbit/s -o url1
  longhaul test https://upload.example.net/upload --upload --size 605kB
  longhaul test iperf3://iperf.example.net --duration 10s -o run2`,
		RunE: func(c *cobra.Command, args []string) error {
			if a.compare {
				return runCompare(args, a.json, c.OutOrStdout())
			}
			if a.judge != "" {
				return runJudge(c, a, args)
			}
			if a.duration.IsSet() && c.Flags().Changed("rounds") {
				return usagef("--rounds and --duration both set a phase's length: give one")
			}
			if len(args) == 1 && twohost.IsURL(args[0]) {
				return runTestURL(c, a, args[0])
			}
			if len(args) == 1 && strings.HasPrefix(strings.ToLower(args[0]), "iperf3://") {
				return runTestIperf3(c, a, args[0])
			}
			return runTest(c.Context(), a, args, c.OutOrStdout(), c.ErrOrStderr())
		},
	}
	f := c.Flags()
	f.StringVar(&a.auth, "auth", "", "file holding the pre-shared token (the server's)")
	f.StringVar(&a.tlsPin, "tls-pin", "", "use TLS 1.3 and accept only the server key with this pin (sha256:HEX, printed by serve)")
	f.BoolVar(&a.download, "download", false, "run the download (server sends); with neither --download nor --upload both run")
	f.BoolVar(&a.upload, "upload", false, "run the upload (this host sends)")
	f.IntVar(&a.streams, "streams", twohost.DefaultStreams, "parallel streams of the capacity phase (0 or 1: none)")
	f.IntVar(&a.rounds, "rounds", twohost.DefaultRounds, "length of each phase in round trips (at least 2 s)")
	a.duration = units.Duration{Min: time.Second, Max: time.Hour}
	f.Var(&a.duration, "duration", "fixed length of each phase instead of --rounds, e.g. 10s")
	a.rate = units.Rate{Min: 1e5, Max: 1e12}
	f.Var(&a.rate, "rate", "the path's bottleneck rate if known: sizes the model and the plans (default: what the streams measured)")
	f.StringVarP(&a.out, "output", "o", "", "write test.json, client-plan.json and server-plan.json into this directory (one of yours: another user's directory or symbolic link is refused; files replaced keep their modes)")
	f.BoolVar(&a.json, "json", false, "print the result as JSON (schema longhaul.test/v1)")
	f.BoolVar(&a.compare, "compare", false, "compare two results: test --compare BEFORE.json AFTER.json")
	f.StringVar(&a.judge, "judge", "", "judge the measurements of an earlier test again (its -o DIR's raw.json), without the network: with --json, -o and --rate only")
	f.StringVar(&a.netns, "netns", "", "run inside this network namespace (ip netns)")
	f.BoolVar(&a.lossProbes, "loss-probes", false, "when the download loses segments, follow it with the phases that tell the path's causes apart: with bbr on the server when it has it, then paced at 0.75x and 1.5x the most a download carried (without bbr: 2x and 4x what it carried), then UDP datagrams paced at 1.25x it when the server answers them")
	f.Var(&a.ccs, "cc-phase", "also run a download with the server sending with this congestion control, e.g. bbr (repeatable; it must be available on the server): the same path under another control")
	a.size = units.Size{Min: 1, Max: 1 << 40}
	f.Var(&a.size, "size", "test URL --upload: the generated body's size, e.g. 605kB (default 100MB; --duration ends it sooner)")
	f.StringVar(&a.body, "body", "", "test URL --upload: send this file as the body instead of generated bytes")
	f.StringVar(&a.method, "method", "POST", "test URL --upload: POST or PUT")
	return c
}

// hostPort adds the default port to HOST.
func hostPort(s string) (string, error) {
	if s == "" || strings.HasPrefix(s, "-") {
		return "", usagef("test needs HOST[:PORT] of a host running longhaul serve")
	}
	if _, _, err := net.SplitHostPort(s); err == nil {
		return s, nil
	}
	h := strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if strings.ContainsAny(h, "[]/ ") {
		return "", usagef("test: %q is not HOST or HOST:PORT (write IPv6 as [2001:db8::1]:9978)", s)
	}
	return net.JoinHostPort(h, strconv.Itoa(wire.DefaultPort)), nil
}

func (a testArgs) options(args []string, stderr io.Writer) (twohost.ClientOptions, error) {
	var o twohost.ClientOptions
	if len(args) != 1 {
		return o, usagef("test needs one HOST[:PORT] (see longhaul test --help)")
	}
	if name := a.uploadFlag(); name != "" {
		return o, usagef("--%s is for test URL --upload (a body sent to a web server)", name)
	}
	var err error
	if o.Addr, err = hostPort(args[0]); err != nil {
		return o, err
	}
	if a.auth == "" {
		return o, usagef("test needs --auth TOKEN-FILE: the server's pre-shared token")
	}
	if o.Token, err = secret.ReadToken(a.auth); err != nil {
		return o, err // package secret marks what is the user's to fix
	}
	if a.tlsPin != "" {
		var cfg *tls.Config
		if cfg, err = secret.ClientTLS(a.tlsPin); err != nil {
			return o, err
		}
		o.TLS = cfg
	}
	switch {
	case a.rounds < 1 || a.rounds > 100000:
		return o, usagef("--rounds must be 1..100000, got %d", a.rounds)
	case a.streams < 0 || a.streams > wire.MaxStreams:
		return o, usagef("--streams must be 0..%d, got %d", wire.MaxStreams, a.streams)
	}
	o.Download, o.Upload = a.download || !a.upload, a.upload || !a.download
	o.Streams, o.Rounds, o.Duration, o.Netns, o.CCs = a.streams, a.rounds, a.duration.D, a.netns, a.ccs.ccs
	o.LossProbes = a.lossProbes
	o.Progress = stderr
	f, ok := rawWriter(stderr).(*os.File)
	o.Tick = phaseTicker(stderr, ok && isTerminal(f))
	return o, nil
}

// phaseTicker prints a running phase's progress on stderr: on a terminal
// one line rewritten every second, elsewhere (a log, a pipe) a plain line
// every 5 s so that logs stay readable.
func phaseTicker(w io.Writer, tty bool) func(twohost.Progress) {
	return func(p twohost.Progress) {
		line := fmt.Sprintf("longhaul: %s: %s of %s, %s so far, %s now",
			p.Phase, units.FormatDuration(p.Elapsed.Round(time.Second)), units.FormatDuration(p.Total.Round(100*time.Millisecond)),
			units.FormatBytes(float64(p.Bytes)), units.FormatRate(p.RateBps))
		switch {
		case tty && p.Done:
			writeControl(w, "\r\033[K") // leave the line clean for what follows
		case tty:
			writeControl(w, "\r\033[K") // past the filter: the line itself is not
			fmt.Fprint(w, line)
		case !p.Done && int(p.Elapsed.Round(time.Second)/time.Second)%5 == 0:
			fmt.Fprintln(w, line)
		}
	}
}

func runTest(ctx context.Context, a testArgs, args []string, stdout, stderr io.Writer) error {
	o, err := a.options(args, stderr)
	if err != nil {
		return err
	}
	raw, err := twohost.Run(ctx, o)
	return finishTest(a, raw, err, stdout, stderr)
}

// finishTest judges, writes and prints what Run measured. A test the
// server stopped answering after some phases (a *twohost.PartialError)
// has those judged, printed and written all the same, the missing
// phases named in the document's notes; the exit status is then 1 (see
// docs/exit-status.md), the error saying which phase and why.
func finishTest(a testArgs, raw *judge.Raw, err error, stdout, stderr io.Writer) error {
	var part *twohost.PartialError
	if errors.As(err, &part) && raw != nil {
		if jerr := judgeTest(a, raw, stdout, stderr, part.Note()); jerr != nil {
			return jerr
		}
		return err
	}
	if err != nil {
		return err
	}
	return judgeTest(a, raw, stdout, stderr)
}

// judgeTest judges raw, adds notes to the document, writes -o's files
// and prints the result.
func judgeTest(a testArgs, raw *judge.Raw, stdout, stderr io.Writer, notes ...string) error {
	doc, err := judge.Judge(raw, judge.JudgeOptions{RateBps: a.rate.Bps})
	if err != nil {
		return fmt.Errorf("test: %w", err)
	}
	doc.Notes = append(doc.Notes, notes...)
	if a.out != "" {
		if err := writeTestFiles(a.out, doc, raw, stderr); err != nil {
			return err
		}
	}
	return printTest(stdout, a, doc, "test.json, client-plan.json (longhaul apply on this host), server-plan.json (on the server), raw.json (test --judge)",
		"test.json (no plans), raw.json (test --judge)")
}

// printTest prints a test document as --json or text, then with -o the
// files written: wrotePlans when the document has plans, else wrote.
func printTest(w io.Writer, a testArgs, doc *testdoc.Doc, wrotePlans, wrote string) error {
	if a.json {
		return writeJSON(w, doc)
	}
	testdoc.WriteText(w, doc)
	switch {
	case a.out != "" && doc.Plans != nil:
		fmt.Fprintf(w, "\nwrote %s: %s\n", a.out, wrotePlans)
	case a.out != "":
		fmt.Fprintf(w, "\nwrote %s: %s\n", a.out, wrote)
	}
	return nil
}

func writeTestFiles(dir string, doc *testdoc.Doc, raw *judge.Raw, warn io.Writer) error {
	var b bytes.Buffer
	if err := twohost.WriteRaw(&b, raw); err != nil {
		return err
	}
	files := map[string]any{"test.json": doc, "raw.json": b.Bytes()}
	if doc.Plans != nil {
		files["client-plan.json"], files["server-plan.json"] = doc.Plans.Client, doc.Plans.Server
	}
	return writeFiles("test", dir, files, warn)
}

// runJudge judges the measurements in a raw.json again (test --judge).
func runJudge(c *cobra.Command, a testArgs, args []string) error {
	if len(args) > 0 {
		return usagef("test --judge takes no host: it judges the measurements in %s", a.judge)
	}
	judging := map[string]bool{"judge": true, "json": true, "output": true, "rate": true}
	var running string // a flag of a test that runs, the first set
	c.Flags().Visit(func(f *pflag.Flag) {
		if !judging[f.Name] && running == "" {
			running = f.Name
		}
	})
	if running != "" {
		return usagef("test --judge: --%s is a setting of a test that runs; give only --json, -o or --rate", running)
	}
	f, err := openRegular("test --judge:", a.judge, "a test's raw.json (test -o DIR writes it)")
	if err != nil {
		return err
	}
	defer f.Close()
	raw, err := twohost.ReadRaw(f)
	if err != nil {
		return usagef("test --judge: %s: %v", a.judge, err)
	}
	return judgeTest(a, raw, c.OutOrStdout(), c.ErrOrStderr())
}

// writeFiles writes documents into dir (-o), each replaced whole: JSON
// of a value, or the bytes given. dir is opened once, not through a
// symbolic link another user owns, and every file is written relative to
// it, so that swapping dir mid-run cannot redirect the files; a file that
// is replaced keeps its mode, and replacing an earlier run's files is
// said on warn.
func writeFiles(cmd, dir string, files map[string]any, warn io.Writer) error {
	d, err := atomicfile.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("%s: -o: %w", cmd, err)
	}
	defer d.Close()
	var replaced []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		var b bytes.Buffer
		switch v := files[name].(type) {
		case []byte:
			b.Write(v)
		default:
			if err := writeJSON(&b, v); err != nil {
				return err
			}
		}
		again, err := d.WriteFile(name, b.Bytes(), 0o644)
		if err != nil {
			return fmt.Errorf("%s: -o: %w", cmd, err)
		}
		if again {
			replaced = append(replaced, name)
		}
	}
	if len(replaced) > 0 {
		fmt.Fprintf(warn, "longhaul: %s: -o %s: replaced an earlier run's %s (their modes kept)\n", cmd, dir, strings.Join(replaced, ", "))
	}
	return nil
}

func runCompare(args []string, asJSON bool, stdout io.Writer) error {
	if len(args) != 2 {
		return usagef("test --compare needs two results: BEFORE.json AFTER.json")
	}
	var docs [2]*testdoc.Doc
	for i, p := range args {
		f, err := os.Open(p)
		if err != nil {
			return usagef("test --compare: %v", err)
		}
		docs[i], err = testdoc.Read(f)
		f.Close()
		if err != nil {
			return usagef("test --compare: %s: %v", p, err)
		}
	}
	rows, err := testdoc.Compare(docs[0], docs[1])
	if err != nil {
		return badinput.Wrap(err)
	}
	if asJSON {
		return writeJSON(stdout, map[string]any{"schema": "longhaul.test-compare/v1", "directions": rows})
	}
	testdoc.WriteCompare(stdout, rows)
	return nil
}

// uploadFlag is the first of test URL --upload's own flags given, "" if
// none.
func (a testArgs) uploadFlag() string {
	switch {
	case a.size.IsSet():
		return "size"
	case a.body != "":
		return "body"
	case a.method != "POST":
		return "method"
	}
	return ""
}

// runTestURL judges a download from a web server, or an upload to it
// (--upload), with no longhaul there.
func runTestURL(c *cobra.Command, a testArgs, u string) error {
	for _, name := range []string{"auth", "tls-pin", "streams", "rounds"} {
		if c.Flags().Changed(name) {
			return usagef("test URL downloads from or uploads to a web server: --%s is for a longhaul serve host", name)
		}
	}
	switch name := a.uploadFlag(); {
	case a.upload && a.download:
		return usagef("test URL runs one direction: give --upload or neither (a download)")
	case !a.upload && name != "":
		return usagef("--%s is for test URL --upload (a body sent to a web server)", name)
	case a.size.IsSet() && a.body != "":
		return usagef("--size and --body both set the upload's body: give one")
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	raw, err := twohost.RunURL(c.Context(), twohost.URLOptions{URL: u, Limit: a.duration.D, Netns: a.netns,
		UserAgent: "longhaul/" + version, Progress: stderr,
		Upload: a.upload, Method: a.method, Size: a.size.N, BodyFile: a.body})
	if err != nil {
		return fmt.Errorf("test: %w", err)
	}
	doc, err := judge.JudgeURL(raw, a.rate.Bps)
	if err != nil {
		return fmt.Errorf("test: %w", err)
	}
	if a.out != "" {
		files := map[string]any{"test-url.json": doc}
		if doc.Plan != nil {
			files["client-plan.json"] = doc.Plan
		}
		if err := writeFiles("test", a.out, files, stderr); err != nil {
			return err
		}
	}
	if a.json {
		return writeJSON(stdout, doc)
	}
	testdoc.WriteURLText(stdout, doc)
	if a.out != "" {
		more := ""
		if doc.Plan != nil {
			more = ", client-plan.json (longhaul apply on this host)"
		}
		fmt.Fprintf(stdout, "\nwrote %s: test-url.json%s\n", a.out, more)
	}
	return nil
}
