//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// Ground truth for longhaul serve / longhaul test: each case builds an
// emulated path whose limit is known by construction (a small send or
// receive buffer at one end, big buffers, random loss), runs serve in
// the server's namespace and test in the client's (the built binary,
// each with --netns), and checks the verdict names that host and
// setting, the plans and the model.

// twoHosts is a running emulated path with longhaul serve on its server
// end.
type twoHosts struct {
	t      *testing.T
	bin    string
	path   *emupath.Path
	token  string
	dir    string
	server *exec.Cmd
	slog   *bytes.Buffer
	// addr is the server's address on the path ("" is serveAddr).
	addr string
}

const serveAddr = "198.18.0.2"

// host is the server's address as test and serve take it.
func (h *twoHosts) host() string {
	if h.addr != "" {
		return h.addr
	}
	return serveAddr
}

func sysctls(kv ...string) []topo.Sysctl {
	var out []topo.Sysctl
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, topo.Sysctl{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// upTwoHosts brings up the path and starts serve on it.
func upTwoHosts(t *testing.T, link emupath.Link, client, server []topo.Sysctl, serveArgs ...string) *twoHosts {
	t.Helper()
	return startTwoHosts(t, upPath(t, link, client, server), serveArgs...)
}

// startTwoHosts starts serve on a path that is up.
func startTwoHosts(t *testing.T, h *twoHosts, serveArgs ...string) *twoHosts {
	t.Helper()
	h.token = filepath.Join(h.dir, "token")
	if err := os.WriteFile(h.token, []byte("test-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.startServer(serveArgs...)
	return h
}

// upPath brings up the emulated path alone.
func upPath(t *testing.T, link emupath.Link, client, server []topo.Sysctl, peers ...string) *twoHosts {
	t.Helper()
	return upPathSpec(t, link, topo.Spec{CC: "cubic", ClientSysctls: client, ServerSysctls: server}, peers...)
}

// upPathSpec brings up the emulated path with a topology of the caller's
// (IPv6, sysctls); the prefix is the test's own.
func upPathSpec(t *testing.T, link emupath.Link, ts topo.Spec, peers ...string) *twoHosts {
	t.Helper()
	bin, prefix := emulateEnv(t, peers...)
	hostCC(t)
	up, down, err := link.Configs()
	if err != nil {
		t.Fatal(err)
	}
	ts.Prefix = prefix
	spec := emupath.Spec{Topo: ts, Up: up, Down: down, RTT: link.RTT()}
	p, err := emupath.Up(context.Background(), spec, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h := &twoHosts{t: t, bin: bin, path: p, dir: t.TempDir(), slog: &bytes.Buffer{}}
	t.Cleanup(h.close)
	return h
}

func (h *twoHosts) startServer(extra ...string) {
	h.t.Helper()
	sv := h.path.Topo.Server()
	args := append([]string{"serve", "--netns", sv.Netns, "--auth", h.token, "--listen", net.JoinHostPort(h.host(), "9978")}, extra...)
	h.server = exec.Command(h.bin, args...)
	h.server.Stderr = h.slog
	if err := h.server.Start(); err != nil {
		h.t.Fatal(err)
	}
	if err := emupath.WaitListening(context.Background(), h.server, sv.Netns, 9978, "longhaul serve", 10*time.Second); err != nil {
		h.t.Fatalf("%v\n%s", err, h.slog)
	}
}

// close stops serve (it must exit cleanly on SIGTERM) and the path.
func (h *twoHosts) close() {
	if h.server != nil && h.server.Process != nil {
		_ = h.server.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- h.server.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("serve exited with %v\n%s", err, h.slog)
			}
		case <-time.After(10 * time.Second):
			_ = h.server.Process.Kill()
			<-done
			h.t.Errorf("serve did not stop within 10 s of SIGTERM")
		}
	}
	if h.path != nil {
		st := h.path.Emu.Stop()
		if st.Overloaded {
			h.t.Logf("the emulator was overloaded in this run")
		}
		h.path.Close()
	}
}

// test runs longhaul test in the client's namespace; out is the
// directory of its -o files.
func (h *twoHosts) test(out string, args ...string) *testdoc.Doc {
	h.t.Helper()
	all := append([]string{"test", h.host(), "--netns", h.path.Topo.Client().Netns, "--auth", h.token, "-o", out}, args...)
	stdout, stderr, code := exe(h.t, h.bin, all...)
	if code != 0 {
		h.t.Fatalf("test: exit %d\nstdout:\n%s\nstderr:\n%s\nserve log:\n%s", code, stdout, stderr, h.slog)
	}
	f, err := os.Open(filepath.Join(out, "test.json"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	d, err := testdoc.Read(f)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Logf("longhaul %s\n%s", strings.Join(all, " "), stdout)
	h.judgedAgain(out, args)
	return d
}

// judgedAgain checks that test --judge on the run's raw.json (with the
// run's --rate) writes the run's test.json and plans again, byte for
// byte.
func (h *twoHosts) judgedAgain(out string, args []string) {
	h.t.Helper()
	again := out + "-judged"
	judge := []string{"test", "--judge", filepath.Join(out, "raw.json"), "-o", again}
	if i := slices.Index(args, "--rate"); i >= 0 && i+1 < len(args) {
		judge = append(judge, args[i:i+2]...)
	}
	if stdout, stderr, code := exe(h.t, h.bin, judge...); code != 0 {
		h.t.Fatalf("test --judge: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, name := range []string{"test.json", "client-plan.json", "server-plan.json"} {
		want, errW := os.ReadFile(filepath.Join(out, name))
		got, errG := os.ReadFile(filepath.Join(again, name))
		if (errW == nil) != (errG == nil) || !bytes.Equal(want, got) {
			h.t.Errorf("test --judge wrote another %s (%v, %v):\n%s\nthe run's:\n%s", name, errG, errW, got, want)
		}
	}
}

func direction(t *testing.T, d *testdoc.Doc, name string) testdoc.Direction {
	t.Helper()
	for _, x := range d.Directions {
		if x.Name == name {
			return x
		}
	}
	t.Fatalf("no %s in the result", name)
	return testdoc.Direction{}
}

func planItem(t *testing.T, file, key string) (current, planned string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Items []struct{ Key, Current, New string }
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, it := range p.Items {
		if it.Key == key {
			return it.Current, it.New
		}
	}
	return "", ""
}

const smallBuf = "4096 16384 131072"

// The server's small tcp_wmem limits the download and its small tcp_rmem
// the upload; both verdicts name the server and the setting, the server's
// plan raises both, and after both plans are applied in the namespaces a
// second test measures the gain the model predicted (within 15%).
func TestIntegrationTestServerBuffers(t *testing.T) {
	link := emupath.Symmetric(50*time.Millisecond, 100e6, 0, 0, 1)
	h := upTwoHosts(t, link, nil, sysctls("net.ipv4.tcp_wmem", smallBuf, "net.ipv4.tcp_rmem", smallBuf))
	before := filepath.Join(h.dir, "before")
	d := h.test(before, "--rounds", "80", "--streams", "0", "--rate", "100Mbit/s")
	down, up := direction(t, d, "download"), direction(t, d, "upload")
	if down.Flow.Verdict.Verdict != "sndbuf-limited" || down.Limit.Host != "server" || down.Limit.Setting != "net.ipv4.tcp_wmem" {
		t.Errorf("download: verdict %s, limit %+v; want sndbuf-limited naming the server's net.ipv4.tcp_wmem", down.Flow.Verdict.Verdict, down.Limit)
	}
	if up.Flow.Verdict.Verdict != "rwnd-limited" || up.Limit.Host != "server" || up.Limit.Setting != "net.ipv4.tcp_rmem" {
		t.Errorf("upload: verdict %s, limit %+v; want rwnd-limited naming the server's net.ipv4.tcp_rmem", up.Flow.Verdict.Verdict, up.Limit)
	}
	for _, key := range []string{"net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem"} {
		cur, planned := planItem(t, filepath.Join(before, "server-plan.json"), key)
		if cur != smallBuf || planned == "" || planned == cur {
			t.Errorf("server plan %s: %q -> %q; want it raised from %q", key, cur, planned, smallBuf)
		}
	}
	// Apply both plans where they belong, then test again.
	for _, p := range []struct{ file, ns string }{
		{"server-plan.json", h.path.Topo.Server().Netns},
		{"client-plan.json", h.path.Topo.Client().Netns},
	} {
		out, errOut, code := exe(t, h.bin, "apply", filepath.Join(before, p.file), "--netns", p.ns, "--state-dir", filepath.Join(h.dir, "state-"+p.ns))
		if code != 0 {
			t.Fatalf("apply %s: exit %d\n%s\n%s", p.file, code, out, errOut)
		}
	}
	// The model predicts the buffers' ceiling, not the path's losses:
	// when cubic's slow start overshoots the one-BDP queue (HyStart
	// missing the rise; measured once in CI: 454 segments resent, the 4 s
	// phase at 82% of the model, its second half still recovering), the
	// run is made again once, and said so (no host setting named, so
	// the plans did their part).
	check := func(after *testdoc.Doc) (bad []string, lossy bool) {
		for _, name := range []string{"download", "upload"} {
			b, a := direction(t, d, name), direction(t, after, name)
			pred := b.Model.AfterPlansBps
			if pred <= 0 {
				bad = append(bad, name+": no prediction after the plans")
				continue
			}
			if r := a.ThroughputBps / pred; r < 0.85 || r > 1.15 {
				bad = append(bad, fmt.Sprintf("%s after the plans: %.4g bit/s, the model predicted %.4g bit/s (%.0f%%, want 85..115%%); before %.4g bit/s; %d segments resent, limit %s",
					name, a.ThroughputBps, pred, 100*r, b.ThroughputBps, a.Flow.Retrans, a.Limit.Host))
				lossy = lossy || (r < 0.85 && a.Flow.Retrans > 0 && a.Limit.Setting == "")
			}
		}
		return bad, lossy
	}
	afterDir := filepath.Join(h.dir, "after")
	bad, lossy := check(h.test(afterDir, "--rounds", "80", "--streams", "0", "--rate", "100Mbit/s"))
	if len(bad) > 0 && lossy {
		t.Logf("losses held the run, made again: %s", strings.Join(bad, "; "))
		afterDir = filepath.Join(h.dir, "after-again")
		bad, _ = check(h.test(afterDir, "--rounds", "80", "--streams", "0", "--rate", "100Mbit/s"))
	}
	if len(bad) > 0 {
		t.Error(strings.Join(bad, "\n"))
	}
	out, errOut, code := exe(t, h.bin, "test", "--compare", filepath.Join(before, "test.json"), filepath.Join(afterDir, "test.json"))
	if code != 0 || !strings.Contains(out, "download") {
		t.Errorf("compare: exit %d\n%s\n%s", code, out, errOut)
	}
	t.Logf("compare:\n%s", out)
}

// The client's small tcp_rmem limits the download: the verdict names the
// client's receive buffer.
func TestIntegrationTestClientReceiveBuffer(t *testing.T) {
	link := emupath.Symmetric(50*time.Millisecond, 100e6, 0, 0, 1)
	h := upTwoHosts(t, link, sysctls("net.ipv4.tcp_rmem", smallBuf), nil)
	dir := filepath.Join(h.dir, "out")
	d := h.test(dir, "--download", "--rounds", "40", "--streams", "0", "--rate", "100Mbit/s")
	down := direction(t, d, "download")
	if down.Flow.Verdict.Verdict != "rwnd-limited" || down.Limit.Host != "client" || down.Limit.Setting != "net.ipv4.tcp_rmem" {
		t.Errorf("download: verdict %s, limit %+v; want rwnd-limited naming the client's net.ipv4.tcp_rmem", down.Flow.Verdict.Verdict, down.Limit)
	}
	if cur, planned := planItem(t, filepath.Join(dir, "client-plan.json"), "net.ipv4.tcp_rmem"); cur != smallBuf || planned == cur {
		t.Errorf("client plan tcp_rmem: %q -> %q; want it raised", cur, planned)
	}
}

// Big buffers at 1 Gbit/s x 200 ms: the path is the limit and the
// capacity phase measures the path's goodput within 10%.
func TestIntegrationTestBigBuffersPath(t *testing.T) {
	big := "4096 131072 134217728"
	link := emupath.Symmetric(200*time.Millisecond, 1e9, 0, 0, 1)
	h := upTwoHosts(t, link, sysctls("net.ipv4.tcp_rmem", big, "net.ipv4.tcp_wmem", big), sysctls("net.ipv4.tcp_rmem", big, "net.ipv4.tcp_wmem", big))
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "50", "--streams", "4")
	down := direction(t, d, "download")
	if down.Limit.Host != "path" {
		t.Errorf("download: limit %+v (verdict %s); want the path", down.Limit, down.Flow.Verdict.Verdict)
	}
	goodput := 1e9 * 1448 / 1538
	if d.Capacity == nil {
		t.Fatal("no capacity estimate")
	}
	if r := d.Capacity.Bps / goodput; r < 0.9 || r > 1.1 {
		t.Errorf("capacity %.4g bit/s is %.0f%% of the path's goodput %.4g bit/s; want within 10%%", d.Capacity.Bps, 100*r, goodput)
	}
}

// 1% random loss: the download is loss-limited, the path is named and
// the cause is random loss (no queue: the link is far from full), with
// the fix for the network and the sender.
func TestIntegrationTestLoss(t *testing.T) {
	big := "4096 131072 33554432"
	link := emupath.Symmetric(50*time.Millisecond, 100e6, 0.01, 0, 1)
	h := upTwoHosts(t, link, sysctls("net.ipv4.tcp_rmem", big), sysctls("net.ipv4.tcp_wmem", big))
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "60", "--streams", "0", "--cc-phase", "bbr")
	down := direction(t, d, "download")
	if down.Flow.Verdict.Verdict != "loss-limited" || down.Limit.Host != "path" {
		t.Errorf("download: verdict %s, limit %+v; want loss-limited, the path", down.Flow.Verdict.Verdict, down.Limit)
	}
	if c := down.Cause; c == nil || c.Name != diagnose.CauseRandomLoss || !strings.Contains(down.Flow.Fix, "network: find the link") {
		t.Errorf("download: cause %+v, fix %q; want random loss and its fix", c, down.Flow.Fix)
	}
	// The same path with bbr on the server: it does not back off at
	// random losses, and the cause quotes what it carried.
	if len(d.CCPhases) != 1 || !d.CCPhases[0].Granted || d.CCPhases[0].ThroughputBps < 2*down.ThroughputBps {
		t.Errorf("bbr phase %+v against cubic's %.4g bit/s", d.CCPhases, down.ThroughputBps)
	} else if c := down.Cause; c != nil && c.Numbers["bbr_bps"] != d.CCPhases[0].ThroughputBps {
		t.Errorf("the cause does not quote bbr's rate: %v", c.Numbers)
	}
}

// A middlebox strips window scaling from the client's SYN: the server
// answers without it and no window exceeds 64 KB, although both hosts
// allow scaling and big buffers. The limit is the path's (who acts: the
// network), not a buffer; with scaling off on the client it is the
// client's setting.
func TestIntegrationTestWindowScaleStripped(t *testing.T) {
	h := upKnobPath(t, func(l *emupath.Link) error { return l.Up.Middlebox.Set("wscale=strip") })
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "40", "--streams", "0", "--rate", "100Mbit/s")
	down := direction(t, d, "download")
	c := down.Cause
	if down.Flow.Verdict.Verdict != diagnose.RwndLimited || c == nil || c.Name != diagnose.CauseWindowScaleStripped || down.Limit.Host != "path" {
		t.Fatalf("download: verdict %s, cause %+v, limit %+v; want rwnd-limited, window-scale-stripped, the path", down.Flow.Verdict.Verdict, c, down.Limit)
	}
	if !strings.Contains(down.Flow.Fix, "network: let the TCP window scale option") || !strings.Contains(down.Flow.Fix, "parallel streams") {
		t.Errorf("fix %q: want the network's fix and the streams", down.Flow.Fix)
	}
	// The flow stayed under 64 KB per round trip.
	if ceiling := c.Numbers["ceiling_bps"]; down.ThroughputBps > 1.05*ceiling || down.ThroughputBps < 0.5*ceiling {
		t.Errorf("throughput %.4g bit/s against the 64 KB ceiling %.4g", down.ThroughputBps, ceiling)
	}
}

func TestIntegrationTestWindowScalingOff(t *testing.T) {
	big := "4096 131072 33554432"
	client := append(sysctls("net.ipv4.tcp_rmem", big), sysctls("net.ipv4.tcp_window_scaling", "0")...)
	h := upTwoHosts(t, emupath.Symmetric(50*time.Millisecond, 100e6, 0, 0, 1), client, sysctls("net.ipv4.tcp_wmem", big))
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "40", "--streams", "0", "--rate", "100Mbit/s")
	down := direction(t, d, "download")
	if down.Cause != nil || down.Limit.Host != "client" || down.Limit.Setting != "net.ipv4.tcp_window_scaling" {
		t.Fatalf("download: cause %+v, limit %+v; want the client's net.ipv4.tcp_window_scaling", down.Cause, down.Limit)
	}
	if cur, planned := planItem(t, filepath.Join(h.dir, "out", "client-plan.json"), "net.ipv4.tcp_window_scaling"); cur != "0" || planned != "1" {
		t.Errorf("the client's plan: net.ipv4.tcp_window_scaling %q -> %q; want 0 -> 1", cur, planned)
	}
}

// Segments held back 30 ms on 5% of the path: Linux's RACK mostly
// tolerates it; test names it, as seen when the flow was not held far
// below the path's rate (unknown here: no --rate, no capacity phase),
// else as the cause.
func TestIntegrationTestReorderSeen(t *testing.T) {
	h := upKnobPath(t, func(l *emupath.Link) error { return l.Down.Reorder.Set("5%/30ms") })
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "60", "--streams", "0")
	down := direction(t, d, "download")
	named := down.Cause
	if len(down.Seen) == 1 {
		named = &down.Seen[0]
	}
	if named == nil || named.Name != diagnose.CauseReordering || named.Numbers["reorder_events"] < 10 {
		t.Errorf("download: seen %+v, cause %+v; want reordering named", down.Seen, down.Cause)
	}
}

// The path from the server drops packets above 1400 bytes without a word
// (a PMTU black hole): the session answer never arrives, test tries again
// with small segments, names the black hole for the path and measures
// the download with them.
func TestIntegrationTestBlackHole(t *testing.T) {
	h := upKnobPath(t, func(l *emupath.Link) error { return l.Down.MTU.Set("1400/blackhole") })
	d := h.test(filepath.Join(h.dir, "out"), "--download", "--rounds", "40", "--streams", "0")
	if len(d.Causes) != 1 || d.Causes[0].Name != diagnose.CausePMTUBlackHole {
		t.Fatalf("causes %+v; want a PMTU black hole", d.Causes)
	}
	if down := direction(t, d, "download"); down.ThroughputBps < 50e6 {
		t.Errorf("download with small segments: %.4g bit/s", down.ThroughputBps)
	}
	if len(d.Fix) == 0 || !strings.HasPrefix(d.Fix[0], "fix for the path (pmtu-black-hole)") {
		t.Errorf("fix %q", d.Fix)
	}
}

// upKnobPath is serve on 50 ms x 100 Mbit/s with 32 MiB buffers at both
// ends and one path failure set on the link.
func upKnobPath(t *testing.T, set func(*emupath.Link) error) *twoHosts {
	t.Helper()
	big := "4096 131072 33554432"
	link := emupath.Symmetric(50*time.Millisecond, 100e6, 0, 0, 1)
	if err := set(&link); err != nil {
		t.Fatal(err)
	}
	return upTwoHosts(t, link, sysctls("net.ipv4.tcp_rmem", big), sysctls("net.ipv4.tcp_wmem", big))
}
