package audit

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/units"
)

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
