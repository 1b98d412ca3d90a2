//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/netns/nstest"
	"github.com/longhaul/longhaul/internal/topo"
)

// The lab mesh at scale (issue 52, item 5; make bench-mesh): nine far
// hosts behind their own emulated paths, three probers each probing
// every one of them through one real Prometheus, as three sites would.
// Judged from the far serves' own logs: no two tests of one target
// overlap, the bytes a probe moved against the estimate's, how long
// the probes took against the scrape timeout.

// scaleHosts are the far hosts of the bench: modest rates (the 2-core
// machine carries every path's emulator and both ends' TCP) at 30-200
// ms, and one long fat path whose far host keeps Linux's default 4 MiB
// buffers. A far host's buffers are the same size both ways, so that
// one window (mesh-cost's --window) tells both directions.
func scaleHosts() []*farHost {
	ms := time.Millisecond
	both := func(max string) []topo.Sysctl {
		return sysctls("net.ipv4.tcp_wmem", "4096 16384 "+max, "net.ipv4.tcp_rmem", "4096 131072 "+max)
	}
	big := both("67108864")
	path := map[string]string{"download": "path", "upload": "path"}
	server := map[string]string{"download": "server net.ipv4.tcp_wmem", "upload": "server net.ipv4.tcp_rmem"}
	return []*farHost{
		{name: "fra", link: meshLink(40*ms, 100e6), server: both("262144"), want: server},
		{name: "sin", link: meshLink(60*ms, 40e6), server: big, want: path},
		{name: "nyc", link: meshLink(30*ms, 60e6), server: both("131072"), want: server},
		{name: "syd", link: meshLink(100*ms, 20e6), server: big, want: path},
		{name: "gru", link: meshLink(80*ms, 80e6), server: both("524288"), want: server},
		{name: "jnb", link: meshLink(150*ms, 50e6), server: big, want: path},
		{name: "bom", link: meshLink(120*ms, 30e6), server: big, want: path},
		{name: "lax", link: meshLink(200*ms, 100e6), server: big, want: path},
		{name: "hkg", link: meshLink(longRTT, longRate), server: both("4194304"), want: server},
	}
}

// upProbers joins n prober namespaces to the star's client namespace
// (hub), each by a veth pair, 198.19.j.2 behind 198.19.j.1: the hub
// forwards into every far host's path and each far host routes
// 198.19.0.0/16 back through its own. Probes from two probers reach a
// target from two addresses, as from two sites, so the far serve's
// one-test-per-address rule does not keep them apart (several exporters
// in the hub would all dial from the hub's one address there). Each
// prober's buffers are 64 MiB and its congestion control the paths'
// (cubic), so a prober is never a probe's limit.
func upProbers(t *testing.T, hub string, hosts []*farHost, n int) []string {
	t.Helper()
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	nsSysctl(t, hub, "net.ipv4.ip_forward", "1")
	var out []string
	for j := range n {
		ns := nstest.New(t)
		dev := fmt.Sprintf("pr%d", j)
		ip("-n", hub, "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", ns)
		ip("-n", hub, "addr", "add", fmt.Sprintf("198.19.%d.1/24", j), "dev", dev)
		ip("-n", hub, "link", "set", dev, "up")
		ip("-n", ns, "addr", "add", fmt.Sprintf("198.19.%d.2/24", j), "dev", "eth0")
		ip("-n", ns, "link", "set", "eth0", "up")
		ip("-n", ns, "link", "set", "lo", "up")
		ip("-n", ns, "route", "add", "default", "via", fmt.Sprintf("198.19.%d.1", j))
		nsSysctl(t, ns, "net.ipv4.tcp_congestion_control", "cubic", "net.ipv4.tcp_no_metrics_save", "1",
			"net.ipv4.tcp_rmem", bigBuf, "net.ipv4.tcp_wmem", bigBuf)
		out = append(out, ns)
	}
	for i, h := range hosts {
		ip("-n", h.path.Topo.Server().Netns, "route", "add", "198.19.0.0/16", "dev", fmt.Sprintf("lh%d", i))
	}
	return out
}

