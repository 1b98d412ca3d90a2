//go:build linux

package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/emu"
	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/topo"
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
	// RetryInvalid is how many more times a run that came out invalid
	// is made again (each attempt is written, the invalid ones too).
	RetryInvalid int
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
func Run(ctx context.Context, s *scenario.Scenario, w *results.Writer, opt Options) ([]results.Run, error) {
	if err := CheckPeers(s); err != nil {
		return nil, err
	}
	if opt.Interval == 0 {
		opt.Interval = 100 * time.Millisecond
	}
	if opt.Log == nil {
		opt.Log = io.Discard
	}
	restoreCC, err := topo.AllowCC(s.CC, opt.Log)
	if err != nil {
		return nil, err
	}
	defer restoreCC()
	site, err := newSite(siteFiles(s))
	if err != nil {
		return nil, err
	}
	defer site.remove()
	if err := w.Header(s.Header(time.Now())); err != nil {
		return nil, err
	}
	r := &runner{s: s, opt: opt, site: site}
	return r.all(ctx, w)
}

// siteFiles are the object sizes and the upload body the cases need.
func siteFiles(s *scenario.Scenario) (objects []int64, upload int64) {
	for _, c := range s.Cases {
		if c.Kind == scenario.KindObject && !slices.Contains(objects, c.Bytes) {
			objects = append(objects, c.Bytes)
		}
		if c.Kind == scenario.KindUpload {
			upload = max(upload, c.Bytes)
		}
	}
	return objects, upload
}

type runner struct {
	s    *scenario.Scenario
	opt  Options
	site *site
}

// all makes every run, repeat by repeat.
func (r *runner) all(ctx context.Context, w *results.Writer) ([]results.Run, error) {
	start := time.Now()
	total, est := r.s.Runs(), r.s.Estimate()
	var out []results.Run
	keep := func(run results.Run) error {
		out = append(out, run)
		return w.Run(run)
	}
	done := 0
	for rep := 1; rep <= r.s.Repeat; rep++ {
		for _, c := range r.s.Cases {
			if r.opt.Progress != nil {
				r.opt.Progress(Progress{Done: done, Total: total, Case: c.Label, Repeat: rep, Elapsed: time.Since(start), ETA: eta(done, total, time.Since(start), est)})
			}
			err := attempts(ctx, r.opt.RetryInvalid, func(attempt int) (results.Run, error) {
				if attempt > 1 {
					fmt.Fprintf(r.opt.Log, "longhaul: lab: %s (repeat %d) was invalid (%s): attempt %d of %d\n",
						c.ID, rep, out[len(out)-1].Invalid, attempt, r.opt.RetryInvalid+1)
				}
				return r.one(ctx, c, rep, attempt)
			}, keep)
			if err != nil {
				return out, err
			}
			done++
		}
	}
	if r.opt.Progress != nil {
		r.opt.Progress(Progress{Done: done, Total: total, Elapsed: time.Since(start)})
	}
	return out, nil
}

// attempts makes a run (try, with its attempt number from 1) and
// keeps it, then makes it again while it came out invalid, up to
// retries more times; every attempt is kept. It stops at the first
// error, and when ctx ends.
func attempts(ctx context.Context, retries int, try func(attempt int) (results.Run, error), keep func(results.Run) error) error {
	for attempt := 1; ; attempt++ {
		run, err := try(attempt)
		if err != nil {
			return err
		}
		if err := keep(run); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if run.Valid || attempt > retries {
			return nil
		}
	}
}

