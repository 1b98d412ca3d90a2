package scenario

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/results"
)

func caseByID(t *testing.T, s *Scenario, id string) Case {
	t.Helper()
	i := slices.IndexFunc(s.Cases, func(c Case) bool { return c.ID == id })
	if i < 0 {
		t.Fatalf("no case %s in %v", id, ids(s))
	}
	return s.Cases[i]
}

// TestExpandEmulator checks the benchmark's matrix: the raw veth
// ceiling, every RTT x rate with its own path, buffers and run length,
// the ladder above 1 Gbit/s at 200 ms, and the idle pings.
func TestExpandEmulator(t *testing.T) {
	s, err := Expand("emulator", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ceiling",
		"load-0ms-100M", "load-0ms-1G", "load-0ms-unlimited",
		"load-50ms-100M", "load-50ms-1G", "load-50ms-unlimited",
		"load-200ms-100M", "load-200ms-1G", "load-200ms-unlimited",
		"load-200ms-2.5G", "load-200ms-5G", "load-200ms-10G",
		"idle-0ms", "idle-50ms", "idle-200ms"}
	if got := ids(s); !slices.Equal(got, want) {
		t.Fatalf("cases %v\nwant %v", got, want)
	}
	if s.Repeat != 3 {
		t.Errorf("repeat %d, want 3", s.Repeat)
	}
	ceil := caseByID(t, s, "ceiling")
	if ceil.Path == nil || !ceil.Path.Veth || ceil.Kind != KindIperf || ceil.Duration != 10*time.Second {
		t.Errorf("ceiling %+v", ceil)
	}
	for _, tc := range []struct {
		id         string
		rtt        time.Duration
		rate       float64
		queue, buf int64
		t, omit    time.Duration
		series     string
	}{
		// 2 BDP of 1 Gbit/s x 200 ms = 50,000,000 B, rounded up to 64 KiB.
		{"load-200ms-1G", 200 * time.Millisecond, 1e9, 25_000_000, 50_003_968, 15 * time.Second, 5 * time.Second, "limited"},
		{"load-200ms-100M", 200 * time.Millisecond, 100e6, 2_500_000, 5_046_272, 15 * time.Second, 5 * time.Second, "limited"},
		// 0 ms: 1000 packets of queue, 4 MiB of buffers.
		{"load-0ms-1G", 0, 1e9, 1_538_000, 4 << 20, 8 * time.Second, 2 * time.Second, "limited"},
		{"load-50ms-unlimited", 50 * time.Millisecond, 0, 0, 256 << 20, 12 * time.Second, 3 * time.Second, "unlimited"},
		// 10 Gbit/s: 500 MB (under the 512 MiB cap), slow start given 3 s more.
		{"load-200ms-10G", 200 * time.Millisecond, 10e9, 250_000_000, 500_039_680, 15 * time.Second, 8 * time.Second, "limited"},
	} {
		c := caseByID(t, s, tc.id)
		p := s.PathOf(c)
		if p.RTT != tc.rtt || p.RateBps != tc.rate || p.QueueBytes != tc.queue || p.Veth {
			t.Errorf("%s: path %+v, want rtt %v rate %g queue %d", tc.id, p, tc.rtt, tc.rate, tc.queue)
		}
		wantR := "4096 131072 " + strconv.FormatInt(tc.buf, 10)
		wantW := "4096 16384 " + strconv.FormatInt(tc.buf, 10)
		if r, w := setting(c.Client, "net.ipv4.tcp_rmem"), setting(c.Server, "net.ipv4.tcp_wmem"); r != wantR || w != wantW {
			t.Errorf("%s: client tcp_rmem %q server tcp_wmem %q, want %q %q", tc.id, r, w, wantR, wantW)
		}
		if c.Duration != tc.t || c.Omit != tc.omit || c.Series != tc.series || c.Ping < 10 {
			t.Errorf("%s: -t %v -O %v series %s pings %d, want %v %v %s >= 10", tc.id, c.Duration, c.Omit, c.Series, c.Ping, tc.t, tc.omit, tc.series)
		}
	}
	idle := caseByID(t, s, "idle-50ms")
	if idle.Kind != KindPing || idle.Ping != 20 || s.PathOf(idle).RTT != 50*time.Millisecond || s.PathOf(idle).RateBps != 0 {
		t.Errorf("idle-50ms %+v", idle)
	}
	if len(s.Columns) == 0 || s.Header(time.Now()).Columns[0].Metric != "iperf_bps" {
		t.Errorf("header columns %+v", s.Header(time.Now()).Columns)
	}
	// The cases without their own path run on the scenario's.
	if p := (&Scenario{RTT: time.Second, RateBps: 5e6, Queue: 9000}).PathOf(Case{}); p.RTT != time.Second || p.RateBps != 5e6 || p.QueueBytes != 9000 {
		t.Errorf("PathOf without a case path: %+v", p)
	}

	q, err := Expand("emulator", Params{Quick: true}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(q), []string{"ceiling", "load-200ms-1G", "load-200ms-unlimited", "idle-50ms", "idle-200ms"}; !slices.Equal(got, want) {
		t.Errorf("quick cases %v, want %v", got, want)
	}
}

// TestExpandEmulatorRefusesPathFlags: the matrix is the benchmark; a
// flag that would be silently ignored is refused.
func TestExpandEmulatorRefusesPathFlags(t *testing.T) {
	for name, p := range map[string]Params{
		"rtt": {RTT: time.Second}, "rate": {RateBps: 1e6}, "loss": {Loss: 0.01},
		"queue": {Queue: 100000}, "duration": {Duration: time.Minute},
	} {
		_, err := Expand("emulator", p, facts())
		if !badinput.Is(err) || !strings.Contains(err.Error(), "do not apply") {
			t.Errorf("%s: err = %v, want an input error", name, err)
		}
	}
}

// TestModelSkipsEmulatorPaths: the model predicts a rate-limited case on
// its own path, and nothing for pings, veth or unlimited paths.
func TestModelSkipsEmulatorPaths(t *testing.T) {
	s, err := Expand("emulator", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	st := State{}
	st.Client.Sysctls = map[string]string{"net.ipv4.tcp_rmem": "4096 131072 50003968", "net.core.rmem_max": "212992"}
	st.Server.Sysctls = map[string]string{"net.ipv4.tcp_wmem": "4096 16384 50003968", "net.core.wmem_max": "212992"}
	for _, id := range []string{"ceiling", "idle-200ms", "load-200ms-unlimited", "load-0ms-1G", "idle-0ms"} {
		m, _, err := Model(s, caseByID(t, s, id), st, nil)
		if err != nil || m != nil {
			t.Errorf("%s: model %v, %v; want none", id, m, err)
		}
	}
	// Every case of the benchmark gets a model or none, never an error.
	for _, c := range s.Cases {
		if _, _, err := Model(s, c, st, nil); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
	}
	m, _, err := Model(s, caseByID(t, s, "load-50ms-100M"), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 2 BDP of buffers: the 100 Mbit/s path's goodput is the limit.
	if got, want := m["throughput_bps"], pathmodel.Goodput(100e6); got < 0.99*want || got > 1.01*want {
		t.Errorf("model %.0f bit/s on 50 ms x 100 Mbit/s, want the path's %.0f", got, want)
	}
}

// TestEmulatorHeadlines: targets judged on the medians, invalid runs
// named, the cost per Gbit/s and the highest valid rate.
func TestEmulatorHeadlines(t *testing.T) {
	sum := func(id, series string, x float64, n, invalid int, med map[string]float64) results.Summary {
		return results.Summary{Case: id, Series: series, Label: id, X: x, N: n, Invalid: invalid, Median: med}
	}
	sums := []results.Summary{
		sum("ceiling", "ceiling", 0, 3, 0, map[string]float64{"iperf_bps": 60e9}),
		sum("load-200ms-1G", "limited", 1e9, 3, 0, map[string]float64{"iperf_bps": 941e6, "goodput_pct": 99.9, "emu_cpu_pct": 20}),
		sum("load-200ms-2.5G", "limited", 2.5e9, 3, 0, map[string]float64{"iperf_bps": 2.35e9, "goodput_pct": 99.8, "emu_cpu_pct": 47}),
		sum("load-200ms-5G", "limited", 5e9, 1, 2, map[string]float64{"iperf_bps": 4.7e9, "goodput_pct": 99.8, "emu_cpu_pct": 94, "host_cpu_pct": 120}),
		sum("load-200ms-unlimited", "unlimited", 0, 3, 0, map[string]float64{"iperf_bps": 4e9}),
		sum("idle-50ms", "idle", 0.05, 3, 0, map[string]float64{"ping_err_mean_s": 0.15e-3}),
		sum("idle-200ms", "idle", 0.2, 3, 0, map[string]float64{"ping_err_mean_s": 0.3e-3}),
	}
	got := strings.Join(Headlines(results.Header{Scenario: "emulator"}, sums), "\n")
	for _, want := range []string{
		"ceiling: raw veth carries 60 Gbit/s",
		"PASS 200 ms x 1 Gbit/s: goodput 99.9% of the goodput ceiling",
		"PASS 200 ms x 1 Gbit/s: emulator 20.0% of a core",
		"FAIL 200 ms unlimited: 4 Gbit/s",
		"PASS idle 50 ms: mean RTT error 0.150 ms",
		"FAIL idle 200 ms: mean RTT error 0.300 ms",
		"load-200ms-5G: 2 of 3 runs invalid",
		// 20/0.941, 47/2.35, 94/4.7; marginal (94-47)/(4.7-2.35).
		"% of a core per Gbit/s of goodput: 1 Gbit/s 21%, 2.5 Gbit/s 20%, 5 Gbit/s 20%",
		"from 2.5 Gbit/s to 5 Gbit/s each further Gbit/s cost 20.0% of a core",
		"at 5 Gbit/s the whole machine (emulator, both iperf3 and both TCP stacks) used 120% of a core",
		"highest rate carried validly at 200 ms (every run valid, >= 95% of goodput): 2.5 Gbit/s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("headlines lack %q:\n%s", want, got)
		}
	}
}
