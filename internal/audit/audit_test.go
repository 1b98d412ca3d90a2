package audit

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/rtnl"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/units"
)

// ---- helpers ----

const (
	mib      = 1 << 20
	gib      = 1 << 30
	ramBytes = 16 * gib
	// Typical tcp_rmem/tcp_wmem values ("min default max").
	rmem6M  = "4096 131072 6291456"  // Ubuntu before the 2025 kernel default
	rmem32M = "4096 131072 33554432" // kernel default since 2025
	rmem64M = "4096 131072 67108864"
	wmem4M  = "4096 16384 4194304"
	wmem64M = "4096 16384 67108864"
)

const (
	kRmem     = "net.ipv4.tcp_rmem"
	kWmem     = "net.ipv4.tcp_wmem"
	kRmemMax  = "net.core.rmem_max"
	kWmemMax  = "net.core.wmem_max"
	kTCPMem   = "net.ipv4.tcp_mem"
	kRelease  = "kernel.osrelease"
	kAdvScale = "net.ipv4.tcp_adv_win_scale"
)

// longPath is the buffers seed: 200 ms at 1 Gbit/s, BDP 25 MB.
var longPath = Path{RTT: 200 * time.Millisecond, RateBps: 1e9}

func withFlows(p Path, n int) Path { p.Flows = n; return p }

// snap builds a snapshot from sysctl key/value pairs. The kernel is 6.18
// unless kernel.osrelease is given; pages are 4 KiB, RAM is 16 GiB.
func snap(kv ...string) *snapshot.Snapshot {
	if len(kv)%2 != 0 {
		panic("snap: odd number of key/value arguments")
	}
	s := &snapshot.Snapshot{
		Source:   "test",
		Sysctls:  map[string]string{kRelease: "6.18.0-1-amd64"},
		PageSize: 4096,
		MemTotal: ramBytes,
	}
	for i := 0; i < len(kv); i += 2 {
		s.Sysctls[kv[i]] = kv[i+1]
	}
	k, err := sysconf.ParseKernelRelease(s.Sysctls[kRelease])
	if err != nil {
		panic(err)
	}
	s.Kernel = k
	return s
}

// defaultRoute is a main-table IPv4 default route.
func defaultRoute(initcwnd, initrwnd int) rtnl.Route {
	return rtnl.Route{Family: "inet", Dst: "default", Gateway: "192.0.2.1", Dev: "eth0", Table: 254,
		Protocol: "dhcp", InitCwnd: initcwnd, InitRwnd: initrwnd}
}

// link is an eth0 default link with all offloads on.
func link(mtu int, qdisc string, off ...string) *rtnl.Link {
	l := &rtnl.Link{Name: "eth0", MTU: mtu, TxQueueLen: 1000, Qdisc: qdisc, Offloads: map[string]bool{
		"tcp-segmentation-offload":     true,
		"generic-segmentation-offload": true,
		"generic-receive-offload":      true,
		"large-receive-offload":        true,
	}}
	for _, o := range off {
		l.Offloads[o] = false
	}
	return l
}

func assign(key, value, file string, line int) sysconf.Assignment {
	return sysconf.Assignment{Key: key, Value: value, File: file, Line: line}
}

type idSev struct {
	ID       string
	Severity Severity
}

func summary(fs []Finding) []idSev {
	out := []idSev{}
	for _, f := range fs {
		out = append(out, idSev{f.ID, f.Severity})
	}
	return out
}

// one returns the only finding with id, failing the test otherwise.
func one(t *testing.T, fs []Finding, id string) Finding {
	t.Helper()
	var got []Finding
	for _, f := range fs {
		if f.ID == id {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want exactly one %q finding, got %d in %v", id, len(got), summary(fs))
	}
	return got[0]
}

// texts lists the substrings wanted in each text field of a finding.
type texts struct {
	observed, expected, why, fix []string
}

func checkTexts(t *testing.T, f Finding, want texts) {
	t.Helper()
	for _, c := range []struct {
		field, got string
		want       []string
	}{
		{"Observed", f.Observed, want.observed},
		{"Expected", f.Expected, want.expected},
		{"Why", f.Why, want.why},
		{"Fix", f.Fix, want.fix},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.got, w) {
				t.Errorf("%s: want it to contain %q, got %q", c.field, w, c.got)
			}
		}
	}
}