// serveSession is one test a far serve ran, from its log.
type serveSession struct {
	id, client string
	start, end time.Time
	bytes      int64 // what it moved, both directions (test ended's bytes)
	phases     int
	err        string
}

var slogKV = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)

// serveSessions reads a serve's slog text log: each session from its
// "test started" to its "test ended" line. A session that has not
// ended is left out.
func serveSessions(log string) ([]serveSession, error) {
	open := map[string]*serveSession{}
	var out []serveSession
	for line := range strings.Lines(log) {
		kv := map[string]string{}
		for _, m := range slogKV.FindAllStringSubmatch(line, -1) {
			v := m[2]
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			kv[m[1]] = v
		}
		if kv["msg"] != "test started" && kv["msg"] != "test ended" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, kv["time"])
		if err != nil {
			return nil, fmt.Errorf("serve log: %q: %v", line, err)
		}
		id := kv["session"]
		if kv["msg"] == "test started" {
			open[id] = &serveSession{id: id, client: kv["client"], start: at}
			continue
		}
		s := open[id]
		if s == nil {
			return nil, fmt.Errorf("serve log: session %s ended, never started", id)
		}
		delete(open, id)
		s.end, s.err = at, kv["err"]
		s.bytes, _ = strconv.ParseInt(kv["bytes"], 10, 64)
		s.phases, _ = strconv.Atoi(kv["phases"])
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b serveSession) int { return a.start.Compare(b.start) })
	return out, nil
}

// overlaps are the pairs of sessions (by start) that ran at once.
func overlaps(ss []serveSession) [][2]serveSession {
	var out [][2]serveSession
	for i, a := range ss {
		for _, b := range ss[i+1:] {
			if b.start.Before(a.end) && a.start.Before(b.end) {
				out = append(out, [2]serveSession{a, b})
			}
		}
	}
	return out
}

// clientAddr is a session's client without its port.
func clientAddr(s serveSession) string {
	if ap, err := netip.ParseAddrPort(s.client); err == nil {
		return ap.Addr().String()
	}
	return s.client
}

// busyShare is the share of [from, to] the sessions ran.
func busyShare(ss []serveSession, from, to time.Time) float64 {
	var busy time.Duration
	for _, s := range ss {
		a, b := max(s.start.UnixNano(), from.UnixNano()), min(s.end.UnixNano(), to.UnixNano())
		if b > a {
			busy += time.Duration(b - a)
		}
	}
	return busy.Seconds() / to.Sub(from).Seconds()
}

