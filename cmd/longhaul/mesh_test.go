//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// farHost is one far host of the lab mesh: its emulated path from the
// prober, its serve, and what should limit each direction.
type farHost struct {
	name   string
	link   emupath.Link
	server []topo.Sysctl
	// want: direction -> "host setting" (or "path") of the limit.
	want map[string]string
	path *emupath.Path
	addr string
	log  *lockedBuf // serve's log (its sessions, for the servers' side of a bench)
	// serveArgs are more flags of its serve.
	serveArgs []string
}

// upMesh brings up a star: one prober namespace and a far host per
// entry, each behind its own emulated path (198.18.i.1 -> 198.18.i.2),
// each running longhaul serve.
func upMesh(t *testing.T, bin, prefix, token string, hosts []*farHost) (client string) {
	t.Helper()
	for i, h := range hosts {
		up, down, err := h.link.Configs()
		if err != nil {
			t.Fatal(err)
		}
		ts := topo.Spec{Prefix: prefix, CC: "cubic", ServerSysctls: h.server, Dev: fmt.Sprintf("lh%d", i),
			ClientAddr: netip.AddrFrom4([4]byte{198, 18, byte(i), 1}), ServerAddr: netip.AddrFrom4([4]byte{198, 18, byte(i), 2})}
		if i > 0 {
			ts.JoinClient = client
		}
		p, err := emupath.Up(context.Background(), emupath.Spec{Topo: ts, Up: up, Down: down, RTT: h.link.RTT()}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() }) // the joined paths close first, the shared client last
		h.path, h.addr = p, ts.ServerAddr.String()
		client = p.Topo.Client().Netns
		sv := p.Topo.Server()
		srv := exec.Command(bin, append([]string{"serve", "--netns", sv.Netns, "--auth", token, "--listen", net.JoinHostPort(h.addr, "9978")}, h.serveArgs...)...)
		h.log = &lockedBuf{}
		srv.Stderr = h.log
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = srv.Process.Signal(syscall.SIGTERM)
			_ = srv.Wait()
		})
		if err := emupath.WaitListening(context.Background(), srv, sv.Netns, 9978, "serve", 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return client
}

// meshOff compares each far host's latest probe in Prometheus with its
// direct test: the rates within 10% (25% where a host's setting holds
// the direction), the limits as the host's want.
func meshOff(t *testing.T, prom string, hosts []*farHost, direct map[string]testdoc.Doc) map[string]string {
	t.Helper()
	off := map[string]string{}
	for _, h := range hosts {
		inst := net.JoinHostPort(h.addr, "9978")
		rates := promQuery(t, prom, fmt.Sprintf(`longhaul_probe_throughput_bits_per_second{instance=%q}`, inst), "direction")
		path := promQuery(t, prom, fmt.Sprintf(`longhaul_probe_path_rate_bits_per_second{instance=%q}`, inst), "instance")[inst]
		doc := direct[h.name]
		if d := doc.PathRateBps; path < 0.9*d || path > 1.1*d {
			off[h.name+" path"] = fmt.Sprintf("%s: path rate %.1f Mbit/s in Prometheus, %.1f by a direct test: not within 10%%", h.name, path/1e6, d/1e6)
		}
		for _, d := range doc.Directions {
			// A direction a host's buffer holds swings more from one
			// test to the next: fra's 128 KiB send buffer carried
			// 18.3-19.5 or 22.1-22.6 Mbit/s, run after run, direct or
			// probed alike.
			band := 0.1
			if d.Limit.Setting != "" {
				band = 0.25
			}
			if got := rates[d.Name]; got < (1-band)*d.ThroughputBps || got > (1+band)*d.ThroughputBps {
				off[h.name+" "+d.Name+" rate"] = fmt.Sprintf("%s %s: %.1f Mbit/s in Prometheus, %.1f by a direct test: not within %.0f%%", h.name, d.Name, got/1e6, d.ThroughputBps/1e6, 100*band)
			}
		}
		took := promQuery(t, prom, fmt.Sprintf(`longhaul_probe_duration_seconds{instance=%q}`, inst), "instance")[inst]
		for _, r := range promRun(t, prom, fmt.Sprintf(`longhaul_probe_limit_info{instance=%q}`, inst)) {
			dir, got := r.Metric["direction"], limitOf(r.Metric["host"], r.Metric["setting"])
			t.Logf("prometheus %s %s: %.1f Mbit/s, limit %s (%s); the probe took %.1f s", h.name, dir, rates[dir]/1e6, got, r.Metric["verdict"], took)
			if want, ok := h.want[dir]; ok && got != want {
				off[h.name+" "+dir+" limit"] = fmt.Sprintf("%s %s: limited by %q, want %q", h.name, dir, got, want)
			}
		}
	}
	return off
}

