//go:build linux

package lab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/scenario"
	"github.com/longhaul/longhaul/internal/topo"
)

// servePort is where `longhaul serve` listens (its default).
const servePort = 9978

// causes: one run of the path-causes matrix (scenario.KindCauses), with
// this very binary as every tool: serve in the server's namespace (in
// its CPU limit, if the case has one), test in the client's, tcpdump at
// the server's end (the download's sender), flows on the server's
// sockets over the middle half of the single-stream download, and
// analyze on the capture once the test is over. Each tool's named cause
// goes in Named; a tool that failed names "?".
type causes struct{}

func (causes) Measure(ctx context.Context, e Env) (Measurement, error) {
	m := newMeasurement()
	self, err := os.Executable()
	if err != nil {
		return m, fmt.Errorf("lab: find longhaul itself: %w", err)
	}
	dir, err := os.MkdirTemp("", "longhaul-causes-")
	if err != nil {
		return m, err
	}
	defer os.RemoveAll(dir)
	token := filepath.Join(dir, "token")
	if err := writeToken(token); err != nil {
		return m, err
	}
	sv, cl := e.Path.Topo.Server(), e.Path.Topo.Client()
	srv := sv.Command(ctx, self, "serve", "--auth", token, "--listen", fmt.Sprintf(":%d", servePort))
	var srvLog bytes.Buffer
	srv.Stdout, srv.Stderr = &srvLog, &srvLog
	if err := srv.Start(); err != nil {
		return m, fmt.Errorf("start longhaul serve: %w", err)
	}
	defer stop(srv)
	if err := emupath.WaitListening(ctx, srv, sv.Netns, servePort, "longhaul serve", 10*time.Second); err != nil {
		return m, fmt.Errorf("%w: %s", err, lastLine(srvLog.String()))
	}
	pcap := filepath.Join(dir, "server.pcap")
	if e.OutDir != "" {
		m.Capture = filepath.Join("captures", e.runName()+".pcap")
		pcap = filepath.Join(e.OutDir, m.Capture)
	}
	// Outside the server's CPU limit: the capture and flows observe it.
	td, err := startCapture(pcap, func(bin string, args ...string) *exec.Cmd {
		return freeCommand(ctx, "ip", append([]string{"netns", "exec", sv.Netns, bin}, append(args, "tcp")...)...)
	}, sv.Dev)
	if err != nil {
		return m, err
	}
	defer stop(td)
	server := sv.Addr.String()
	if e.Case.Path != nil && e.Case.Path.IPv6 {
		server = "[" + sv.Addr6.String() + "]"
	}
	if cp := e.Case.Path; cp != nil && cp.Competing > 0 {
		// Past the test's end whatever it takes; ended with the run.
		end, err := startCompeting(ctx, e, cp.Competing, competingWarmup+2*scenario.CausesEstimate(e.Case))
		if err != nil {
			return m, err
		}
		defer end()
	}
	wait, span := flowsWindow(e.Case.Duration, e.RTT)
	flowsDoc := flowsLater(ctx, self, sv.Netns, wait, span)
	// And over the session's set-up, where a connection stuck on a PMTU
	// black hole lives (test waits 10 s for its session answer).
	setupDoc := flowsLater(ctx, self, sv.Netns, flowsSetupWait, flowsSetupSpan)
	testOut := filepath.Join(dir, "test")
	test := cl.Command(ctx, self, "test", server, "--auth", token, "--download", "--duration", e.Case.Duration.String(), "--loss-probes", "--json", "-o", testOut)
	var testErr bytes.Buffer
	test.Stderr = &testErr
	testDoc, runErr := test.Output()
	fl, setup := <-flowsDoc, <-setupDoc
	time.Sleep(100 * time.Millisecond) // tcpdump writes the last packets
	stop(td)
	if runErr != nil {
		m.Invalid = fmt.Sprintf("longhaul test failed (%v): %s", runErr, lastLine(testErr.String()))
		return m, nil
	}
	m.Named = judgeEnv(ctx, e, self, testDoc, pcap, [2][]byte{fl, setup}, testOut, m.Metrics)
	return m, nil
}