// A serve's log read back: sessions from their start to their end in
// order, one not ended left out; the two that ran at once found, the
// third (after them) not; busy share within a window.
func TestServeSessions(t *testing.T) {
	log := `time=2026-01-02T10:00:00.000Z level=INFO msg=serving listen=198.18.0.2:9978
time=2026-01-02T10:00:01.000Z level=INFO msg="test started" client=198.19.0.2:40000 session=a1 client_software="longhaul 1"
time=2026-01-02T10:00:02.500Z level=INFO msg="test started" client=198.19.1.2:40001 session=b2 client_software="longhaul 1"
time=2026-01-02T10:00:02.600Z level=INFO msg="phase ended" client=198.19.0.2:40000 session=a1 phase=1 name=download bytes=5 seconds=2 reason=""
time=2026-01-02T10:00:09.000Z level=INFO msg="test ended" client=198.19.0.2:40000 session=a1 phases=3 bytes=1000 err=""
time=2026-01-02T10:00:10.000Z level=INFO msg="test ended" client=198.19.1.2:40001 session=b2 phases=2 bytes=500 err="the client went away"
time=2026-01-02T10:00:11.000Z level=INFO msg="test started" client=198.19.2.2:40002 session=c3 client_software="longhaul 1"
time=2026-01-02T10:00:19.000Z level=INFO msg="test ended" client=198.19.2.2:40002 session=c3 phases=3 bytes=2000 err=""
time=2026-01-02T10:00:20.000Z level=INFO msg="test started" client=198.19.2.2:40003 session=d4 client_software="longhaul 1"
`
	ss, err := serveSessions(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 3 || ss[0].id != "a1" || ss[1].id != "b2" || ss[2].id != "c3" {
		t.Fatalf("sessions: %+v", ss)
	}
	if ss[0].bytes != 1000 || ss[0].phases != 3 || ss[1].err != "the client went away" || clientAddr(ss[1]) != "198.19.1.2" {
		t.Errorf("fields: %+v", ss[:2])
	}
	if o := overlaps(ss); len(o) != 1 || o[0][0].id != "a1" || o[0][1].id != "b2" {
		t.Errorf("overlaps: %+v", o)
	}
	from := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	if b := busyShare(ss[2:], from, from.Add(20*time.Second)); b < 0.399 || b > 0.401 {
		t.Errorf("busy share %.3f, want 0.4", b)
	}
	if _, err := serveSessions(`time=2026-01-02T10:00:09.000Z level=INFO msg="test ended" session=zz bytes=1` + "\n"); err == nil {
		t.Error("an end without a start: no error")
	}
}

// probeTargets is the probe job's targets file: a group per prober,
// each listing every far host.
func probeTargets(hosts []*farHost, exporters []string) string {
	var b strings.Builder
	for j, e := range exporters {
		fmt.Fprintf(&b, "- targets: ['%s']\n  labels: {source: site%d, prober: '%s'}\n", strings.Join(targets(hosts), "', '"), j, e)
	}
	return b.String()
}

func hostAddr(h *farHost) string { return net.JoinHostPort(h.addr, "9978") }

// TestIntegrationProbeMeshScale is the mesh at scale (make bench-mesh
// only): the nine far hosts of scaleHosts, three probers (upProbers)
// each running an exporter that probes every far host, one real
// Prometheus scraping all 27 probes through the shipped probe job (its
// 30 s scrape timeout; the interval is the lab's, 3 min, what mesh-cost
// suggests for the 200 ms path). Scrapes of one target from the three
// probers fall at offsets of their own, so without serve's one test at a
// time they overlap. From the far serves' logs: no two tests of one
// target ran at once; the bytes a whole test moved are within 25% of
// what longhaul mesh-cost says a probe of that path moves (its --window
// from longhaul calc with the far host's buffers); from Prometheus:
// every scrape answered within the scrape timeout.
func TestIntegrationProbeMeshScale(t *testing.T) {
	if os.Getenv("LONGHAUL_BENCH_MESH") == "" {
		t.Skip("make bench-mesh runs the mesh at scale (nine far hosts, three probers, about 15 minutes)")
	}
	bin, prefix := emulateEnv(t, "prometheus")
	hostCC(t)
	rounds := envInt(t, "LONGHAUL_BENCH_MESH_SCALE_ROUNDS", 4)
	interval := envDuration(t, "LONGHAUL_BENCH_MESH_SCALE_INTERVAL", 3*time.Minute)
	dir := t.TempDir()
	token := meshToken(t, dir)
	hosts := scaleHosts()
	// LONGHAUL_BENCH_MESH_SCALE_MAX_CLIENTS=4 runs the far serves as
	// before issue 52's item 2 (four tests at a time): the probes then
	// overlap, which shows the bench would see it.
	before := os.Getenv("LONGHAUL_BENCH_MESH_SCALE_MAX_CLIENTS")
	for _, h := range hosts {
		if before != "" {
			h.serveArgs = []string{"--max-clients", before}
		}
	}
	const nProbers = 3
	est, estNote := probeEstimate(t, bin, hosts, nProbers, interval)
	hub := upMesh(t, bin, prefix, token, hosts)
	var exporters, sources []string
	for j, ns := range upProbers(t, hub, hosts, nProbers) {
		exp := freePort(t)
		startExporter(t, bin, exp, "--netns", ns, "--probe-allow", "198.18.0.0/16", "--probe-auth", token, "--probe-min-interval", "0s")
		exporters, sources = append(exporters, exp), append(sources, fmt.Sprintf("site%d", j))
	}
	prom := startProbeProm(t, dir, interval, probeTargets(hosts, exporters))
	cpu0, began := readCPU(t), time.Now()
	waitScrapes(t, prom, sources, hosts, rounds, interval)
	ended := time.Now()
	busy := readCPU(t).busySince(cpu0)

	var b strings.Builder
	fmt.Fprintf(&b, "mesh at scale: %d far hosts, %d probers (a namespace and an exporter each, probing every far host), the shipped probe job (scrape_timeout %s, scrape_interval %s in the lab), %d rounds; %s; machine CPU %.0f%% busy over %s\n",
		len(hosts), nProbers, shippedTimeout, interval, rounds, loadAvg(), 100*busy, ended.Sub(began).Round(time.Second))
	if before != "" {
		fmt.Fprintf(&b, "the far serves run with --max-clients %s, as before issue 52's item 2\n", before)
	}
	fmt.Fprintf(&b, "estimate: %s\n", estNote)
	row := "%-4s %-20s %-9s %-10s %-8s %-20s %-16s %-20s %-12s %-11s %s\n"
	fmt.Fprintf(&b, row, "host", "path", "far bufs", "tests", "overlaps", "MB/test min/med/max", "mesh-cost MB", "probe s min/med/max", "mesh-cost s", "busy (est)", "failed scrapes (reason)")
	var total, overlapped int
	for _, h := range hosts {
		ss, err := serveSessions(h.log.String())
		if err != nil {
			t.Fatalf("%s: %v", h.name, err)
		}
		ov := overlaps(ss)
		total, overlapped = total+len(ss), overlapped+len(ov)
		for _, o := range ov {
			if before != "" {
				t.Logf("%s: tests overlap (serve --max-clients %s): %s from %s and %s from %s", h.name, before, o[0].id, clientAddr(o[0]), o[1].id, clientAddr(o[1]))
				continue
			}
			t.Errorf("%s: tests overlap: %s from %s %s..%s and %s from %s %s..%s", h.name, o[0].id, clientAddr(o[0]), o[0].start.Format("15:04:05.000"), o[0].end.Format("15:04:05.000"),
				o[1].id, clientAddr(o[1]), o[1].start.Format("15:04:05.000"), o[1].end.Format("15:04:05.000"))
		}
		var mb []float64 // whole tests: every phase run, no error
		for _, s := range ss {
			if s.err == "" && s.phases == 3 {
				mb = append(mb, float64(s.bytes)/1e6)
			}
		}
		var sc []scrape
		for _, src := range sources {
			sc = append(sc, probeScrapes(t, prom, src, h)...)
		}
		e := est[h.name]
		offText, estS, estBusy := "-", "-", "-"
		if e.ProbeBytes > 0 {
			off := median(mb)/(e.ProbeBytes/1e6) - 1
			offText = fmt.Sprintf("%.1f (%+.0f%%)", e.ProbeBytes/1e6, 100*off)
			estS, estBusy = fmt.Sprintf("%.1f", e.ProbeS), fmt.Sprintf("%.0f%%", 100*e.Target.BusyShare)
			if len(mb) == 0 || off < -0.25 || off > 0.25 {
				t.Errorf("%s: %.1f MB a whole test (median of %d), mesh-cost says %.1f MB a probe: not within 25%%", h.name, median(mb), len(mb), e.ProbeBytes/1e6)
			}
		}
		fmt.Fprintf(&b, row, h.name, fmt.Sprintf("%s x %s", h.link.RTT(), fmtRate(h.link.Down.RateBps)), bufMax(h), fmt.Sprintf("%d of %d", len(mb), len(ss)), fmt.Sprint(len(ov)),
			spread(mb, "%.1f"), offText, durSummary(sc), estS, fmt.Sprintf("%.0f%% (%s)", 100*busyShare(ss, began, ended), estBusy), failures(t, sc, h))
	}
	fmt.Fprintf(&b, "tests run by the far serves: %d (a whole test: all 3 phases, no error); pairs of tests of one target at once: %d\n", total, overlapped)
	t.Log("\n" + b.String())
	benchOut(t, b.String())
	if before != "" && overlapped == 0 {
		t.Errorf("serve --max-clients %s: no tests overlapped; the bench does not make probes collide", before)
	}
	if est == nil {
		t.Errorf("no estimate to hold the bytes against: %s", estNote)
	}
}

// spread is min/median/max of v.
func spread(v []float64, f string) string {
	if len(v) == 0 {
		return "-"
	}
	s := slices.Sorted(slices.Values(v))
	return fmt.Sprintf(f+"/"+f+"/"+f, s[0], median(s), s[len(s)-1])
}

// failures counts a target's scrapes that failed, by reason (a scrape
// that timed out: "scrape"), and fails the test for those that did not
// answer within the scrape timeout.
func failures(t *testing.T, sc []scrape, h *farHost) string {
	t.Helper()
	by := map[string]int{}
	n := 0
	for _, s := range sc {
		switch {
		case !s.up:
			by["scrape timed out"]++
			t.Errorf("%s: a scrape at %s failed after %.1f s (up 0): the probe did not answer within the scrape timeout", h.name, s.at.Format("15:04:05"), s.scrapeS)
		case !s.success:
			by[s.failure]++
		default:
			continue
		}
		n++
	}
	if n == 0 {
		return fmt.Sprintf("0 of %d", len(sc))
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return fmt.Sprintf("%d of %d (%s)", n, len(sc), strings.Join(parts, ", "))
}

// meshCost is what longhaul mesh-cost --json says of one path.
type meshCost struct {
	ProbeBytes float64 `json:"probe_bytes"`
	ProbeS     float64 `json:"probe_s"`
	Target     struct {
		BusyShare float64 `json:"busy_share"`
	} `json:"busiest_target"`
	SuggestedS float64 `json:"suggested_interval_s"`
}

// probeEstimate asks longhaul mesh-cost, per far host, what a probe of
// its path moves and takes: the probers as hubs probing every far host,
// the window the far host's buffers allow as longhaul calc tells it (the
// smaller of its send and receive windows). nil while this build has no
// mesh-cost command.
func probeEstimate(t *testing.T, bin string, hosts []*farHost, probers int, interval time.Duration) (map[string]meshCost, string) {
	t.Helper()
	if _, _, code := exe(t, bin, "mesh-cost", "--help"); code != 0 {
		return nil, "this build has no mesh-cost command"
	}
	out := map[string]meshCost{}
	var notes []string
	for _, h := range hosts {
		rtt, rate := fmt.Sprintf("%dms", h.link.RTT().Milliseconds()), fmt.Sprintf("%.0fMbit/s", h.link.Down.RateBps/1e6)
		args := []string{"calc", "--rtt", rtt, "--rate", rate, "--json"}
		for _, s := range h.server {
			args = append(args, "--"+strings.TrimPrefix(s.Key, "net.ipv4.tcp_"), s.Value)
		}
		stdout, errOut, code := exe(t, bin, args...)
		var calc struct {
			Receiver, Sender struct {
				Window float64 `json:"window_bytes"`
			}
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &calc) != nil {
			t.Fatalf("longhaul %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		window := int64(min(calc.Receiver.Window, calc.Sender.Window))
		args = []string{"mesh-cost", "--sites", strconv.Itoa(probers + len(hosts)), "--topology", "hub", "--hubs", strconv.Itoa(probers),
			"--interval", promDuration(interval), "--path", rtt + "/" + rate, "--window", strconv.FormatInt(window, 10), "--json"}
		stdout, errOut, code = exe(t, bin, args...)
		var mc meshCost
		if code != 0 || json.Unmarshal([]byte(stdout), &mc) != nil {
			t.Fatalf("longhaul %s: exit %d\n%s", strings.Join(args, " "), code, errOut)
		}
		out[h.name] = mc
		notes = append(notes, fmt.Sprintf("%s %.0f MB/%.1f s (window %s, interval >= %.0f s)", h.name, mc.ProbeBytes/1e6, mc.ProbeS, fmtBytes(float64(window)), mc.SuggestedS))
	}
	return out, "longhaul mesh-cost --sites 12 --topology hub --hubs 3 --path RTT/RATE --window W (longhaul calc's with the far buffers) --interval " + promDuration(interval) + " per path: " + strings.Join(notes, "; ")
}

// bufMax is the far host's buffer max (tcp_wmem's, the same as
// tcp_rmem's in scaleHosts).
func bufMax(h *farHost) string {
	f := strings.Fields(h.server[0].Value)
	n, _ := strconv.ParseFloat(f[len(f)-1], 64)
	return fmtBytes(n)
}