// fixTripleMax extracts the max of `key="min default max"` from a fix.
func fixTripleMax(t *testing.T, fix, key string) int64 {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(key) + `="(\d+) (\d+) (\d+)"`).FindStringSubmatch(fix)
	if m == nil {
		t.Fatalf("fix %q sets no %s triple", fix, key)
	}
	n, err := strconv.ParseInt(m[3], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rate formats a window's ceiling the way findings print rates.
func rate(window float64, rtt time.Duration) string {
	return units.FormatRate(pathmodel.WindowCeiling(window, rtt))
}

// need is the buffer one flow needs for rate/flows at rtt and ratio.
func need(p Path, ratio float64) int64 {
	return pathmodel.BufferFor(pathmodel.BDP(p.RateBps/float64(p.flows()), p.RTT), ratio)
}

// ---- buffers ----

func TestNeededBuffersByHand(t *testing.T) {
	// The numbers the buffer tests rely on, worked out by hand:
	// 1e9/8 * 0.2 = 25,000,000 bytes; /0.66 rounded up; /0.5; /0.98.
	for _, c := range []struct {
		name  string
		want  int64
		ratio float64
		flows int
	}{
		{name: "receiver 6.6+", want: 37_878_788, ratio: pathmodel.DefaultScalingRatio, flows: 1},
		{name: "receiver adv_win_scale 1", want: 50_000_000, ratio: 0.5, flows: 1},
		{name: "sender", want: 34_722_223, ratio: pathmodel.SendRatio, flows: 1},
		{name: "receiver 6.6+, 4 flows", want: 9_469_697, ratio: pathmodel.DefaultScalingRatio, flows: 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := need(withFlows(longPath, c.flows), c.ratio); got != c.want {
				t.Errorf("need = %d, want %d", got, c.want)
			}
		})
	}
}

// host is an Ubuntu-like host before the 2025 kernel default: small
// buffers, SACK off, slow start after idle, tuned running.
func host() *snapshot.Snapshot {
	s := snap(
		kRmem, rmem6M, kWmem, wmem4M,
		kRmemMax, "212992", kWmemMax, "212992",
		kTCPMem, "16384 32768 65536",
		"net.ipv4.tcp_moderate_rcvbuf", "1",
		"net.ipv4.tcp_window_scaling", "1",
		"net.ipv4.tcp_sack", "0",
		"net.ipv4.tcp_timestamps", "1",
		"net.ipv4.tcp_slow_start_after_idle", "1",
		"net.ipv4.tcp_congestion_control", "cubic",
		"net.ipv4.tcp_no_metrics_save", "0",
	)
	s.Net = &rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}, DefaultLink: link(1500, "fq_codel")}
	s.Daemons = []sysconf.Process{{PID: 812, Name: "tuned"}}
	return s
}

