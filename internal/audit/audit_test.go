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

func TestBufferChecks(t *testing.T) {
	rNeed := need(longPath, 0.66)                // 37,878,788
	wNeed := need(longPath, 0.72)                // 34,722,223
	rNeed4 := need(withFlows(longPath, 4), 0.66) // 9,469,697
	tests := []struct {
		name  string
		check Check
		s     *snapshot.Snapshot
		p     Path
		want  idSev
		texts texts
		// fixKey, when set, checks the buffer max the fix recommends
		// for that key: at least fixNeed, below twice fixNeed.
		fixKey  string
		fixNeed int64
	}{
		{
			name: "rmem 6 MiB on 6.18, 200ms 1Gbit/s: crit", check: checkRmem,
			s: snap(kRmem, rmem6M), p: longPath,
			want: idSev{"tcp-rmem-max", Crit},
			texts: texts{
				observed: []string{"6 MiB (6291456)", "165.9 Mbit/s", rate(pathmodel.MSSWindow((6*mib-pathmodel.RcvReserve)*0.66, 1448), 200*time.Millisecond), "200 ms"},
				expected: []string{fmt.Sprintf("(%d)", rNeed), "(37878788)", "1 Gbit/s at 200 ms"},
				why:      []string{"25 MB per flow", "0.66 of tcp_rmem[2]"},
				fix:      []string{`net.ipv4.tcp_rmem="4096 131072 `, "on the receiver"},
			},
			fixKey: kRmem, fixNeed: rNeed,
		},
		{
			name: "rmem 64 MiB on 6.18: none needed", check: checkRmem,
			s: snap(kRmem, rmem64M), p: longPath,
			want: idSev{"tcp-rmem-max", Info},
			texts: texts{
				observed: []string{"64 MiB (67108864)", rate(64*mib*0.66, 200*time.Millisecond)},
				fix:      []string{"none needed"},
			},
		},
		{
			// 34 MiB x 0.66 x 8 / 0.2 s = 941.2 Mbit/s: between 50% and 95%.
			name: "rmem 34 MiB on 6.18: warn", check: checkRmem,
			s: snap(kRmem, "4096 131072 35651584"), p: longPath,
			want: idSev{"tcp-rmem-max", Warn},
			texts: texts{
				observed: []string{"941.1 Mbit/s"},
				expected: []string{"(37878788)"},
			},
			fixKey: kRmem, fixNeed: rNeed,
		},
		{
			name: "rmem 6 MiB on 5.4 (adv_win_scale 1) needs 50,000,000", check: checkRmem,
			s: snap(kRelease, "5.4.0-216-generic", kAdvScale, "1", kRmem, rmem6M), p: longPath,
			want: idSev{"tcp-rmem-max", Crit},
			texts: texts{
				observed: []string{rate(pathmodel.MSSWindow((6*mib-pathmodel.RcvReserve)*0.5, 1448), 200*time.Millisecond), "125.7 Mbit/s"},
				expected: []string{"(50000000)"},
				why:      []string{"0.5 of tcp_rmem[2]", "tcp_adv_win_scale=1"},
			},
			fixKey: kRmem, fixNeed: 50_000_000,
		},
		{
			name: "rmem on 5.4 without adv_win_scale assumes 1", check: checkRmem,
			s: snap(kRelease, "5.4.0", kRmem, rmem6M), p: longPath,
			want:  idSev{"tcp-rmem-max", Crit},
			texts: texts{expected: []string{"(50000000)"}},
		},
		{
			name: "rmem 6 MiB without path: warn, below the 32 MiB kernel default", check: checkRmem,
			s:    snap(kRmem, rmem6M),
			want: idSev{"tcp-rmem-max", Warn},
			texts: texts{
				observed: []string{"6 MiB (6291456)", units.FormatBytes(6 * mib * 0.66)},
				expected: []string{"(33554432)"},
				why:      []string{rate(6*mib*0.66, 200*time.Millisecond) + " at 200 ms", rate(6*mib*0.66, 50*time.Millisecond) + " at 50 ms"},
				fix:      []string{`net.ipv4.tcp_rmem="4096 131072 33554432"`},
			},
		},
		{
			name: "rmem 32 MiB without path: info", check: checkRmem,
			s:    snap(kRmem, rmem32M),
			want: idSev{"tcp-rmem-max", Info},
			texts: texts{
				why: []string{rate(32*mib*0.66, 100*time.Millisecond) + " at 100 ms"},
				fix: []string{"longhaul audit --rtt RTT --rate RATE"},
			},
		},
		{
			// Per flow 165.9 Mbit/s (2,865 whole segments); 4 flows 663.8 Mbit/s: above half the rate.
			name: "rmem 6 MiB, 4 flows: aggregate 4x, warn", check: checkRmem,
			s: snap(kRmem, rmem6M), p: withFlows(longPath, 4),
			want: idSev{"tcp-rmem-max", Warn},
			texts: texts{
				observed: []string{"caps one flow at 165.9 Mbit/s", "(4 flows: 663.8 Mbit/s)",
					"(4 flows: " + units.FormatRate(4*pathmodel.WindowCeiling(pathmodel.MSSWindow((6*mib-pathmodel.RcvReserve)*0.66, 1448), 200*time.Millisecond)) + ")"},
				expected: []string{"(9469697)", "over 4 flows"},
				fix:      []string{"4096 131072 12582912"},
			},
			fixKey: kRmem, fixNeed: rNeed4,
		},
		{
			name: "rmem 6 MiB, 2 flows: aggregate 331.9 Mbit/s, still crit", check: checkRmem,
			s: snap(kRmem, rmem6M), p: withFlows(longPath, 2),
			want:  idSev{"tcp-rmem-max", Crit},
			texts: texts{observed: []string{"(2 flows: 331.9 Mbit/s)"}},
		},
		{
			name: "wmem 4 MiB, 200ms 1Gbit/s: crit", check: checkWmem,
			s: snap(kWmem, wmem4M), p: longPath,
			want: idSev{"tcp-wmem-max", Crit},
			texts: texts{
				observed: []string{"4 MiB (4194304)", "122.1 Mbit/s", rate(4*mib*0.72+pathmodel.SendOvershoot, 200*time.Millisecond)},
				expected: []string{"(34722223)", fmt.Sprintf("(%d)", wNeed)},
				why:      []string{"0.72 of tcp_wmem[2]", "a sender of 4 MiB"},
				fix:      []string{`net.ipv4.tcp_wmem="4096 16384 44040192"`, "on the sender"},
			},
			fixKey: kWmem, fixNeed: wNeed,
		},
		{
			// (20 MiB x 0.72 + 32 KiB) x 8 / 0.2 s = 605.3 Mbit/s.
			name: "wmem 20 MiB: warn", check: checkWmem,
			s: snap(kWmem, "4096 16384 20971520"), p: longPath,
			want:   idSev{"tcp-wmem-max", Warn},
			texts:  texts{observed: []string{"605.3 Mbit/s"}},
			fixKey: kWmem, fixNeed: wNeed,
		},
		{
			// (34 MiB x 0.72 + 32 KiB) x 8 / 0.2 s = 1.028 Gbit/s: above 95%.
			name: "wmem 34 MiB: info", check: checkWmem,
			s: snap(kWmem, "4096 16384 35651584"), p: longPath,
			want:  idSev{"tcp-wmem-max", Info},
			texts: texts{observed: []string{"1.028 Gbit/s"}, fix: []string{"none needed"}},
		},
		{
			name: "wmem 4 MiB without path: info (no kernel-default rule for the sender)", check: checkWmem,
			s:    snap(kWmem, wmem4M),
			want: idSev{"tcp-wmem-max", Info},
			texts: texts{
				why: []string{rate(4*mib*0.72, 100*time.Millisecond) + " at 100 ms"},
				fix: []string{"longhaul audit --rtt RTT --rate RATE"},
			},
		},
		{
			name: "wmem 4 MiB, 5 flows: aggregate 610.5 Mbit/s, warn", check: checkWmem,
			s: snap(kWmem, wmem4M), p: withFlows(longPath, 5),
			want:  idSev{"tcp-wmem-max", Warn},
			texts: texts{observed: []string{"(5 flows: 610.5 Mbit/s)"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := tc.check(tc.s, tc.p)
			if diff := cmp.Diff([]idSev{tc.want}, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			f := fs[0]
			if want := map[string]string{"tcp-rmem-max": kRmem, "tcp-wmem-max": kWmem}[f.ID]; f.Key != want {
				t.Errorf("Key: want %q, got %q", want, f.Key)
			}
			checkTexts(t, f, tc.texts)
			if tc.fixKey != "" {
				got := fixTripleMax(t, f.Fix, tc.fixKey)
				if got < tc.fixNeed || got >= 2*tc.fixNeed {
					t.Errorf("fix sets max %d, want >= %d and < %d", got, tc.fixNeed, 2*tc.fixNeed)
				}
				if got%mib != 0 {
					t.Errorf("fix sets max %d, want a whole MiB", got)
				}
			}
		})
	}
}

func TestBufferFindingFollowsTCPRmem(t *testing.T) {
	s := snap(kRmem, rmem6M)
	before := summary(checkRmem(s, longPath))
	s.Sysctls[kRmem] = rmem64M
	after := summary(checkRmem(s, longPath))
	if diff := cmp.Diff([]idSev{{"tcp-rmem-max", Crit}}, before); diff != "" {
		t.Errorf("6 MiB (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]idSev{{"tcp-rmem-max", Info}}, after); diff != "" {
		t.Errorf("64 MiB (-want +got):\n%s", diff)
	}
}

func TestBufferChecksWithoutTriple(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    string // "" means the key is absent
	}{
		{"absent", ""},
		{"unparsable", "lots"},
		{"two numbers", "4096 131072"},
		{"unordered", "4096 8388608 131072"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := snap()
			if tc.v != "" {
				s.Sysctls[kRmem], s.Sysctls[kWmem] = tc.v, tc.v
			}
			for _, p := range []Path{{}, longPath} {
				if fs := append(checkRmem(s, p), checkWmem(s, p)...); len(fs) != 0 {
					t.Errorf("path %+v: want no findings, got %v", p, summary(fs))
				}
			}
		})
	}
}

// ---- host options ----

func TestAutotuning(t *testing.T) {
	const kMod = "net.ipv4.tcp_moderate_rcvbuf"
	window := 131072 * 0.66
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		p     Path
		want  []idSev
		texts texts
	}{
		{
			name: "off, no path: ceiling at 100 ms", s: snap(kMod, "0", kRmem, rmem6M),
			want: []idSev{{"receive-autotuning-off", Crit}},
			texts: texts{
				why: []string{"(131072)", rate(window, 100*time.Millisecond) + " at 100 ms", "6.921 Mbit/s"},
				fix: []string{"tcp_moderate_rcvbuf=1"},
			},
		},
		{
			name: "off, path 200 ms", s: snap(kMod, "0", kRmem, rmem6M), p: longPath,
			want:  []idSev{{"receive-autotuning-off", Crit}},
			texts: texts{why: []string{"3.46 Mbit/s at 200 ms"}},
		},
		{name: "on", s: snap(kMod, "1", kRmem, rmem6M), want: []idSev{}},
		{name: "absent", s: snap(kRmem, rmem6M), want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkAutotuning(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	const (
		kWS   = "net.ipv4.tcp_window_scaling"
		kSack = "net.ipv4.tcp_sack"
		kTS   = "net.ipv4.tcp_timestamps"
	)
	tests := []struct {
		name string
		s    *snapshot.Snapshot
		p    Path
		want []idSev
		// why maps an ID to substrings wanted in its Why.
		why map[string][]string
	}{
		{name: "all on", s: snap(kWS, "1", kSack, "1", kTS, "1"), want: []idSev{}},
		{name: "all absent", s: snap(), want: []idSev{}},
		{
			name: "window scaling off, no path: 65,535 bytes at 100 ms", s: snap(kWS, "0", kSack, "1", kTS, "1"),
			want: []idSev{{"window-scaling-off", Crit}},
			why:  map[string][]string{"window-scaling-off": {"65,535", rate(65535, 100*time.Millisecond), "5.243 Mbit/s at 100 ms"}},
		},
		{
			name: "window scaling off, path 200 ms", s: snap(kWS, "0"), p: longPath,
			want: []idSev{{"window-scaling-off", Crit}},
			why:  map[string][]string{"window-scaling-off": {"2.621 Mbit/s at 200 ms"}},
		},
		{name: "sack off", s: snap(kWS, "1", kSack, "0", kTS, "1"), want: []idSev{{"sack-off", Warn}}},
		{name: "timestamps off", s: snap(kWS, "1", kSack, "1", kTS, "0"), want: []idSev{{"timestamps-off", Warn}}},
		{
			name: "all off", s: snap(kWS, "0", kSack, "0", kTS, "0"),
			want: []idSev{{"window-scaling-off", Crit}, {"sack-off", Warn}, {"timestamps-off", Warn}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkOptions(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			for id, subs := range tc.why {
				checkTexts(t, one(t, fs, id), texts{why: subs})
			}
		})
	}
}

func TestSlowStartAfterIdle(t *testing.T) {
	const k = "net.ipv4.tcp_slow_start_after_idle"
	tests := []struct {
		name string
		s    *snapshot.Snapshot
		p    Path
		want []idSev
	}{
		{"on, path 200 ms", snap(k, "1"), longPath, []idSev{{"slow-start-after-idle", Warn}}},
		{"on, path 20 ms", snap(k, "1"), Path{RTT: 20 * time.Millisecond, RateBps: 1e9}, []idSev{{"slow-start-after-idle", Warn}}},
		{"on, path 19 ms", snap(k, "1"), Path{RTT: 19 * time.Millisecond, RateBps: 1e9}, []idSev{{"slow-start-after-idle", Info}}},
		{"on, no path", snap(k, "1"), Path{}, []idSev{{"slow-start-after-idle", Info}}},
		{"on, RTT without rate is no path", snap(k, "1"), Path{RTT: time.Second}, []idSev{{"slow-start-after-idle", Info}}},
		{"off", snap(k, "0"), longPath, []idSev{}},
		{"absent", snap(), longPath, []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkSlowStartAfterIdle(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], texts{fix: []string{"tcp_slow_start_after_idle=0"}})
			}
		})
	}
}

func TestCongestionControl(t *testing.T) {
	const (
		k      = "net.ipv4.tcp_congestion_control"
		kAvail = "net.ipv4.tcp_available_congestion_control"
	)
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts texts
	}{
		{
			name: "reno", s: snap(k, "reno", kAvail, "reno cubic"),
			want:  []idSev{{"congestion-control", Warn}},
			texts: texts{observed: []string{"default reno", "available: reno cubic"}, fix: []string{"tcp_congestion_control=cubic"}},
		},
		{
			name: "cubic", s: snap(k, "cubic", kAvail, "reno cubic"),
			want:  []idSev{{"congestion-control", Info}},
			texts: texts{observed: []string{"default cubic"}, fix: []string{"none needed"}},
		},
		{name: "bbr", s: snap(k, "bbr"), want: []idSev{{"congestion-control", Info}}},
		{name: "absent", s: snap(), want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkCongestionControl(tc.s, longPath)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

func TestMetrics(t *testing.T) {
	const k = "net.ipv4.tcp_no_metrics_save"
	tests := []struct {
		name string
		s    *snapshot.Snapshot
		want []idSev
	}{
		{"metrics saved", snap(k, "0"), []idSev{{"metrics-cached", Info}}},
		{"metrics not saved", snap(k, "1"), []idSev{}},
		{"absent", snap(), []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkMetrics(tc.s, longPath)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], texts{fix: []string{"ip tcp_metrics flush"}})
			}
		})
	}
}

