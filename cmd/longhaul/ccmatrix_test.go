//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/exporter"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/units"
)

// The congestion-control matrix: cubic, bbr and reno senders, each held
// by the receiver's window, the sender's send buffer or the path, on
// emulated paths; each run is judged by flows (Judge on two dumps of the
// sender's namespace), by longhaul test (the built binary against serve)
// and by the exporter's tracker fed the same dumps. CI runs one run of
// each cubic and bbr case on the first shape (reno, the rarest, only in
// the bench: make test stays under 15 minutes); `make bench-cc` (LONGHAUL_BENCH_CC=1)
// runs REPEAT runs of each on both shapes and writes a table and a JSON
// file under LONGHAUL_BENCH_CC_OUT.

// ccShape is a path and the buffers that make each limit on it.
type ccShape struct {
	Name string
	RTT  time.Duration
	Rate float64
	// SmallRmem holds the receiver's window under the BDP, SmallWmem
	// the sender's flight; Big leaves the path the limit.
	SmallRmem, SmallWmem, Big string
	Rounds                    int
}

var ccShapes = []ccShape{
	{Name: "50ms x 100Mbit/s", RTT: 50 * time.Millisecond, Rate: 100e6,
		SmallRmem: "4096 131072 262144", SmallWmem: "4096 16384 131072", Big: "4096 131072 33554432", Rounds: 60},
	{Name: "200ms x 1Gbit/s", RTT: 200 * time.Millisecond, Rate: 1e9,
		SmallRmem: "4096 131072 2097152", SmallWmem: "4096 16384 1048576", Big: "4096 131072 134217728", Rounds: 50},
}

var (
	ccAlgos  = []string{"cubic", "bbr", "reno"}
	ccLimits = []string{"rwnd", "sndbuf", "path"}
)

// ccRun is one run's three judgements.
type ccRun struct {
	Shape, CC, Limit string
	Run              int
	// Flows' verdict, test's verdict and limit (host and setting), the
	// exporter's dominant limit and its seconds by limit.
	Flows, Test, TestLimit, Exporter string
	ExporterSeconds                  map[string]float64
	ThroughputBps                    float64
	OK                               bool
	Err                              string `json:",omitempty"`
}

// want is what each judge must say for a limit.
func ccWant(limit string) (flowsVerdict, testHost, testSetting, exporterLimit string) {
	switch limit {
	case "rwnd":
		return diagnose.RwndLimited, testdoc.HostClient, "net.ipv4.tcp_rmem", "rwnd"
	case "sndbuf":
		return diagnose.SndbufLimited, testdoc.HostServer, "net.ipv4.tcp_wmem", "sndbuf"
	}
	return diagnose.Bottleneck, testdoc.HostPath, "", "cwnd"
}

func TestIntegrationCCMatrix(t *testing.T) {
	// Skips here, not only in each run's subtest: a skipped run has no
	// verdict, which the loop below would count as a wrong one.
	nstest.New(t)
	full := os.Getenv("LONGHAUL_BENCH_CC") != ""
	shapes, repeat, algos := ccShapes[:1], 1, ccAlgos[:2]
	if full {
		algos = ccAlgos
		shapes, repeat = ccShapes, 10
		if n, err := strconv.Atoi(os.Getenv("REPEAT")); err == nil && n > 0 {
			repeat = n
		}
	}
	if only := os.Getenv("LONGHAUL_BENCH_CC_SHAPE"); only != "" {
		shapes = slices.DeleteFunc(slices.Clone(ccShapes), func(s ccShape) bool { return !strings.HasPrefix(s.Name, only) })
	}
	var runs []ccRun
	for _, sh := range shapes {
		for _, cc := range algos {
			if only := os.Getenv("LONGHAUL_BENCH_CC_ALGO"); only != "" && only != cc {
				continue
			}
			for _, lim := range ccLimits {
				if only := os.Getenv("LONGHAUL_BENCH_CC_LIMIT"); only != "" && only != lim {
					continue
				}
				// make test's subset: each control and each limit once
				// (cubic with the buffers, bbr with the path).
				if !full && (cc == "bbr") != (lim == "path") {
					continue
				}
				for i := 0; i < repeat; i++ {
					r := ccMatrixRun(t, sh, cc, lim, i)
					t.Logf("%s %s %s #%d: flows %s, test %s (%s), exporter %s, %s: ok %v %s",
						sh.Name, cc, lim, i+1, r.Flows, r.Test, r.TestLimit, r.Exporter, units.FormatRate(r.ThroughputBps), r.OK, r.Err)
					if !r.OK && !full {
						t.Errorf("%s %s %s: flows %s, test %s (%s), exporter %s %v %s; want %s",
							sh.Name, cc, lim, r.Flows, r.Test, r.TestLimit, r.Exporter, r.ExporterSeconds, r.Err, lim)
					}
					runs = append(runs, r)
				}
			}
		}
	}
	if full {
		writeCCBench(t, runs, repeat)
	}
}