func TestRun(t *testing.T) {
	tests := []struct {
		name string
		p    Path
		want []idSev
	}{
		{
			name: "200 ms at 1 Gbit/s",
			p:    longPath,
			want: []idSev{
				{"tcp-rmem-max", Crit},
				{"tcp-wmem-max", Crit},
				{"rmem-max-clamps-apps", Warn},
				{"wmem-max-clamps-apps", Warn},
				{"sack-off", Warn},
				{"slow-start-after-idle", Warn},
				{"tuning-daemon", Warn},
				{"tcp-mem", Info},
				{"congestion-control", Info},
				{"metrics-cached", Info},
				{"initial-windows", Info},
				{"qdisc", Info},
			},
		},
		{
			name: "no path",
			want: []idSev{
				{"tcp-rmem-max", Warn},
				{"sack-off", Warn},
				{"tuning-daemon", Warn},
				{"tcp-wmem-max", Info},
				{"rmem-max-clamps-apps", Info},
				{"wmem-max-clamps-apps", Info},
				{"tcp-mem", Info},
				{"slow-start-after-idle", Info},
				{"congestion-control", Info},
				{"metrics-cached", Info},
				{"initial-windows", Info},
				{"qdisc", Info},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Run(host(), tc.p)
			if diff := cmp.Diff(tc.want, summary(got)); diff != "" {
				t.Errorf("Run (-want +got):\n%s", diff)
			}
			// Stable: within one severity, findings keep check order.
			var raw []Finding
			for _, c := range Checks {
				raw = append(raw, c(host(), tc.p)...)
			}
			var want []idSev
			for _, sev := range []Severity{Crit, Warn, Info} {
				for _, f := range raw {
					if f.Severity == sev {
						want = append(want, idSev{f.ID, f.Severity})
					}
				}
			}
			if diff := cmp.Diff(want, summary(got)); diff != "" {
				t.Errorf("Run is not the stable sort of the checks' output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(raw, got, cmpSortedAsSet()); diff != "" {
				t.Errorf("Run lost or changed findings (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpSortedAsSet compares finding lists regardless of order.
func cmpSortedAsSet() cmp.Option {
	return cmp.Transformer("sorted", func(fs []Finding) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = fmt.Sprintf("%+v", f)
		}
		slices.Sort(out)
		return out
	})
}

func TestEmptySnapshot(t *testing.T) {
	tests := []struct {
		name string
		s    *snapshot.Snapshot
	}{
		{"empty sysctls", &snapshot.Snapshot{Sysctls: map[string]string{}}},
		{"nil sysctls", &snapshot.Snapshot{}},
		{"empty sysctls, empty net and config", &snapshot.Snapshot{Sysctls: map[string]string{}, Net: &rtnl.State{}, Config: &sysconf.Config{}}},
	}
	for _, tc := range tests {
		for _, p := range []Path{{}, longPath, withFlows(longPath, 8)} {
			t.Run(fmt.Sprintf("%s/%v", tc.name, p.given()), func(t *testing.T) {
				if got := Run(tc.s, p); len(got) != 0 {
					t.Errorf("want no findings, got %v", summary(got))
				}
			})
		}
	}
}

// Regressions found by review: each was a wrong or missing finding.
func TestEdgeCases(t *testing.T) {
	find := func(fs []Finding, id string) *Finding {
		for i := range fs {
			if fs[i].ID == id {
				return &fs[i]
			}
		}
		return nil
	}
	t.Run("window cap, not buffer, limits a 100 Gbit/s x 200 ms flow", func(t *testing.T) {
		s := snap("net.ipv4.tcp_rmem", "4096 131072 2147483647")
		f := find(Run(s, Path{RTT: 200 * time.Millisecond, RateBps: 100e9}), "tcp-rmem-max")
		if f == nil || f.Severity != Crit || !strings.Contains(f.Fix, "at least 3 parallel flows") || strings.Contains(f.Fix, "sysctl") {
			t.Errorf("finding = %+v; want crit advising 3 parallel flows, no smaller buffer", f)
		}
	})
	t.Run("unordered tcp_mem is reported and buffer checks still run", func(t *testing.T) {
		s := snap("net.ipv4.tcp_rmem", "4096 131072 6291456", "net.ipv4.tcp_mem", "300 200 100")
		fs := Run(s, longPath)
		if f := find(fs, "tcp-mem"); f == nil || f.Severity != Warn {
			t.Errorf("tcp-mem = %+v, want warn", f)
		}
		if find(fs, "tcp-rmem-max") == nil {
			t.Error("tcp-rmem-max vanished with an unordered tcp_mem")
		}
	})
	t.Run("route without a gateway", func(t *testing.T) {
		r := rtnl.Route{Family: "inet", Dst: "default", Dev: "wg0", Table: 254}
		s := snap()
		s.Net = &rtnl.State{Routes: []rtnl.Route{r}}
		f := find(Run(s, longPath), "initial-windows")
		if f == nil || strings.Contains(f.Fix, "via") || !strings.Contains(f.Fix, "ip route change default dev wg0 initcwnd 20") {
			t.Errorf("fix = %+v", f)
		}
	})
	t.Run("out-of-range route initcwnd does not hide the finding", func(t *testing.T) {
		s := snap()
		s.Net = &rtnl.State{Routes: []rtnl.Route{defaultRoute(5000, 0)}}
		if find(Run(s, longPath), "initial-windows") == nil {
			t.Error("initial-windows missing")
		}
	})
	t.Run("unknown MTU is not judged", func(t *testing.T) {
		s := snap()
		s.Net = &rtnl.State{DefaultLink: &rtnl.Link{Name: "eth0", MTU: 0}}
		if f := find(Run(s, Path{}), "mtu"); f != nil {
			t.Errorf("mtu finding for MTU 0: %+v", f)
		}
	})
	t.Run("autotuning off without tcp_rmem uses the kernel default", func(t *testing.T) {
		s := snap("net.ipv4.tcp_moderate_rcvbuf", "0")
		if f := find(Run(s, Path{}), "receive-autotuning-off"); f == nil || f.Severity != Crit {
			t.Errorf("receive-autotuning-off = %+v, want crit", f)
		}
	})
}
