//go:build linux

package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
)

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
		CPU struct {
			Host   float64 `json:"host_total"`
			Remote float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	Error string `json:"error"`
}

// iperf: iperf3 -R (the server sends) with the case's streams and, if
// set, -w Window on both ends.
type iperf struct{}

func (iperf) Measure(ctx context.Context, e Env) (Measurement, error) {
	bin, err := lookPath("iperf3")
	if err != nil {
		return Measurement{}, err
	}
	c := e.Case
	sv, cl := e.Path.Topo.Server(), e.Path.Topo.Client()
	srv := sv.Command(ctx, bin, "-s", "-1", "-B", sv.Addr.String(), "-p", strconv.Itoa(iperfPort))
	if err := srv.Start(); err != nil {
		return Measurement{}, fmt.Errorf("start iperf3 server: %w", err)
	}
	defer stop(srv)
	if err := emupath.WaitListening(ctx, srv, sv.Netns, iperfPort, "iperf3 -s", 10*time.Second); err != nil {
		return Measurement{}, err
	}
	args := []string{"-c", sv.Addr.String(), "-p", strconv.Itoa(iperfPort), "-R", "--json",
		"-t", strconv.Itoa(int(c.Duration.Round(time.Second).Seconds())), "-P", strconv.Itoa(max(c.Streams, 1))}
	if c.Window > 0 {
		args = append(args, "-w", strconv.FormatInt(c.Window, 10))
	}
	if c.Omit > 0 {
		args = append(args, "-O", strconv.Itoa(int(c.Omit.Round(time.Second).Seconds())))
	}
	smp, err := e.sample(iperfPort, e.Interval)
	if err != nil {
		return Measurement{}, err
	}
	// Pings alongside: from a second after slow start (and five round
	// trips for the queue to settle), through the measured part.
	pings := make(chan pingRun, 1)
	var pingErr error
	if c.Ping > 0 {
		go func() {
			r, err := runPing(ctx, e, c.Ping, c.Omit+time.Second+5*e.RTT)
			if err != nil {
				r.err = err
			}
			pings <- r
		}()
	}
	out, cerr := cl.Command(ctx, bin, args...).Output()
	m := newMeasurement()
	m.Samples = smp.stop()
	if c.Ping > 0 {
		r := <-pings
		if pingErr = r.err; pingErr == nil {
			r.errMetrics(m.Metrics, "ping_", e.RTT)
		}
	}
	var res iperfResult
	if err := json.Unmarshal(out, &res); err != nil || res.Error != "" || cerr != nil {
		m.Invalid = fmt.Sprintf("iperf3 failed: %s", strings.TrimSpace(res.Error+" "+errText(cerr)))
		return m, nil
	}
	m.Metrics["streams"] = float64(c.Streams)
	m.Metrics["iperf_bps"] = res.End.SumReceived.BitsPerSecond
	m.Metrics["bytes"] = res.End.SumReceived.Bytes
	// iperf3's own CPU (% of one core): with -R the client receives and
	// the server sends.
	m.Metrics["iperf_cpu_receiver_pct"] = res.End.CPU.Host
	m.Metrics["iperf_cpu_sender_pct"] = res.End.CPU.Remote
	bulkMetrics(m.Metrics, m.Samples, "server")
	if _, ok := m.Metrics["throughput_bps"]; !ok {
		m.Invalid = "no tcp_info samples of the transfer"
	}
	if pingErr != nil {
		m.Notes = append(m.Notes, "ping alongside: "+pingErr.Error())
	}
	if c.Window > 0 {
		m.SORequested = c.Window
		if res.Start.RcvbufActual > 0 {
			m.SORcvbuf, m.SOSndbuf = int64(res.Start.RcvbufActual), int64(res.Start.SndbufActual)
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

// waitLine reads r until a line contains want, then drains the rest in
// the background; it fails when r ends first or after timeout.
func waitLine(r io.Reader, want string, timeout time.Duration) error {
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(r)
		var last string
		for sc.Scan() {
			last = sc.Text()
			if strings.Contains(last, want) {
				ready <- nil
				_, _ = io.Copy(io.Discard, r)
				return
			}
		}
		ready <- fmt.Errorf("exited: %s", last)
	}()
	select {
	case err := <-ready:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("did not start within %v", timeout)
	}
}