// one makes one run (its attempt-th) of case c on a fresh path.
func (r *runner) one(ctx context.Context, c scenario.Case, rep, attempt int) (results.Run, error) {
	s := r.s
	run := results.Run{Scenario: s.Name, Case: c.ID, Series: c.Series, X: c.X, Label: c.Label, Repeat: rep,
		Started: time.Now().UTC(), Valid: true, Notes: slices.Clone(c.Notes), Metrics: map[string]float64{}, Truth: c.Truth}
	if attempt > 1 {
		run.Attempt = attempt
	}
	wl, err := workloadFor(c.Kind)
	if err != nil {
		return run, fmt.Errorf("case %s: %w", c.ID, err)
	}
	cp := s.PathOf(c)
	if c.Path != nil {
		run.Path = &results.RunPath{RTTSeconds: cp.RTT.Seconds(), RateBps: cp.RateBps, QueueBytes: cp.QueueBytes, Veth: cp.Veth,
			Knobs: cp.Knobs, ServerCPU: cp.ServerCPU, IPv6: cp.IPv6, Competing: cp.Competing}
	}
	spec := emupath.Spec{Topo: topo.Spec{Prefix: r.opt.Prefix, CC: s.CC, ClientSysctls: c.Client, ServerSysctls: c.Server, Veth: cp.Veth,
		ServerCPU: cp.ServerCPU, IPv6: cp.IPv6}, RTT: cp.RTT}
	if !cp.Veth {
		link := emupath.Symmetric(cp.RTT, cp.RateBps, s.Loss, cp.QueueBytes, time.Now().UnixNano())
		if err := link.Apply(cp.Knobs); err != nil {
			return run, inputf("case %s: %v", c.ID, err)
		}
		if spec.Up, spec.Down, err = link.Configs(); err != nil {
			return run, inputf("case %s: %v", c.ID, err)
		}
	}
	p, err := emupath.Up(ctx, spec, r.opt.Log)
	if err != nil {
		if errors.Is(err, topo.ErrSysctlRefused) {
			return run, inputf("case %s: %v", c.ID, err)
		}
		return run, fmt.Errorf("lab: case %s: %w", c.ID, err)
	}
	defer p.Close()
	run.CC = p.CC
	st, err := readBack(p, c)
	if err != nil {
		return run, fmt.Errorf("lab: case %s: read back settings: %w", c.ID, err)
	}
	cpu0, cpuErr := readProcStat()
	m, err := wl.Measure(ctx, Env{Path: p, Case: c, Repeat: rep, Attempt: attempt, RTT: cp.RTT, Site: r.site, Interval: r.opt.Interval, OutDir: r.opt.OutDir})
	if err != nil {
		return run, err
	}
	if cpu1, err := readProcStat(); err == nil && cpuErr == nil {
		// The whole machine's load during the run, in % of one core:
		// how close the run came to this host's limit.
		m.Metrics["host_cpu_pct"] = 100 * busyCores(cpu0, cpu1, runtime.NumCPU())
	}
	run.Metrics, run.Samples, run.Capture, run.Named = m.Metrics, m.Samples, m.Capture, m.Named
	run.Notes = append(run.Notes, m.Notes...)
	overloaded := false
	if p.Emu != nil {
		stats := p.Emu.Stop()
		run.Link, _ = json.Marshal(stats)
		linkMetrics(run.Metrics, stats)
		overloaded = stats.Overloaded
	}
	if g, ok := run.Metrics["iperf_bps"]; ok && cp.RateBps > 0 {
		run.Metrics["goodput_pct"] = 100 * g / pathmodel.Goodput(cp.RateBps)
	}
	if m.Invalid != "" {
		run.Valid, run.Invalid = false, m.Invalid
	} else if overloaded {
		run.Valid, run.Invalid = false, "the emulator overloaded (dropped or delayed frames it should have carried): the result measures this machine, not the path"
	}
	st.Client.SORequested, st.Client.SORcvbuf, st.Client.SOSndbuf = m.SORequested, m.SORcvbuf, m.SOSndbuf
	run.Settings = st.Record()
	model, notes, err := scenario.Model(s, c, st, m.Metrics)
	if err != nil {
		return run, fmt.Errorf("lab: model: %w", err)
	}
	run.Model = model
	run.Notes = append(run.Notes, notes...)
	return run, nil
}

func readProcStat() (cpuTimes, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	return parseProcStat(f)
}

// linkMetrics adds the emulator's own numbers to a run's metrics: its
// CPU (the lab process's, of which the emulator is nearly all: the
// tcp_info sampler reads a few sockets per interval), the data (down)
// direction's lateness, wait and queue, and what the validity rule
// counts over both directions.
func linkMetrics(m map[string]float64, st emu.Stats) {
	if st.Elapsed > 0 {
		m["emu_cpu_pct"] = 100 * st.CPUSeconds / st.Elapsed
	}
	d, u := st.Down, st.Up
	m["lateness_p50_s"] = d.LatenessP50.Seconds()
	m["lateness_p99_s"] = d.LatenessP99.Seconds()
	m["lateness_max_s"] = max(d.LatenessMax, u.LatenessMax).Seconds()
	m["wait_p99_s"] = d.WaitP99.Seconds()
	m["queue_peak_bytes"] = float64(d.QueuePeakBytes)
	m["queue_drops"] = float64(d.DropsQueue)
	m["overload_drops"] = float64(d.DropsOverload + d.OverloadFrames + u.DropsOverload + u.OverloadFrames)
	m["late_frames"] = float64(d.OverMax + u.OverMax)
}

// readBack reads settingKeys in both namespaces and, where the case sets
// route metrics or fetches objects, sets and reads back initcwnd on the
// server's route to the client and initrwnd on the client's route to the
// server.
func readBack(p *emupath.Path, c scenario.Case) (scenario.State, error) {
	var st scenario.State
	cl, sv := p.Topo.Client(), p.Topo.Server()
	var err error
	if st.Client.Sysctls, err = readSysctls(cl.Netns); err != nil {
		return st, err
	}
	if st.Server.Sysctls, err = readSysctls(sv.Netns); err != nil {
		return st, err
	}
	st.Server.RcvBuf = c.RcvBuf // the application's request; the kernel doubles it (see the model)
	if c.InitCwnd > 0 || c.InitRwnd > 0 || c.Kind == scenario.KindObject {
		st.Server.Route, st.Client.Route = true, true
		if st.Server.InitCwnd, st.Server.InitRwnd, err = routeWindows(sv.Netns, cl.Addr, c.InitCwnd, 0); err != nil {
			return st, inputf("%w", err)
		}
		if st.Client.InitCwnd, st.Client.InitRwnd, err = routeWindows(cl.Netns, sv.Addr, 0, c.InitRwnd); err != nil {
			return st, inputf("%w", err)
		}
	}
	return st, nil
}

// readSysctls reads settingKeys in namespace ns; keys the kernel lacks
// are left out.
func readSysctls(ns string) (map[string]string, error) {
	vals := map[string]string{}
	err := netns.Do(ns, func() error {
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
	return vals, err
}