// stillOff is what has not held in any round so far, each check's last
// miss: the checks of off (every check before the first round, nil) that
// missed again in this round's miss.
func stillOff(off, miss map[string]string) map[string]string {
	if off == nil {
		return maps.Clone(miss)
	}
	next := map[string]string{}
	for k := range off {
		if m, ok := miss[k]; ok {
			next[k] = m
		}
	}
	return next
}

// limitOf names a direction's limit as "host setting", or the host alone.
func limitOf(host, setting string) string {
	if setting == "" {
		return host
	}
	return host + " " + setting
}

// TestIntegrationProbeMesh is the fleet in the lab: one prober (the
// exporter with /probe) and three far hosts, each behind its own
// emulated path, a real Prometheus scraping the probes through the
// shipped scrape config (file_sd and relabelling) and rules. Each path's
// rate in Prometheus is within 10% of a direct longhaul test (a
// direction a host's buffer holds within 25%); the
// limiting host and setting are right on every path; when one far host's
// tcp_rmem is lowered mid-run the host-setting alert fires, naming it,
// within two probe intervals, and resolves once it is restored; every
// query of the mesh dashboard answers.
func TestIntegrationProbeMesh(t *testing.T) {
	bin, prefix := emulateEnv(t, "prometheus")
	hostCC(t)
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("mesh-test-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(rtt time.Duration, bps float64) emupath.Link {
		d := emupath.Direction{Delay: rtt / 2, RateBps: bps}
		return emupath.Link{Up: d, Down: d}
	}
	const lowRmem = "4096 32768 65536"
	hosts := []*farHost{
		// The server's send buffer holds the download back.
		{name: "fra", link: link(40*time.Millisecond, 100e6), server: sysctls("net.ipv4.tcp_wmem", "4096 16384 131072"),
			want: map[string]string{"download": "server net.ipv4.tcp_wmem"}},
		// Buffers fit: the path is the limit.
		{name: "sin", link: link(60*time.Millisecond, 40e6),
			want: map[string]string{"download": "path", "upload": "path"}},
		// The server's receive buffer holds the upload back.
		{name: "nyc", link: link(30*time.Millisecond, 60e6), server: sysctls("net.ipv4.tcp_rmem", lowRmem),
			want: map[string]string{"upload": "server net.ipv4.tcp_rmem"}},
		// make bench-mesh: two more far hosts and three alert cycles.
		{name: "syd", link: link(100*time.Millisecond, 20e6),
			want: map[string]string{"download": "path", "upload": "path"}},
		{name: "gru", link: link(80*time.Millisecond, 80e6), server: sysctls("net.ipv4.tcp_wmem", "4096 16384 262144"),
			want: map[string]string{"download": "server net.ipv4.tcp_wmem"}},
	}
	cycles := 1
	if os.Getenv("LONGHAUL_BENCH_MESH") == "" {
		hosts = hosts[:3]
	} else {
		cycles = 3
	}
	client := upMesh(t, bin, prefix, token, hosts)

	// Direct tests first, all paths at once as Prometheus will probe
	// them (each path has its own emulator; they share the prober's CPU).
	direct := map[string]testdoc.Doc{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Go(func() {
			out, errOut, code := exe(t, bin, "test", h.addr, "--netns", client, "--auth", token, "--duration", "2s", "--streams", "4", "--json")
			var doc testdoc.Doc
			if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
				t.Errorf("test %s: exit %d\n%s", h.name, code, errOut)
				return
			}
			mu.Lock()
			direct[h.name] = doc
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, h := range hosts {
		doc := direct[h.name]
		for _, d := range doc.Directions {
			t.Logf("direct %s %s: %.1f Mbit/s, limit %s; path rate %.1f Mbit/s", h.name, d.Name, d.ThroughputBps/1e6, limitOf(d.Limit.Host, d.Limit.Setting), doc.PathRateBps/1e6)
		}
	}

	// The prober: the exporter in the client's namespace, probes from
	// there, its port on the host's loopback.
	exp := freePort(t)
	startExporter(t, bin, exp, "--netns", client, "--probe-allow", "198.18.0.0/16", "--probe-auth", token, "--probe-min-interval", "0s")

	// Prometheus with the shipped probe job and rules; only the
	// intervals, the rules' hour and the files' places are the lab's.
	// A probe here takes 7-9 s (three 2 s phases and the pings); five
	// at once (make bench-mesh) take longer.
	interval := 15 * time.Second
	if len(hosts) > 3 {
		interval = 20 * time.Second
	}
	cfg, err := os.ReadFile("../../deploy/prometheus/longhaul-probes.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile("../../deploy/prometheus/longhaul-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rules), "for: 1h") {
		t.Fatal("the host-setting alert's hour is not in the rules any more: update the lab's rewrite")
	}
	rules = []byte(strings.ReplaceAll(string(rules), "for: 1h", "for: 2s"))
	for name, b := range map[string][]byte{"rules.yml": rules,
		"longhaul-probe-targets/mesh.yml": fmt.Appendf(nil, "- targets: ['%s']\n  labels: {source: lab, prober: '%s'}\n", strings.Join(targets(hosts), "', '"), exp),
		"longhaul-exporters/x.yml":        []byte("[]\n")} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The shipped jobs merged as a team merges them: under a
	// prometheus.yml of its own, the file_sd directories beside it.
	cfgText := "global:\n  evaluation_interval: 2s\nrule_files:\n  - rules.yml\n" + strings.NewReplacer(
		"scrape_interval: 5m", "scrape_interval: "+interval.String(),
		"scrape_timeout: 30s", "scrape_timeout: "+(interval-time.Second).String()).Replace(string(cfg))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := freePort(t)
	startDaemon(t, "prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+prom, "--log.level=warn")
	waitFor(t, "a probe result of every path in Prometheus", 3*interval, func() bool {
		resp, err := http.Get("http://" + prom + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK && len(promQuery(t, prom, `longhaul_probe_success{job="longhaul-probe", source="lab"} == 1`, "instance")) == len(hosts)
	})

	// Rates within 10% (25%) of the direct tests; limits right. A probe is one
	// measurement on a shared 2-core machine, as each direct test is:
	// one that misses may be followed by two more before it fails. Each
	// check holds once in three rounds, whichever (a full make test run
	// missed nyc's upload in rounds 1 and 2 and sin's download, at half
	// its rate, in round 3).
	var off map[string]string // the checks that have not held yet: their last miss
	for probe := 1; probe <= 3; probe++ {
		miss := meshOff(t, prom, hosts, direct)
		if off = stillOff(off, miss); len(off) == 0 {
			break
		}
		t.Logf("probe round %d: %s", probe, strings.Join(slices.Sorted(maps.Values(miss)), "; "))
		if probe < 3 {
			time.Sleep(interval)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(off)) {
		t.Error(off[k])
	}
	meshDashboardQueries(t, prom)

	// One far host's tcp_rmem lowered: the alert names it and the
	// setting within two probe intervals; restored, it resolves.
	sin := hosts[1]
	setRmem := func(v string) {
		if out, err := exec.Command("ip", "netns", "exec", sin.path.Topo.Server().Netns, "sysctl", "-w", "net.ipv4.tcp_rmem="+v).CombinedOutput(); err != nil {
			t.Fatalf("sysctl: %v %s", err, out)
		}
	}
	out, err := exec.Command("ip", "netns", "exec", sin.path.Topo.Server().Netns, "sysctl", "-n", "net.ipv4.tcp_rmem").Output()
	if err != nil {
		t.Fatal(err)
	}
	before := strings.Join(strings.Fields(string(out)), " ")
	alert := func() (firing bool, labels map[string]string) {
		resp, err := http.Get("http://" + prom + "/api/v1/alerts")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var doc struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		for _, a := range doc.Data.Alerts {
			if a.Labels["alertname"] == "LonghaulPathHostLimited" && a.State == "firing" && a.Labels["instance"] == net.JoinHostPort(sin.addr, "9978") {
				return true, a.Labels
			}
		}
		return false, nil
	}
	for cycle := range cycles {
		if f, l := alert(); f {
			t.Fatalf("the alert fires before the change: %v", l)
		}
		setRmem(lowRmem)
		lowered := time.Now()
		for end := time.Now().Add(2 * interval); ; time.Sleep(time.Second) {
			if f, _ := alert(); f {
				break
			}
			if time.Now().After(end) {
				resp, _ := http.Get("http://" + prom + "/api/v1/alerts")
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Fatalf("no alert for sin %s after the change; sin's limits: %v\nalerts: %s", time.Since(lowered).Round(time.Second),
					promRun(t, prom, fmt.Sprintf(`longhaul_probe_limit_info{instance="%s:9978"}`, sin.addr)), b)
			}
		}
		_, labels := alert()
		t.Logf("cycle %d: alert after %s: %v", cycle+1, time.Since(lowered).Round(time.Second), labels)
		if labels["host"] != "server" || labels["setting"] != "net.ipv4.tcp_rmem" || labels["direction"] != "upload" || labels["source"] != "lab" {
			t.Errorf("the alert names %v, want the server's (sin's) net.ipv4.tcp_rmem on the upload", labels)
		}
		setRmem(before)
		restored := time.Now()
		waitFor(t, "the alert to resolve", 2*interval, func() bool { f, _ := alert(); return !f })
		t.Logf("cycle %d: resolved after %s", cycle+1, time.Since(restored).Round(time.Second))
	}
}

func targets(hosts []*farHost) []string {
	var out []string
	for _, h := range hosts {
		out = append(out, net.JoinHostPort(h.addr, "9978"))
	}
	return out
}

// meshDashboardQueries runs every query of the mesh dashboard against
// the lab's Prometheus: each must be valid, and those of the paths'
// results must answer (failures may be none).
func meshDashboardQueries(t *testing.T, prom string) {
	t.Helper()
	dash := readDashboard(t, "longhaul-mesh.json")
	vars := strings.NewReplacer("$job", ".*", "$source", ".*", "$target", ".*")
	recorded := regexp.MustCompile(`longhaul:`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			n++
			res := promRun(t, prom, vars.Replace(tg.Expr))
			if len(res) == 0 && !strings.Contains(tg.Expr, "failure_info") && !recorded.MatchString(tg.Expr) {
				t.Errorf("mesh dashboard panel %q: no data for %s", p.Title, tg.Expr)
			}
		}
	}
	if n < 10 {
		t.Errorf("the mesh dashboard has %d queries", n)
	}
}

// A check the probes missed in one round and met in another holds; one
// missed in every round fails with its last miss; one met only in the
// first round and missed after holds too.
func TestStillOff(t *testing.T) {
	off := stillOff(nil, map[string]string{"nyc upload rate": "6.6", "sin path": "x"})
	off = stillOff(off, map[string]string{"nyc upload rate": "7.4", "sin download rate": "19.4"})
	if len(off) != 1 || off["nyc upload rate"] != "7.4" {
		t.Fatalf("after two rounds: %v", off)
	}
	if off = stillOff(off, map[string]string{"sin download rate": "19.4"}); len(off) != 0 {
		t.Errorf("after three rounds: %v, want none", off)
	}
	if off := stillOff(nil, map[string]string{}); off == nil || len(off) != 0 {
		t.Errorf("a first round with no miss: %v", off)
	}
}
