package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
)

// Options control how a scenario runs.
type Options struct {
	// OutDir receives captures (captures/<case>-<repeat>.pcap).
	OutDir string
	// Interval is the tcp_info sampling period of timed runs; 0 means
	// 100 ms. Short runs (objects, uploads) sample every 10 ms.
	Interval time.Duration
	// Progress, if set, is called before each run and at the end.
	Progress func(Progress)
	// Log receives messages for the user (a widened host setting).
	Log io.Writer
	// Prefix names the namespaces; "" means "lh".
	Prefix string
}

// Progress is the state of a lab run, for a progress line.
type Progress struct {
	Done, Total int
	Case        string
	Repeat      int
	Elapsed     time.Duration
	// ETA is the estimated time left (measured pace blended with the
	// scenario's estimate).
	ETA time.Duration
}

// settingKeys are read back in each namespace for every run.
var settingKeys = []string{
	"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_congestion_control",
	"net.ipv4.tcp_window_scaling", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_sack",
	"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_moderate_rcvbuf",
	"net.core.rmem_max", "net.core.wmem_max", "net.core.rmem_default", "net.core.wmem_default",
}

// Run executes every case of s Repeat times and writes the header and one
// line per run to w. Each run gets a fresh path. It stops at the first
// error that is not a property of one run (bad input, a peer that cannot
// start), and returns the runs made so far.
func Run(ctx context.Context, s *Scenario, h results.Header, w *results.Writer, opt Options) ([]results.Run, error) {
	if err := CheckPeers(s); err != nil {
		return nil, err
	}
	if opt.Interval == 0 {
		opt.Interval = 100 * time.Millisecond
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	restoreCC, err := AllowCC(s.CC, opt.Log)
	if err != nil {
		return nil, err
	}
	defer restoreCC()
	var objects []int64
	var upload int64
	for _, c := range s.Cases {
		if c.Kind == KindObject && !slices.Contains(objects, c.Bytes) {
			objects = append(objects, c.Bytes)
		}
		if c.Kind == KindUpload {
			upload = max(upload, c.Bytes)
		}
	}
	site, err := newSite(objects, upload)
	if err != nil {
		return nil, err
	}
	defer site.remove()
	if err := w.Header(h); err != nil {
		return nil, err
	}
	r := &runner{s: s, opt: opt, site: site}
	start := time.Now()
	total := s.Runs()
	est := s.Estimate()
	var out []results.Run
	done := 0
	for rep := 1; rep <= s.Repeat; rep++ {
		for _, c := range s.Cases {
			if opt.Progress != nil {
				opt.Progress(Progress{Done: done, Total: total, Case: c.Label, Repeat: rep, Elapsed: time.Since(start), ETA: eta(done, total, time.Since(start), est)})
			}
			run, err := r.one(ctx, c, rep)
			if err != nil {
				return out, err
			}
			if err := w.Run(run); err != nil {
				return out, err
			}
			out = append(out, run)
			done++
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
		}
	}
	if opt.Progress != nil {
		opt.Progress(Progress{Done: done, Total: total, Elapsed: time.Since(start)})
	}
	return out, nil
}

// eta blends the scenario's estimate with the measured pace: early on
// the estimate dominates, later the measurement.
func eta(done, total int, elapsed, estimate time.Duration) time.Duration {
	if done >= total {
		return 0
	}
	left := float64(total-done) / float64(total)
	byEstimate := time.Duration(float64(estimate) * left)
	if done == 0 {
		return byEstimate
	}
	byPace := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
	w := float64(done) / float64(total)
	return time.Duration(w*float64(byPace) + (1-w)*float64(byEstimate))
}

type runner struct {
	s    *Scenario
	opt  Options
	site *site
}

// one makes one run of case c on a fresh path.
func (r *runner) one(ctx context.Context, c Case, rep int) (results.Run, error) {
	s := r.s
	run := results.Run{Scenario: s.Name, Case: c.ID, Series: c.Series, X: c.X, Label: c.Label, Repeat: rep,
		Started: time.Now().UTC(), Valid: true, Notes: slices.Clone(c.Notes), Metrics: map[string]float64{}}
	up, down := Symmetric(s.RTT, s.RateBps, s.Loss, s.Queue, time.Now().UnixNano())
	spec := PathSpec{Topo: topo.Spec{Prefix: r.opt.Prefix, CC: s.CC, ClientSysctls: c.Client, ServerSysctls: c.Server},
		Up: up, Down: down, RTT: s.RTT}
	p, err := Up(ctx, spec, r.opt.Log)
	if err != nil {
		if errors.Is(err, topo.ErrSysctlRefused) {
			return run, fmt.Errorf("%w: case %s: %v", ErrInput, c.ID, err)
		}
		return run, fmt.Errorf("lab: case %s: %w", c.ID, err)
	}
	defer p.Close()
	run.CC = p.CC
	st, err := readSettings(p)
	if err != nil {
		return run, fmt.Errorf("lab: case %s: read back settings: %w", c.ID, err)
	}
	cl, sv := p.Topo.Client(), p.Topo.Server()
	if c.InitCwnd > 0 || c.InitRwnd > 0 || c.Kind == KindObject {
		if st["server"]["route.initcwnd"], st["server"]["route.initrwnd"], err = routeWindows(sv.Netns, cl.Addr, c.InitCwnd, 0); err != nil {
			return run, fmt.Errorf("%w: case %s: %v", ErrInput, c.ID, err)
		}
		if st["client"]["route.initcwnd"], st["client"]["route.initrwnd"], err = routeWindows(cl.Netns, sv.Addr, 0, c.InitRwnd); err != nil {
			return run, fmt.Errorf("%w: case %s: %v", ErrInput, c.ID, err)
		}
	}
	var m measurement
	switch c.Kind {
	case KindDownload:
		m, err = r.download(ctx, p, c)
	case KindObject:
		m, err = r.object(ctx, p, c)
	case KindUpload:
		m, err = r.upload(ctx, p, c, rep)
	case KindIperf:
		m, err = r.iperf(ctx, p, c, st)
	default:
		err = fmt.Errorf("lab: case %s: unknown kind %q", c.ID, c.Kind)
	}
	if err != nil {
		return run, err
	}
	stats := p.Emu.Stop()
	run.Link, _ = json.Marshal(stats)
	run.Metrics, run.Samples, run.Capture = m.metrics, m.samples, m.capture
	run.Notes = append(run.Notes, m.notes...)
	if m.invalid != "" {
		run.Valid, run.Invalid = false, m.invalid
	} else if stats.Overloaded {
		run.Valid, run.Invalid = false, "the emulator overloaded (dropped or delayed frames it should have carried): the result measures this machine, not the path"
	}
	if c.RcvBuf > 0 {
		// The application's request; the kernel doubles it (see the model).
		st["server"]["nginx.listen.rcvbuf"] = strconv.FormatInt(c.RcvBuf, 10)
	}
	run.Settings = st
	model, notes, err := Model(s, c, Settings(st), m.metrics)
	if err != nil {
		return run, fmt.Errorf("lab: case %s: model: %w", c.ID, err)
	}
	run.Model = model
	run.Notes = append(run.Notes, notes...)
	return run, nil
}

// measurement is what a run's peers measured.
type measurement struct {
	metrics map[string]float64
	samples []results.Sample
	notes   []string
	capture string
	invalid string
}

// readSettings reads settingKeys in both namespaces.
func readSettings(p *Path) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for name, e := range map[string]topo.End{"client": p.Topo.Client(), "server": p.Topo.Server()} {
		vals := map[string]string{}
		err := netns.Do(e.Netns, func() error {
			for _, k := range settingKeys {
				v, err := sysctl.Read(sysctl.DefaultRoot, k)
				if err != nil {
					if errors.Is(err, sysctl.ErrUnknownKey) {
						continue
					}
					return err
				}
				vals[k] = sysctl.Normalize(v)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[name] = vals
	}
	return out, nil
}

// routeWindows sets and reads back the route's initcwnd/initrwnd as text
// ("0" is the kernel default).
func routeWindows(ns string, peer netip.Addr, cwnd, rwnd int) (string, string, error) {
	c, w, err := setRouteWindows(ns, peer, cwnd, rwnd)
	if err != nil {
		return "", "", err
	}
	if (cwnd > 0 && c != cwnd) || (rwnd > 0 && w != rwnd) {
		return "", "", fmt.Errorf("route initcwnd/initrwnd read back as %d/%d, set %d/%d", c, w, cwnd, rwnd)
	}
	return strconv.Itoa(c), strconv.Itoa(w), nil
}

// curlResult is the part of curl's -w '%{json}' the lab uses.
type curlResult struct {
	TimeConnect   float64 `json:"time_connect"`
	TimeStart     float64 `json:"time_starttransfer"`
	TimeTotal     float64 `json:"time_total"`
	SizeDownload  float64 `json:"size_download"`
	SizeUpload    float64 `json:"size_upload"`
	SizeHeader    float64 `json:"size_header"`
	HTTPCode      int     `json:"http_code"`
	ExitCode      int     `json:"exitcode"`
	ErrorMsg      string  `json:"errormsg"`
	SpeedDownload float64 `json:"speed_download"`
}

// curl runs curl in the client namespace and parses its write-out. A
// timeout (exit 28) is expected when allowTimeout.
func curl(ctx context.Context, cl topo.End, allowTimeout bool, args ...string) (curlResult, error) {
	bin, err := lookPath("curl")
	if err != nil {
		return curlResult{}, err
	}
	args = append([]string{"-s", "-S", "-o", "/dev/null", "-w", "%{json}"}, args...)
	cmd := cl.Command(ctx, bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res curlResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		if err != nil {
			return res, fmt.Errorf("curl: %v: %s", err, lastLine(stderr.String()))
		}
		return res, fmt.Errorf("curl: unreadable write-out %q", lastLine(string(out)))
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && !(allowTimeout && ee.ExitCode() == 28) {
		return res, fmt.Errorf("curl exited with status %d: %s", ee.ExitCode(), lastLine(stderr.String()+" "+res.ErrorMsg))
	} else if err != nil && ee == nil {
		return res, fmt.Errorf("curl: %w", err)
	}
	return res, nil
}

func (r *runner) url(p *Path, path string) string {
	return fmt.Sprintf("http://%s:%d/%s", p.Topo.Server().Addr, httpPort, path)
}

// download: curl fetches the big file for c.Duration; the throughput is
// the sender's steady state (second half of the run, from tcp_info).
func (r *runner) download(ctx context.Context, p *Path, c Case) (measurement, error) {
	ng, err := r.site.startNginx(ctx, p.Topo.Server(), c.RcvBuf)
	if err != nil {
		return measurement{}, err
	}
	defer stop(ng)
	smp, err := newSampler(p.Topo.Client().Netns, p.Topo.Server().Netns, httpPort, r.opt.Interval)
	if err != nil {
		return measurement{}, err
	}
	smp.start(time.Now())
	res, cerr := curl(ctx, p.Topo.Client(), true, "--max-time", strconv.FormatFloat(c.Duration.Seconds(), 'f', 3, 64), r.url(p, "big"))
	samples := smp.stop()
	m := measurement{metrics: map[string]float64{}, samples: samples}
	if cerr != nil {
		m.invalid = cerr.Error()
		return m, nil
	}
	m.metrics["bytes"] = res.SizeDownload
	m.metrics["seconds"] = res.TimeTotal
	if res.TimeTotal > 0 {
		m.metrics["avg_bps"] = res.SizeDownload * 8 / res.TimeTotal
	}
	bulkMetrics(m.metrics, samples, "server")
	if _, ok := m.metrics["throughput_bps"]; !ok {
		m.invalid = "no tcp_info samples of the transfer"
	}
	return m, nil
}

// bulkMetrics adds the sender's steady-state throughput and the
// tcp_info time shares to metrics.
func bulkMetrics(metrics map[string]float64, samples []results.Sample, sender string) {
	if bps, ok := SteadyRate(samples, sender); ok {
		metrics["throughput_bps"] = bps
	}
	var busy, rwnd, sndbuf, retrans float64
	last := map[string]results.Sample{}
	for _, x := range samples {
		if x.End == sender {
			last[x.Sock] = x
		}
	}
	for _, x := range last {
		busy += x.BusyS
		rwnd += x.RwndLimitedS
		sndbuf += x.SndbufLimS
		retrans += float64(x.Retrans)
	}
	if busy > 0 {
		metrics["rwnd_limited_share"] = rwnd / busy
		metrics["sndbuf_limited_share"] = sndbuf / busy
	}
	metrics["retrans_segs"] = retrans
}

// SteadyRate is the sum over the sender's sockets of each socket's
// delivery rate over the second half of its life in the samples: slow
// start is over by then on the paths the lab runs, so this is the rate a
// long transfer keeps. Delivered bytes (SACKed included) are used where
// the kernel reports them: bytes_acked stalls behind a hole during loss
// recovery and then jumps, which inflates or deflates a half-run window.
func SteadyRate(samples []results.Sample, sender string) (float64, bool) {
	bySock := map[string][]results.Sample{}
	var order []string
	for _, x := range samples {
		if x.End != sender {
			continue
		}
		if _, ok := bySock[x.Sock]; !ok {
			order = append(order, x.Sock)
		}
		bySock[x.Sock] = append(bySock[x.Sock], x)
	}
	total, ok := 0.0, false
	for _, k := range order {
		ss := bySock[k]
		count := func(x results.Sample) int64 {
			if ss[len(ss)-1].Delivered > 0 {
				return x.Delivered
			}
			return x.BytesAcked
		}
		// The active part: up to the last sample whose counter moved.
		end := len(ss) - 1
		for end > 0 && count(ss[end]) == count(ss[end-1]) {
			end--
		}
		if end < 2 {
			continue
		}
		mid := ss[0].T + (ss[end].T-ss[0].T)/2
		i := 0
		for i < end && ss[i].T < mid {
			i++
		}
		dt := ss[end].T - ss[i].T
		if dt <= 0 {
			continue
		}
		total += float64(count(ss[end])-count(ss[i])) * 8 / dt
		ok = true
	}
	return total, ok
}

// object: curl fetches one object on a new connection; the time from
// SYN to last byte in seconds and in round trips.
func (r *runner) object(ctx context.Context, p *Path, c Case) (measurement, error) {
	ng, err := r.site.startNginx(ctx, p.Topo.Server(), c.RcvBuf)
	if err != nil {
		return measurement{}, err
	}
	defer stop(ng)
	smp, err := newSampler(p.Topo.Client().Netns, p.Topo.Server().Netns, httpPort, 10*time.Millisecond)
	if err != nil {
		return measurement{}, err
	}
	smp.start(time.Now())
	res, cerr := curl(ctx, p.Topo.Client(), false, "--max-time", "60", r.url(p, fmt.Sprintf("obj-%d", c.Bytes)))
	m := measurement{metrics: map[string]float64{}, samples: smp.stop()}
	if cerr != nil {
		m.invalid = cerr.Error()
		return m, nil
	}
	if int64(res.SizeDownload) != c.Bytes {
		m.invalid = fmt.Sprintf("downloaded %d bytes of %d", int64(res.SizeDownload), c.Bytes)
	}
	m.metrics["bytes"] = res.SizeDownload
	m.metrics["header_bytes"] = res.SizeHeader
	m.metrics["ttlb_s"] = res.TimeTotal
	m.metrics["connect_s"] = res.TimeConnect
	m.metrics["ttfb_s"] = res.TimeStart
	m.metrics["rounds"] = res.TimeTotal / r.s.RTT.Seconds()
	return m, nil
}

// upload: curl POSTs c.Bytes to nginx, which reads the whole body before
// answering; tcpdump keeps a capture of the run in the server namespace.
func (r *runner) upload(ctx context.Context, p *Path, c Case, rep int) (measurement, error) {
	ng, err := r.site.startNginx(ctx, p.Topo.Server(), c.RcvBuf)
	if err != nil {
		return measurement{}, err
	}
	defer stop(ng)
	m := measurement{metrics: map[string]float64{}}
	var td *exec.Cmd
	if c.Capture && r.opt.OutDir != "" {
		rel := filepath.Join("captures", fmt.Sprintf("%s-%d.pcap", c.ID, rep))
		if td, err = startTcpdump(ctx, p.Topo.Server(), filepath.Join(r.opt.OutDir, rel)); err != nil {
			return m, err
		}
		m.capture = rel
	}
	smp, err := newSampler(p.Topo.Client().Netns, p.Topo.Server().Netns, httpPort, 10*time.Millisecond)
	if err != nil {
		stop(td)
		return m, err
	}
	smp.start(time.Now())
	res, cerr := curl(ctx, p.Topo.Client(), false, "--max-time", "300", "-H", "Expect:", "--data-binary", "@"+r.site.uploadBody(), r.url(p, "upload"))
	m.samples = smp.stop()
	if td != nil {
		// Let tcpdump write the last packets (FIN, ACK) before it stops.
		time.Sleep(100 * time.Millisecond)
		stop(td)
	}
	if cerr != nil {
		m.invalid = cerr.Error()
		return m, nil
	}
	if int64(res.SizeUpload) != c.Bytes || res.HTTPCode != 200 {
		m.invalid = fmt.Sprintf("uploaded %d bytes of %d, HTTP status %d", int64(res.SizeUpload), c.Bytes, res.HTTPCode)
	}
	m.metrics["bytes"] = res.SizeUpload
	m.metrics["upload_s"] = res.TimeTotal
	if res.TimeTotal > 0 {
		m.metrics["avg_bps"] = res.SizeUpload * 8 / res.TimeTotal
	}
	if w, ok := advertisedWindow(m.samples, "client"); ok {
		m.metrics["window_bytes"] = w
		m.notes = append(m.notes, fmt.Sprintf("the server advertised a median window of %s during the upload", units.FormatBytes(w)))
	}
	return m, nil
}

// advertisedWindow is the median of the peer's advertised window (snd_wnd)
// seen by end while it had data in flight.
func advertisedWindow(samples []results.Sample, end string) (float64, bool) {
	var w []float64
	for _, x := range samples {
		if x.End == end && x.State == "ESTABLISHED" && x.InFlight > 0 && x.SndWnd > 0 {
			w = append(w, float64(x.SndWnd))
		}
	}
	if len(w) == 0 {
		return 0, false
	}
	return results.Median(w), true
}

// startTcpdump captures the server's TCP port to file (headers only,
// 128 bytes per packet) and returns once tcpdump is listening.
func startTcpdump(ctx context.Context, sv topo.End, file string) (*exec.Cmd, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	bin, err := lookPath("tcpdump")
	if err != nil {
		return nil, err
	}
	cmd := sv.Command(ctx, bin, "-i", sv.Dev, "-s", "128", "-U", "--immediate-mode", "-Z", "root", "-n", "-w", file, "tcp", "port", strconv.Itoa(httpPort))
	pr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tcpdump: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		var last string
		for sc.Scan() {
			last = sc.Text()
			if strings.Contains(last, "listening on") {
				ready <- nil
				_, _ = io.Copy(io.Discard, pr)
				return
			}
		}
		ready <- fmt.Errorf("tcpdump exited: %s", last)
	}()
	select {
	case err := <-ready:
		if err != nil {
			stop(cmd)
			return nil, err
		}
	case <-time.After(10 * time.Second):
		stop(cmd)
		return nil, fmt.Errorf("tcpdump did not start within 10s")
	}
	return cmd, nil
}

// iperfResult is the part of iperf3 --json the lab uses.
type iperfResult struct {
	Start struct {
		SockBufsize  float64 `json:"sock_bufsize"`
		SndbufActual float64 `json:"sndbuf_actual"`
		RcvbufActual float64 `json:"rcvbuf_actual"`
	} `json:"start"`
	End struct {
		SumReceived struct {
			BitsPerSecond float64 `json:"bits_per_second"`
			Bytes         float64 `json:"bytes"`
		} `json:"sum_received"`
		SumSent struct {
			Retransmits float64 `json:"retransmits"`
		} `json:"sum_sent"`
	} `json:"end"`
	Error string `json:"error"`
}

// iperf: iperf3 -R (the server sends) with c.Streams streams and, if
// set, -w c.Window on both ends.
func (r *runner) iperf(ctx context.Context, p *Path, c Case, st map[string]map[string]string) (measurement, error) {
	bin, err := lookPath("iperf3")
	if err != nil {
		return measurement{}, err
	}
	sv, cl := p.Topo.Server(), p.Topo.Client()
	srv := sv.Command(ctx, bin, "-s", "-1", "-B", sv.Addr.String(), "-p", strconv.Itoa(iperfPort))
	if err := srv.Start(); err != nil {
		return measurement{}, fmt.Errorf("start iperf3 server: %w", err)
	}
	defer stop(srv)
	if err := WaitListening(ctx, srv, sv.Netns, iperfPort, "iperf3 -s", 10*time.Second); err != nil {
		return measurement{}, err
	}
	smp, err := newSampler(cl.Netns, sv.Netns, iperfPort, r.opt.Interval)
	if err != nil {
		return measurement{}, err
	}
	args := []string{"-c", sv.Addr.String(), "-p", strconv.Itoa(iperfPort), "-R", "--json",
		"-t", strconv.Itoa(int(c.Duration.Round(time.Second).Seconds())), "-P", strconv.Itoa(max(c.Streams, 1))}
	if c.Window > 0 {
		args = append(args, "-w", strconv.FormatInt(c.Window, 10))
	}
	smp.start(time.Now())
	cmd := cl.Command(ctx, bin, args...)
	out, cerr := cmd.Output()
	m := measurement{metrics: map[string]float64{}, samples: smp.stop()}
	var res iperfResult
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" || cerr != nil {
		m.invalid = fmt.Sprintf("iperf3 failed: %s", strings.TrimSpace(res.Error+" "+errText(cerr)))
		return m, nil
	}
	m.metrics["streams"] = float64(c.Streams)
	m.metrics["iperf_bps"] = res.End.SumReceived.BitsPerSecond
	m.metrics["bytes"] = res.End.SumReceived.Bytes
	bulkMetrics(m.metrics, m.samples, "server")
	if _, ok := m.metrics["throughput_bps"]; !ok {
		m.invalid = "no tcp_info samples of the transfer"
	}
	if c.Window > 0 {
		st["client"]["so.requested"] = strconv.FormatInt(c.Window, 10)
		if res.Start.RcvbufActual > 0 {
			st["client"]["so.rcvbuf"] = strconv.FormatInt(int64(res.Start.RcvbufActual), 10)
			st["client"]["so.sndbuf"] = strconv.FormatInt(int64(res.Start.SndbufActual), 10)
		}
	}
	return m, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