// ---- core max, tcp_mem ----

func TestCoreMaxClamps(t *testing.T) {
	const defaultCoreMax = "212992"
	// An application's SO_RCVBUF gets 2 x 212,992 = 425,984 bytes.
	appWindow := 2 * 212992 * 0.66
	rNeedHalf := (need(longPath, 0.66) + 1) / 2 // 18,939,394
	wNeedHalf := (need(longPath, 0.72) + 1) / 2 // 17,361,112
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		p     Path
		want  []idSev
		texts map[string]texts
	}{
		{
			name: "no path: info for both", s: snap(kRmemMax, defaultCoreMax, kRmem, rmem6M, kWmemMax, defaultCoreMax, kWmem, wmem4M),
			want: []idSev{{"rmem-max-clamps-apps", Info}, {"wmem-max-clamps-apps", Info}},
			texts: map[string]texts{
				"rmem-max-clamps-apps": {
					observed: []string{"(212992)", "(6291456)"},
					why:      []string{"SO_RCVBUF", "416 KiB", rate(appWindow, 100*time.Millisecond) + " at 100 ms"},
					fix:      []string{"only if an application sets SO_RCVBUF"},
				},
				"wmem-max-clamps-apps": {why: []string{"SO_SNDBUF"}},
			},
		},
		{
			name: "path needs more than 2 x core max: warn", s: snap(kRmemMax, defaultCoreMax, kRmem, rmem6M, kWmemMax, defaultCoreMax, kWmem, wmem4M),
			p:    longPath,
			want: []idSev{{"rmem-max-clamps-apps", Warn}, {"wmem-max-clamps-apps", Warn}},
			texts: map[string]texts{
				"rmem-max-clamps-apps": {
					expected: []string{fmt.Sprintf("(%d)", rNeedHalf), "(18939394)", "1 Gbit/s at 200 ms"},
					why:      []string{rate(appWindow, 200*time.Millisecond) + " at 200 ms"},
					fix:      []string{"net.core.rmem_max=24117248"}, // 19 MiB
				},
				"wmem-max-clamps-apps": {
					expected: []string{fmt.Sprintf("(%d)", wNeedHalf), "(17361112)"},
					fix:      []string{"net.core.wmem_max=22020096"}, // 17 MiB
				},
			},
		},
		{
			// 425,984 x 0.66 / 1 ms = 2.25 Gbit/s: enough for 100 Mbit/s.
			name: "short path the clamp covers: info", s: snap(kRmemMax, defaultCoreMax, kRmem, rmem6M),
			p:    Path{RTT: time.Millisecond, RateBps: 100e6},
			want: []idSev{{"rmem-max-clamps-apps", Info}},
		},
		{
			name: "2 x rmem_max >= tcp_rmem max: absent", s: snap(kRmemMax, "3145728", kRmem, rmem6M, kWmemMax, "33554432", kWmem, wmem4M),
			p: longPath, want: []idSev{},
		},
		{name: "core max absent", s: snap(kRmem, rmem6M, kWmem, wmem4M), p: longPath, want: []idSev{}},
		{name: "triple absent", s: snap(kRmemMax, defaultCoreMax, kWmemMax, defaultCoreMax), p: longPath, want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkCoreMax(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			for id, w := range tc.texts {
				checkTexts(t, one(t, fs, id), w)
			}
		})
	}
}