// ccMatrixRun brings up the path with cc in both namespaces, serve in
// the server's, samples the server's sockets while longhaul test
// downloads, and judges.
func ccMatrixRun(t *testing.T, sh ccShape, cc, limit string, i int) (r ccRun) {
	r = ccRun{Shape: sh.Name, CC: cc, Limit: limit, Run: i + 1}
	var ok bool
	t.Run(fmt.Sprintf("%s/%s/%s/%d", sh.Name, cc, limit, i+1), func(t *testing.T) {
		client, server := sysctls("net.ipv4.tcp_rmem", sh.Big), sysctls("net.ipv4.tcp_wmem", sh.Big)
		switch limit {
		case "rwnd":
			client = sysctls("net.ipv4.tcp_rmem", sh.SmallRmem)
		case "sndbuf":
			server = sysctls("net.ipv4.tcp_wmem", sh.SmallWmem)
		}
		h := upCCPath(t, cc, emupath.Symmetric(sh.RTT, sh.Rate, 0, 0, int64(i+1)), client, server)
		h.token = filepath.Join(h.dir, "token")
		if err := os.WriteFile(h.token, []byte("test-token-0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		h.startServer()
		stop := sampleServer(t, h.path.Topo.Server().Netns)
		out := filepath.Join(h.dir, "out")
		args := []string{"test", serveAddr, "--netns", h.path.Topo.Client().Netns, "--auth", h.token, "-o", out,
			"--download", "--rounds", strconv.Itoa(sh.Rounds), "--streams", "0", "--rate", units.FormatRate(sh.Rate)}
		stdout, stderr, code := exe(t, h.bin, args...)
		samples := stop()
		if code != 0 {
			r.Err = fmt.Sprintf("test: exit %d: %s %s", code, stdout, stderr)
			return
		}
		d := readTestDoc(t, filepath.Join(out, "test.json"))
		down := direction(t, d, "download")
		r.Test, r.TestLimit = down.Flow.Verdict.Verdict, strings.TrimSpace(down.Limit.Host+" "+down.Limit.Setting)
		r.ThroughputBps = down.ThroughputBps
		r.Flows = judgeDumps(samples, sh.Rate)
		r.Exporter, r.ExporterSeconds = trackDumps(samples)
		wv, wh, ws, we := ccWant(limit)
		ok = r.Flows == wv && down.Limit.Host == wh && down.Limit.Setting == ws && r.Exporter == we
		if !ok || os.Getenv("LONGHAUL_BENCH_CC_DEBUG") != "" {
			t.Logf("test output:\n%s\nthe data socket's intervals:\n%s", stdout, splits(samples))
		}
	})
	r.OK = ok
	return r
}

// upCCPath is upPath with the congestion control given.
func upCCPath(t *testing.T, cc string, link emupath.Link, client, server []topo.Sysctl) *twoHosts {
	t.Helper()
	bin, prefix := emulateEnv(t)
	hostCC(t)
	up, down, err := link.Configs()
	if err != nil {
		t.Fatal(err)
	}
	spec := emupath.Spec{Topo: topo.Spec{Prefix: prefix, CC: cc, ClientSysctls: client, ServerSysctls: server}, Up: up, Down: down, RTT: link.RTT()}
	p, err := emupath.Up(context.Background(), spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h := &twoHosts{t: t, bin: bin, path: p, dir: t.TempDir(), slog: &bytes.Buffer{}}
	t.Cleanup(h.close)
	return h
}

func readTestDoc(t *testing.T, file string) *testdoc.Doc {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := testdoc.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dump is one sock_diag dump of the server's namespace.
type dump struct {
	at    time.Time
	socks []flows.Sock
}

// sampleServer dumps the namespace's sockets every 250 ms (as the
// exporter's lookups do, faster) until stop is called, at most 5
// minutes.
func sampleServer(t *testing.T, ns string) (stop func() []dump) {
	t.Helper()
	d, err := flows.OpenRaw(ns)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dumps []dump
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer d.Close()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(5 * time.Minute); time.Now().Before(end); {
			socks, err := d.Dump(nil)
			if err == nil {
				mu.Lock()
				dumps = append(dumps, dump{time.Now(), socks})
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() []dump {
		once.Do(func() { close(done) })
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return dumps
	}
	t.Cleanup(func() { stop() })
	return stop
}

// dataSocket is the cookie of the socket that sent the most.
func dataSocket(dumps []dump) uint64 {
	var best uint64
	var most int64
	for _, d := range dumps {
		for _, s := range d.socks {
			if s.BytesAcked > most {
				best, most = s.Cookie, s.BytesAcked
			}
		}
	}
	return best
}

// judgeDumps is flows' verdict on the data socket over the second half of
// its steady time (as longhaul flows --interval would judge it then).
func judgeDumps(dumps []dump, rate float64) string {
	c := dataSocket(dumps)
	type view struct {
		at time.Time
		s  flows.Sock
	}
	var vs []view
	for _, d := range dumps {
		for _, s := range d.socks {
			if s.Cookie == c {
				vs = append(vs, view{d.at, s})
			}
		}
	}
	end := len(vs) - 1
	for end > 0 && vs[end].s.BytesAcked == vs[end-1].s.BytesAcked {
		end--
	}
	// The last view that moved data caught the phase's end: the server
	// stopped writing and its buffer was draining (an app-limited moment,
	// which with a view in the middle that found the server slow to
	// refill reads as an app-limited flow). The steady half ends one view
	// earlier.
	end--
	if end < 2 {
		return "no data"
	}
	mid := vs[0].at.Add(vs[end].at.Sub(vs[0].at) / 2)
	i := 0
	for i < end-1 && vs[i].at.Before(mid) {
		i++
	}
	return flows.Judge(vs[i].s, vs[end].s, vs[end].at.Sub(vs[i].at), flows.Options{RateBps: rate}).Verdict.Verdict
}

// trackDumps feeds every dump to an exporter tracker and returns the
// limit with the most seconds in the peers' group, and the seconds.
func trackDumps(dumps []dump) (string, map[string]float64) {
	tr := exporter.NewTracker(exporter.Config{MaxSeries: 2000,
		Groups: []exporter.Group{{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.0/15")}}})
	for _, d := range dumps {
		tr.Sample(d.at, d.socks)
	}
	secs := map[string]float64{}
	best := ""
	for _, g := range tr.View(0).Groups {
		if g.Name != "far" {
			continue
		}
		for i, name := range exporter.Limits {
			secs[name] = g.Limited[i]
			if name != "app" && (best == "" || g.Limited[i] > secs[best]) {
				best = name
			}
		}
	}
	return best, secs
}

// writeCCBench writes the table and the JSON of a full matrix.
func writeCCBench(t *testing.T, runs []ccRun, repeat int) {
	dir := os.Getenv("LONGHAUL_BENCH_CC_OUT")
	if dir == "" {
		dir = "bench"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Fprintf(&b, "congestion-control matrix: %d run(s) per case; load average at the end: %s\n", repeat, strings.TrimSpace(string(load)))
	fmt.Fprintf(&b, "%-18s %-6s %-7s %8s  %-7s %-7s %-7s %s\n", "path", "cc", "limit", "named", "flows", "test", "export", "median rate")
	type key struct{ shape, cc, limit string }
	var keys []key
	by := map[key][]ccRun{}
	for _, r := range runs {
		k := key{r.Shape, r.CC, r.Limit}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], r)
	}
	failed := 0
	for _, k := range keys {
		rs := by[k]
		wv, wh, ws, we := ccWant(k.limit)
		var okAll, okF, okT, okE int
		var rates []float64
		for _, r := range rs {
			if r.OK {
				okAll++
			}
			if r.Flows == wv {
				okF++
			}
			if r.TestLimit == strings.TrimSpace(wh+" "+ws) {
				okT++
			}
			if r.Exporter == we {
				okE++
			}
			rates = append(rates, r.ThroughputBps)
		}
		failed += len(rs) - okAll
		slices.Sort(rates)
		fmt.Fprintf(&b, "%-18s %-6s %-7s %5d/%-2d  %3d/%-3d %3d/%-3d %3d/%-3d %s\n", k.shape, k.cc, k.limit, okAll, len(rs),
			okF, len(rs), okT, len(rs), okE, len(rs), units.FormatRate(rates[len(rates)/2]))
	}
	fmt.Fprintf(&b, "%d of %d runs named right by all three\n", len(runs)-failed, len(runs))
	if err := os.WriteFile(filepath.Join(dir, "cc-matrix.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	js, _ := json.MarshalIndent(runs, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "cc-matrix.json"), append(js, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", b.String())
	if failed > 0 {
		t.Errorf("%d of %d runs misnamed (see %s)", failed, len(runs), filepath.Join(dir, "cc-matrix.txt"))
	}
}

// splits lists the data socket's intervals as SplitInterval judged them,
// for a failed run's log.
func splits(dumps []dump) string {
	c := dataSocket(dumps)
	var b strings.Builder
	var prev flows.Sock
	var at time.Time
	for _, d := range dumps {
		for _, s := range d.socks {
			if s.Cookie != c {
				continue
			}
			if !at.IsZero() {
				sp := flows.SplitInterval(prev, s, d.at.Sub(at))
				fmt.Fprintf(&b, "%s +%d B: rwnd %v sndbuf %v cwnd %v app %v [%s] inflight %d wnd %d cwnd %d notsent %d sndbuf %d queued %d rtt %v min %v retrans %d\n",
					d.at.Format("15:04:05.000"), s.BytesAcked-prev.BytesAcked, sp.Rwnd, sp.Sndbuf, sp.Cwnd, sp.App, sp.Evidence,
					s.Inflight, s.SndWnd, s.Cwnd, s.NotSent, s.Sndbuf, s.WmemQueued, s.RTT, s.MinRTT, s.Retrans)
			}
			prev, at = s, d.at
		}
	}
	return b.String()
}
