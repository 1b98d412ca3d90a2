//go:build linux

package lab

import (
	"context"
	"fmt"
	"time"

	"github.com/longhaul/longhaul/internal/emupath"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/scenario"
)

// Env is what a workload runs with: the path, the case and what the
// runner shares between runs.
type Env struct {
	Path     *emupath.Path
	Case     scenario.Case
	Repeat   int
	Attempt  int // 1, or more when the run is made again (Options.RetryInvalid)
	RTT      time.Duration
	Interval time.Duration // tcp_info sampling of timed runs
	OutDir   string        // where captures go; "" keeps none
	Site     *site
}

// runName names the run's files: case-repeat, "-retryN" for the Nth
// attempt after the first.
func (e Env) runName() string {
	if e.Attempt > 1 {
		return fmt.Sprintf("%s-%d-retry%d", e.Case.ID, e.Repeat, e.Attempt-1)
	}
	return fmt.Sprintf("%s-%d", e.Case.ID, e.Repeat)
}

// Measurement is what a run's peers measured.
type Measurement struct {
	Metrics map[string]float64
	Samples []results.Sample
	Notes   []string
	Capture string // the capture's path under OutDir
	// Invalid, when set, says why the run does not count.
	Invalid string
	// Named is each tool's named cause (the causes matrix).
	Named map[string]string
	// SORequested, SORcvbuf and SOSndbuf are the client's socket buffer
	// request and what the kernel gave (iperf3 -w); 0 none.
	SORequested, SORcvbuf, SOSndbuf int64
}

func newMeasurement() Measurement { return Measurement{Metrics: map[string]float64{}} }

// Workload is what a run does on the path: start its peers, move data
// and measure. A failure of the transfer itself is a Measurement with
// Invalid set; an error stops the whole lab (a peer that cannot start).
type Workload interface {
	Measure(ctx context.Context, e Env) (Measurement, error)
}

// workloads are the kinds of run the scenarios use.
var workloads = map[string]Workload{
	scenario.KindDownload: download{},
	scenario.KindObject:   object{},
	scenario.KindUpload:   upload{},
	scenario.KindIperf:    iperf{},
	scenario.KindPing:     ping{},
	scenario.KindCauses:   causes{},
}

func workloadFor(kind string) (Workload, error) {
	w, ok := workloads[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind of run %q", kind)
	}
	return w, nil
}

// sample starts sampling tcp_info of the sockets on port in both
// namespaces.
func (e Env) sample(port uint16, every time.Duration) (*sampler, error) {
	smp, err := newSampler(e.Path.Topo.Client().Netns, e.Path.Topo.Server().Netns, port, every)
	if err != nil {
		return nil, err
	}
	smp.start(time.Now())
	return smp, nil
}

func (e Env) url(path string) string {
	return fmt.Sprintf("http://%s:%d/%s", e.Path.Topo.Server().Addr, httpPort, path)
}