func TestTCPMem(t *testing.T) {
	// 4 flows at 200 ms over 1 Gbit/s with 64 MiB buffers: each flow needs
	// 9,469,697 bytes at the receiver (more than the sender's 6,377,551),
	// 37,878,788 bytes = 36.12 MiB = 9,248 pages in all.
	big := []string{kRmem, rmem64M, kWmem, wmem64M}
	p4 := withFlows(longPath, 4)
	total := 4 * need(p4, 0.66)
	pages := (total + 4095) / 4096
	if total != 37_878_788 || pages != 9248 {
		t.Fatalf("hand arithmetic: total %d pages %d, want 37878788 and 9248", total, pages)
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		p     Path
		want  []idSev
		texts texts
	}{
		{
			name: "no path: info", s: snap(kTCPMem, "2048 4096 8192"),
			want:  []idSev{{"tcp-mem", Info}},
			texts: texts{observed: []string{"2048 4096 8192 pages", "pressure at 16 MiB", "max 32 MiB"}, fix: []string{"none needed"}},
		},
		{
			name: "4 flows above max: crit", s: snap(append(big, kTCPMem, "2048 4096 8192")...), p: p4,
			want: []idSev{{"tcp-mem", Crit}},
			texts: texts{
				observed: []string{"4 flow(s) on this path take up to 36.12 MiB"},
				expected: []string{"pressure above 36.12 MiB", "over 4 flows"},
				// pressure max(4096, 9248*5/4), max max(8192, 9248*3/2)
				fix: []string{fmt.Sprintf(`tcp_mem="2048 %d %d"`, pages*5/4, pages*3/2), `tcp_mem="2048 11560 13872"`},
			},
		},
		{
			name: "4 flows above pressure, below max: warn", s: snap(append(big, kTCPMem, "4096 8192 16384")...), p: p4,
			want:  []idSev{{"tcp-mem", Warn}},
			texts: texts{fix: []string{`tcp_mem="4096 11560 16384"`}},
		},
		{
			name: "4 flows below pressure: info", s: snap(append(big, kTCPMem, "16384 32768 65536")...), p: p4,
			want:  []idSev{{"tcp-mem", Info}},
			texts: texts{observed: []string{"take up to 36.12 MiB"}, fix: []string{"none needed"}},
		},
		{
			// The flows' buffers stop at 6 MiB: 4 x 6 MiB = 24 MiB fits 32 MiB.
			name: "small buffers bound the flows: info", s: snap(kRmem, rmem6M, kWmem, wmem4M, kTCPMem, "2048 8192 16384"), p: p4,
			want:  []idSev{{"tcp-mem", Info}},
			texts: texts{observed: []string{"take up to 24 MiB"}},
		},
		{
			// 8,388,608 pages = 32 GiB on a 16 GiB host.
			name: "folklore tcp_mem above RAM: warn", s: snap(kTCPMem, "8388608 8388608 8388608"),
			want: []idSev{{"tcp-mem", Warn}},
			texts: texts{
				observed: []string{"max 32 GiB"},
				expected: []string{"below RAM (16 GiB)"},
				fix:      []string{"remove the net.ipv4.tcp_mem line"},
			},
		},
		{
			name: "folklore tcp_mem above RAM, with path: still the RAM warning", s: snap(append(big, kTCPMem, "8388608 8388608 8388608")...), p: p4,
			want:  []idSev{{"tcp-mem", Warn}},
			texts: texts{expected: []string{"below RAM"}},
		},
		{name: "absent", s: snap(), p: p4, want: []idSev{}},
		{name: "unparsable", s: snap(kTCPMem, "1 2"), p: p4, want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkTCPMem(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

// ---- routes and links ----

func TestInitialWindows(t *testing.T) {
	withNet := func(st *rtnl.State) *snapshot.Snapshot {
		s := snap(kRmem, rmem6M, kWmem, wmem4M)
		s.Net = st
		return s
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		p     Path
		want  []idSev
		texts texts
	}{
		{
			name: "unset, no path", s: withNet(&rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}}),
			want: []idSev{{"initial-windows", Info}},
			texts: texts{
				observed: []string{"inet route via 192.0.2.1 dev eth0", "initcwnd unset (kernel default)", "initrwnd unset (kernel default)"},
				fix:      []string{"none needed"},
			},
		},
		{
			// A 64,000-byte response: flights of 14,480, 28,960 and the
			// rest after the handshake (4 round trips); with initcwnd 20
			// 28,960 then the rest (3).
			name: "unset, path 200 ms", s: withNet(&rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}}), p: longPath,
			want: []idSev{{"initial-windows", Info}},
			texts: texts{
				why: []string{"64 kB response takes 4 round trips", "3 with initcwnd 20"},
				fix: []string{"ip route change default via 192.0.2.1 dev eth0 initcwnd 20;"},
			},
		},
		{
			name: "already 20/20, path 200 ms: no better", s: withNet(&rtnl.State{Routes: []rtnl.Route{defaultRoute(20, 20)}}), p: longPath,
			want:  []idSev{{"initial-windows", Info}},
			texts: texts{observed: []string{"initcwnd 20, initrwnd 20"}, fix: []string{"none needed"}},
		},
		{
			name: "first default route of the main table wins",
			s: withNet(&rtnl.State{Routes: []rtnl.Route{
				{Family: "inet", Dst: "10.0.0.0/8", Dev: "eth1", Table: 254, InitCwnd: 40},
				{Family: "inet", Dst: "default", Dev: "wg0", Table: 100, InitCwnd: 30},
				defaultRoute(16, 0),
			}}),
			want:  []idSev{{"initial-windows", Info}},
			texts: texts{observed: []string{"dev eth0", "initcwnd 16"}},
		},
		{name: "no Net", s: snap(kRmem, rmem6M), p: longPath, want: []idSev{}},
		{name: "no default route", s: withNet(&rtnl.State{Routes: []rtnl.Route{{Family: "inet", Dst: "10.0.0.0/8", Table: 254}}}), p: longPath, want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkInitialWindows(tc.s, tc.p)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

func TestLink(t *testing.T) {
	withLink := func(l *rtnl.Link) *snapshot.Snapshot {
		s := snap()
		s.Net = &rtnl.State{Routes: []rtnl.Route{defaultRoute(0, 0)}, DefaultLink: l}
		return s
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts map[string]texts
	}{
		{
			// 1400 - 52 = 1348 payload bytes, 1 - 1348/1448 = 6.9% less.
			name: "mtu 1400", s: withLink(link(1400, "")),
			want: []idSev{{"mtu", Info}},
			texts: map[string]texts{"mtu": {
				observed: []string{"eth0 MTU 1400"},
				why:      []string{"1348 payload bytes", "7% less"},
				fix:      []string{"ip link set eth0 mtu 1500"},
			}},
		},
		{name: "mtu 1500", s: withLink(link(1500, "")), want: []idSev{}},
		{name: "mtu 9000", s: withLink(link(9000, "")), want: []idSev{}},
		{
			name: "tso off", s: withLink(link(1500, "", "tcp-segmentation-offload")),
			want: []idSev{{"offloads-off", Warn}},
			texts: map[string]texts{"offloads-off": {
				observed: []string{"eth0: tcp-segmentation-offload off"},
				fix:      []string{"ethtool -K eth0 tso on"},
			}},
		},
		{
			name: "tso and gro off, named in order", s: withLink(link(1500, "", "generic-receive-offload", "tcp-segmentation-offload")),
			want:  []idSev{{"offloads-off", Warn}},
			texts: map[string]texts{"offloads-off": {observed: []string{"tcp-segmentation-offload, generic-receive-offload off"}}},
		},
		{name: "only lro off: no finding", s: withLink(link(1500, "", "large-receive-offload")), want: []idSev{}},
		{name: "offloads not reported", s: withLink(&rtnl.Link{Name: "eth0", MTU: 1500}), want: []idSev{}},
		{
			name: "qdisc", s: withLink(link(1500, "fq_codel")),
			want:  []idSev{{"qdisc", Info}},
			texts: map[string]texts{"qdisc": {observed: []string{"eth0 root qdisc fq_codel, txqueuelen 1000"}}},
		},
		{
			name: "all three, in check order", s: withLink(link(1400, "pfifo_fast", "generic-segmentation-offload")),
			want: []idSev{{"mtu", Info}, {"offloads-off", Warn}, {"qdisc", Info}},
		},
		{name: "no default link", s: withLink(nil), want: []idSev{}},
		{name: "no Net", s: snap(), want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkLink(tc.s, longPath)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			for id, w := range tc.texts {
				checkTexts(t, one(t, fs, id), w)
			}
		})
	}
}

// ---- configuration and daemons ----

func TestConflicts(t *testing.T) {
	const (
		early = "/etc/sysctl.d/10-network.conf"
		late  = "/etc/sysctl.d/99-tuning.conf"
	)
	withConfig := func(runtime string, as ...sysconf.Assignment) *snapshot.Snapshot {
		s := snap()
		if runtime != "" {
			s.Sysctls[kRmem] = runtime
		}
		s.Config = &sysconf.Config{Files: []string{early, late}, Assignments: as}
		return s
	}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts map[string]texts
	}{
		{
			name: "two files, different values: the later wins",
			s:    withConfig(rmem32M, assign(kRmem, rmem6M, early, 3), assign(kRmem, rmem32M, late, 7)),
			want: []idSev{{"sysctl-conflict", Warn}},
			texts: map[string]texts{"sysctl-conflict": {
				observed: []string{"set in 2 places", early + ":3 = " + rmem6M, late + ":7 = " + rmem32M},
				why:      []string{late + " wins"},
				fix:      []string{"keep net.ipv4.tcp_rmem in " + late},
			}},
		},
		{
			name: "values differ only in white space: no conflict",
			s:    withConfig(rmem6M, assign(kRmem, rmem6M, early, 3), assign(kRmem, "4096  131072\t6291456 ", late, 7)),
			want: []idSev{},
		},
		{
			name: "same value twice: no conflict", s: withConfig(rmem6M, assign(kRmem, rmem6M, early, 3), assign(kRmem, rmem6M, late, 7)),
			want: []idSev{},
		},
		{
			name: "runtime differs from the effective config",
			s:    withConfig(rmem6M, assign(kRmem, rmem32M, late, 7)),
			want: []idSev{{"config-not-applied", Info}},
			texts: map[string]texts{"config-not-applied": {
				observed: []string{"is " + rmem6M + " at runtime but " + late + ":7 sets " + rmem32M},
				fix:      []string{"sysctl -p " + late},
			}},
		},
		{
			name: "conflict and runtime from the losing file",
			s:    withConfig(rmem6M, assign(kRmem, rmem6M, early, 3), assign(kRmem, rmem32M, late, 7)),
			want: []idSev{{"sysctl-conflict", Warn}, {"config-not-applied", Info}},
			texts: map[string]texts{"config-not-applied": {
				observed: []string{late + ":7 sets " + rmem32M},
			}},
		},
		{
			name: "runtime agrees up to white space",
			s:    withConfig(rmem6M, assign(kRmem, "4096\t131072   6291456", late, 7)),
			want: []idSev{},
		},
		{
			name: "key not read at runtime: nothing to compare",
			s:    withConfig("", assign("net.ipv4.conf.all.rp_filter", "2", late, 1)),
			want: []idSev{},
		},
		{name: "no config", s: snap(kRmem, rmem6M), want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkConflicts(tc.s, longPath)
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			for id, w := range tc.texts {
				checkTexts(t, one(t, fs, id), w)
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	const (
		key  = "net.ipv4.tcp_collapse_max_bytes"
		file = "/etc/sysctl.d/90-cloudflare.conf"
	)
	withUnknown := func(ignoreMissing bool) *snapshot.Snapshot {
		s := snap()
		a := assign(key, "6291456", file, 4)
		a.IgnoreMissing = ignoreMissing
		s.Config = &sysconf.Config{Files: []string{file}, Assignments: []sysconf.Assignment{a}}
		s.ConfigUnknownKeys = []string{key}
		return s
	}
	noConfig := snap()
	noConfig.ConfigUnknownKeys = []string{key}
	tests := []struct {
		name  string
		s     *snapshot.Snapshot
		want  []idSev
		texts texts
	}{
		{
			name: "unknown key: warn", s: withUnknown(false),
			want: []idSev{{"unknown-key", Warn}},
			texts: texts{
				observed: []string{file + ":4 sets " + key, "kernel 6.18.0-1-amd64"},
				fix:      []string{"delete the line from " + file},
			},
		},
		{
			name: "unknown key with '-': info", s: withUnknown(true),
			want:  []idSev{{"unknown-key", Info}},
			texts: texts{why: []string{"'-' prefix"}},
		},
		{name: "no config", s: noConfig, want: []idSev{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := checkUnknownKeys(tc.s, Path{})
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if len(fs) > 0 {
				checkTexts(t, fs[0], tc.texts)
			}
		})
	}
}

func TestDaemons(t *testing.T) {
	tests := []struct {
		name    string
		daemons []sysconf.Process
		want    []idSev
		fix     string
	}{
		{"tuned", []sysconf.Process{{PID: 812, Name: "tuned"}}, []idSev{{"tuning-daemon", Warn}}, "tuned-adm active"},
		{"bpftune", []sysconf.Process{{PID: 90, Name: "bpftune"}}, []idSev{{"tuning-daemon", Warn}}, "systemctl disable --now bpftune"},
		{"NetworkManager", []sysconf.Process{{PID: 700, Name: "NetworkManager"}}, []idSev{}, ""},
		{"systemd-networkd", []sysconf.Process{{PID: 701, Name: "systemd-networkd"}}, []idSev{}, ""},
		{
			"both tuners and a network daemon",
			[]sysconf.Process{{PID: 90, Name: "bpftune"}, {PID: 700, Name: "NetworkManager"}, {PID: 812, Name: "tuned"}},
			[]idSev{{"tuning-daemon", Warn}, {"tuning-daemon", Warn}}, "",
		},
		{"none", nil, []idSev{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := snap()
			s.Daemons = tc.daemons
			fs := checkDaemons(s, Path{})
			if diff := cmp.Diff(tc.want, summary(fs)); diff != "" {
				t.Fatalf("findings (-want +got):\n%s", diff)
			}
			if tc.fix != "" {
				d := tc.daemons[0]
				checkTexts(t, fs[0], texts{
					observed: []string{fmt.Sprintf("%s is running (pid %d)", d.Name, d.PID)},
					fix:      []string{tc.fix},
				})
				if want := "process " + d.Name; fs[0].Key != want {
					t.Errorf("Key: want %q, got %q", want, fs[0].Key)
				}
			}
		})
	}
}

// ---- Run and Worst ----

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