// judgeEnv is judgeRun on run e's path and documents' directory; the
// documents kept there include what test measured (testOut's raw.json),
// to judge again with a later build (longhaul test --judge).
func judgeEnv(ctx context.Context, e Env, self string, testDoc []byte, pcap string, flowsDocs [2][]byte, testOut string, metrics map[string]float64) map[string]string {
	var docs string
	if e.OutDir != "" {
		docs = filepath.Join(e.OutDir, "docs", e.runName())
	}
	link := 0.0
	if e.Case.Path != nil {
		link = pathmodel.Goodput(e.Case.Path.RateBps)
	}
	named := judgeRun(ctx, self, testDoc, pcap, flowsDocs, link, docs, metrics)
	if docs == "" {
		return named
	}
	if raw, err := os.ReadFile(filepath.Join(testOut, "raw.json")); err == nil {
		_ = os.WriteFile(docs+".test-raw.json", raw, 0o644)
	}
	return named
}

// judgeRun reads each tool's named cause (analyze run on the capture now)
// and the test's rates into metrics; with docs set, each tool's document
// is kept as docs.TOOL.json (what a person reads to see why). flowsDocs
// are flows' over the download and over the session's set-up: the
// download's names the cause, else a black hole the set-up's shows.
func judgeRun(ctx context.Context, self string, testDoc []byte, pcap string, flowsDocs [2][]byte, linkGoodput float64, docs string, metrics map[string]float64) map[string]string {
	named := map[string]string{scenario.ToolTest: "?", scenario.ToolAnalyze: "?", scenario.ToolFlows: "?"}
	n, single, rate, port, ok := testNamed(testDoc)
	if ok {
		named[scenario.ToolTest] = n
		metrics["single_bps"], metrics["path_rate_bps"] = single, rate
	}
	if port == "" {
		port = strconv.Itoa(servePort)
	}
	anDoc, err := freeCommand(ctx, self, "analyze", "--json", pcap).Output()
	if err == nil {
		if n, ok := analyzeNamed(anDoc, port, linkGoodput); ok {
			named[scenario.ToolAnalyze] = n
		}
	}
	if n, ok := flowsNamed(flowsDocs[0], port, linkGoodput); ok {
		named[scenario.ToolFlows] = n
	}
	if n := named[scenario.ToolFlows]; (n == "?" || n == scenario.NoCause) && flowsBlackHole(flowsDocs[1]) {
		named[scenario.ToolFlows] = diagnose.CausePMTUBlackHole
	}
	if docs != "" && os.MkdirAll(filepath.Dir(docs), 0o755) == nil {
		for tool, doc := range map[string][]byte{scenario.ToolTest: testDoc, scenario.ToolAnalyze: anDoc, scenario.ToolFlows: flowsDocs[0], scenario.ToolFlows + "-setup": flowsDocs[1]} {
			if len(doc) > 0 {
				_ = os.WriteFile(docs+"."+tool+".json", doc, 0o644)
			}
		}
	}
	return named
}

// flowsSetupWait, flowsSetupSpan: flows' window over the session's
// set-up, inside the 10 s test waits for its session answer before it
// tries smaller segments: the timer has resent a stuck segment 4 times
// or more by its end.
const (
	flowsSetupWait = 500 * time.Millisecond
	flowsSetupSpan = 4 * time.Second
)

// flowsLater runs flows on the namespace's sockets after wait, over span;
// its document (nil if ctx ends first) comes on the channel.
func flowsLater(ctx context.Context, self, netns string, wait, span time.Duration) <-chan []byte {
	doc := make(chan []byte, 1)
	go func() {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			doc <- nil
			return
		}
		out, _ := freeCommand(ctx, self, "flows", "--netns", netns, "--interval", span.String(), "--json").Output()
		doc <- out
	}()
	return doc
}

// flowsWindow is when flows starts reading the server's sockets and for
// how long: the middle half of the single-stream download, which starts
// after the session's set-up (a second and a few round trips).
func flowsWindow(dur, rtt time.Duration) (wait, span time.Duration) {
	return time.Second + 8*rtt + dur/4, dur / 2
}

// freeCommand is a command in its own process group, killed with it when
// ctx ends or this process dies, outside any namespace's CPU limit.
func freeCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return topo.KillGroup(cmd.Process) }
	return cmd
}

// writeToken writes a fresh pre-shared token for serve and test.
func writeToken(path string) error {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(b)+"\n"), 0o600)
}
