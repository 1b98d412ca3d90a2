//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/topo"
	"github.com/longhaul/longhaul/internal/units"
)

// download: curl fetches the big file for the case's duration; the
// throughput is the sender's steady state (second half of the run, from
// tcp_info).
type download struct{}

func (download) Measure(ctx context.Context, e Env) (Measurement, error) {
	res, m, ok, err := e.fetch(ctx, e.Interval, true, "--max-time", strconv.FormatFloat(e.Case.Duration.Seconds(), 'f', 3, 64), e.url("big"))
	if !ok {
		return m, err
	}
	m.Metrics["bytes"] = res.SizeDownload
	m.Metrics["seconds"] = res.TimeTotal
	if res.TimeTotal > 0 {
		m.Metrics["avg_bps"] = res.SizeDownload * 8 / res.TimeTotal
	}
	bulkMetrics(m.Metrics, m.Samples, "server")
	if _, ok := m.Metrics["throughput_bps"]; !ok {
		m.Invalid = "no tcp_info samples of the transfer"
	}
	return m, nil
}

// fetch runs curl against nginx in the server namespace while sampling
// tcp_info every `every`. ok is false when there is nothing to measure:
// err says why the lab must stop, or m.Invalid why this run does not
// count.
func (e Env) fetch(ctx context.Context, every time.Duration, allowTimeout bool, args ...string) (res curlResult, m Measurement, ok bool, err error) {
	ng, err := e.Site.startNginx(ctx, e.Path.Topo.Server(), e.Case.RcvBuf)
	if err != nil {
		return res, m, false, err
	}
	defer stop(ng)
	smp, err := e.sample(httpPort, every)
	if err != nil {
		return res, m, false, err
	}
	res, cerr := curl(ctx, e.Path.Topo.Client(), allowTimeout, args...)
	m = newMeasurement()
	m.Samples = smp.stop()
	if cerr != nil {
		m.Invalid = cerr.Error()
		return res, m, false, nil
	}
	return res, m, true, nil
}

// object: curl fetches one object on a new connection; the time from
// SYN to last byte in seconds and in round trips.
type object struct{}

func (object) Measure(ctx context.Context, e Env) (Measurement, error) {
	res, m, ok, err := e.fetch(ctx, 10*time.Millisecond, false, "--max-time", "60", e.url(fmt.Sprintf("obj-%d", e.Case.Bytes)))
	if !ok {
		return m, err
	}
	if int64(res.SizeDownload) != e.Case.Bytes {
		m.Invalid = fmt.Sprintf("downloaded %d bytes of %d", int64(res.SizeDownload), e.Case.Bytes)
	}
	m.Metrics["bytes"] = res.SizeDownload
	m.Metrics["header_bytes"] = res.SizeHeader
	m.Metrics["ttlb_s"] = res.TimeTotal
	m.Metrics["connect_s"] = res.TimeConnect
	m.Metrics["ttfb_s"] = res.TimeStart
	m.Metrics["rounds"] = res.TimeTotal / e.RTT.Seconds()
	return m, nil
}

// upload: curl POSTs the case's bytes to nginx, which reads the whole
// body before answering; tcpdump keeps a capture of the run in the server
// namespace.
type upload struct{}

func (upload) Measure(ctx context.Context, e Env) (Measurement, error) {
	ng, err := e.Site.startNginx(ctx, e.Path.Topo.Server(), e.Case.RcvBuf)
	if err != nil {
		return Measurement{}, err
	}
	defer stop(ng)
	m := newMeasurement()
	var td *exec.Cmd
	if e.Case.Capture && e.OutDir != "" {
		rel := filepath.Join("captures", e.runName()+".pcap")
		if td, err = startTcpdump(ctx, e.Path.Topo.Server(), filepath.Join(e.OutDir, rel)); err != nil {
			return m, err
		}
		m.Capture = rel
	}
	smp, err := e.sample(httpPort, 10*time.Millisecond)
	if err != nil {
		stop(td)
		return m, err
	}
	res, cerr := curl(ctx, e.Path.Topo.Client(), false, "--max-time", "300", "-H", "Expect:", "--data-binary", "@"+e.Site.uploadBody(), e.url("upload"))
	m.Samples = smp.stop()
	if td != nil {
		// Let tcpdump write the last packets (FIN, ACK) before it stops.
		time.Sleep(100 * time.Millisecond)
		stop(td)
	}
	if cerr != nil {
		m.Invalid = cerr.Error()
		return m, nil
	}
	uploadMetrics(&m, res, e.Case.Bytes)
	return m, nil
}

func uploadMetrics(m *Measurement, res curlResult, want int64) {
	if int64(res.SizeUpload) != want || res.HTTPCode != 200 {
		m.Invalid = fmt.Sprintf("uploaded %d bytes of %d, HTTP status %d", int64(res.SizeUpload), want, res.HTTPCode)
	}
	m.Metrics["bytes"] = res.SizeUpload
	m.Metrics["upload_s"] = res.TimeTotal
	if res.TimeTotal > 0 {
		m.Metrics["avg_bps"] = res.SizeUpload * 8 / res.TimeTotal
	}
	if w, ok := advertisedWindow(m.Samples, "client"); ok {
		m.Metrics["window_bytes"] = w
		m.Notes = append(m.Notes, fmt.Sprintf("the server advertised a median window of %s during the upload", units.FormatBytes(w)))
	}
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

// startTcpdump captures the server's TCP port to file (headers only,
// 128 bytes per packet) and returns once tcpdump is listening.
func startTcpdump(ctx context.Context, sv topo.End, file string) (*exec.Cmd, error) {
	return startCapture(file, func(bin string, args ...string) *exec.Cmd {
		return sv.Command(ctx, bin, append(args, "tcp", "port", strconv.Itoa(httpPort))...)
	}, sv.Dev)
}

// startCapture runs tcpdump through command (with its arguments, to which
// command may add a filter), writing file on device dev (headers only,
// 128 bytes per packet), and returns once tcpdump is listening.
func startCapture(file string, command func(bin string, args ...string) *exec.Cmd, dev string) (*exec.Cmd, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	bin, err := lookPath("tcpdump")
	if err != nil {
		return nil, err
	}
	cmd := command(bin, "-i", dev, "-s", "128", "-U", "--immediate-mode", "-Z", "root", "-n", "-w", file)
	pr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start tcpdump: %w", err)
	}
	if err := waitLine(pr, "listening on", 10*time.Second); err != nil {
		stop(cmd)
		return nil, fmt.Errorf("tcpdump: %w", err)
	}
	return cmd, nil
}
