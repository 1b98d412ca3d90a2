// The cases of each lab scenario: the settings each end gets and the
// charts its report draws.

package scenario

import (
	"fmt"
	"slices"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// triple formats a tcp_rmem/tcp_wmem value.
func triple(t pathmodel.Triple) string { return fmt.Sprintf("%d %d %d", t.Min, t.Default, t.Max) }

// bufferTriple is the sweep's setting for a buffer maximum x: the
// minimum and default as the kernel's own, lowered to x when x is
// smaller, so autotuning can grow a socket up to x.
func bufferTriple(x, def int64) pathmodel.Triple {
	return pathmodel.Triple{Min: min(4096, x), Default: min(def, x), Max: x}
}

// Old Ubuntu defaults, the seed's starting point.
var (
	oldUbuntuRmem = pathmodel.Triple{Min: 4096, Default: 131072, Max: 6291456}
	oldUbuntuWmem = pathmodel.Triple{Min: 4096, Default: 16384, Max: 4194304}
)

func bufSysctls(rmem, wmem pathmodel.Triple) []sysctl.Setting {
	var out []sysctl.Setting
	if !rmem.IsZero() {
		out = append(out, sysctl.Setting{Key: "net.ipv4.tcp_rmem", Value: triple(rmem)})
	}
	if !wmem.IsZero() {
		out = append(out, sysctl.Setting{Key: "net.ipv4.tcp_wmem", Value: triple(wmem)})
	}
	return out
}

// runLength is a timed scenario's run length: full or quick default, or
// the user's, which must leave a steady second half after slow start
// (log2(BDP/initcwnd) round trips, about 12 on the longest paths).
func runLength(s *Scenario, p Params, full, quick time.Duration) (time.Duration, error) {
	dur := full
	if s.Quick {
		dur = quick
	}
	if p.Duration != 0 {
		dur = p.Duration
	}
	if min := 12*s.RTT + 2*time.Second; dur < min {
		return 0, inputf("run length %v is too short for a %v path: at least %v (slow start needs the first half)", dur, s.RTT, min)
	}
	return dur, nil
}

// tcpinfoChart is the chart of one run's tcp_info samples over time.
func tcpinfoChart(title string) results.Chart {
	return results.Chart{ID: "tcpinfo", Title: title, Kind: "tcpinfo", XLabel: "time", XUnit: "s", YLabel: "bytes", YUnit: "bytes"}
}

const (
	kib = 1024
	mib = 1024 * kib
	gib = 1024 * mib
)

func expandBuffers(s *Scenario, p Params) error {
	dur, err := runLength(s, p, 12*time.Second, 8*time.Second)
	if err != nil {
		return err
	}
	sizes := []int64{4 * kib, 16 * kib, 64 * kib, 256 * kib, 1 * mib, 2 * mib, 4 * mib, 8 * mib, 16 * mib, 32 * mib, 64 * mib, 128 * mib, 256 * mib, 1 * gib}
	sides := []string{"client", "server", "both"}
	if s.Quick {
		sizes = []int64{256 * kib, 4 * mib, 16 * mib, 64 * mib}
		sides = []string{"both"}
	}
	for _, side := range sides {
		for _, x := range sizes {
			r, w := bufferTriple(x, 131072), bufferTriple(x, 16384)
			c := Case{ID: side + "-" + sizeID(x), Series: side, X: float64(x), Kind: KindDownload, Duration: dur,
				Label: fmt.Sprintf("%s %s", side, units.FormatIEC(float64(x)))}
			switch side {
			case "client":
				c.Client = bufSysctls(r, w)
			case "server":
				c.Server = bufSysctls(r, w)
			default:
				c.Client, c.Server = bufSysctls(r, w), bufSysctls(r, w)
			}
			s.Cases = append(s.Cases, c)
		}
	}
	profile := func(id, label string, cl, sv []sysctl.Setting, x int64, notes ...string) {
		s.Cases = append(s.Cases, Case{ID: id, Series: "profile", Label: label, X: float64(x), Kind: KindDownload,
			Duration: dur, Client: cl, Server: sv, Notes: notes})
	}
	old := bufSysctls(oldUbuntuRmem, oldUbuntuWmem)
	profile("old-ubuntu", "old Ubuntu defaults", old, old, oldUbuntuRmem.Max, "tcp_rmem 4096 131072 6291456, tcp_wmem 4096 16384 4194304 (where the reported problem started)")
	host := bufSysctls(s.Facts.HostRmem, s.Facts.HostWmem)
	profile("host", "this host's settings", host, host, s.Facts.HostRmem.Max,
		fmt.Sprintf("tcp_rmem %s, tcp_wmem %s", triple(s.Facts.HostRmem), triple(s.Facts.HostWmem)))
	if s.Facts.Snapshot != nil {
		set, desc, err := s.Facts.PlanSysctls(s.RTT, s.RateBps, 1)
		if err != nil {
			return fmt.Errorf("longhaul's plan for the path: %w", err)
		}
		x := int64(0)
		for _, sc := range set {
			if sc.Key == "net.ipv4.tcp_rmem" {
				if t, err := sysctl.ParseTriple(sc.Value); err == nil {
					x = t.Max
				}
			}
		}
		profile("plan", "longhaul plan", set, set, x, desc)
	}
	bdp := pathmodel.BDP(s.GoodputBps(), s.RTT)
	s.Charts = []results.Chart{{
		ID: "throughput", Title: "Throughput vs buffer maximum", Kind: "line",
		XLabel: "tcp_rmem/tcp_wmem maximum", XLog: true, XUnit: "bytes",
		YLabel: "throughput (steady state)", YUnit: "bps",
		Metric: "throughput_bps", Model: "throughput_bps", Series: sides,
		Marks: []results.Mark{{X: bdp, Label: "BDP " + units.FormatIEC(bdp)}},
		Note: "Each point is the median of the repeats (bars: min..max); dashed: the path model's ceiling for the settings read back from the kernel. " +
			"client = only the receiver's buffers set, server = only the sender's, both = both ends.",
	}, {
		ID: "profiles", Title: "Named profiles", Kind: "bar",
		XLabel: "profile", YLabel: "throughput (steady state)", YUnit: "bps",
		Metric: "throughput_bps", Model: "throughput_bps", Series: []string{"profile"},
	}, tcpinfoChart("tcp_info over time (sender)")}
	s.TCPInfoCase = "plan"
	if s.Facts.Snapshot == nil {
		s.TCPInfoCase = "old-ubuntu"
	}
	return nil
}

// sizeID names a byte size for case IDs: 4K, 64M, 1G.
func sizeID(n int64) string {
	switch {
	case n >= gib && n%gib == 0:
		return fmt.Sprintf("%dG", n/gib)
	case n >= mib && n%mib == 0:
		return fmt.Sprintf("%dM", n/mib)
	case n >= kib && n%kib == 0:
		return fmt.Sprintf("%dK", n/kib)
	}
	return fmt.Sprintf("%dB", n)
}

// initWindows is a setting of the initcwnd sweep.
type initWindows struct {
	id, label  string
	cwnd, rwnd int
}

func expandInitcwnd(s *Scenario, p Params) error {
	sizes := []int64{1000, 4000, 10000, 17000, 32000, 64000, 128000, 256000, 1000000}
	settings := []initWindows{
		{"default", "initcwnd 10 (default)", 0, 0},
		{"iw20", "initcwnd 20", 20, 0},
		{"iw20-irw20", "initcwnd 20 + initrwnd 20", 20, 20},
		{"iw40-irw40", "initcwnd 40 + initrwnd 40", 40, 40},
	}
	if s.Quick {
		sizes = []int64{1000, 17000, 64000, 256000}
		settings = []initWindows{settings[0], settings[2]}
	}
	for _, st := range settings {
		for _, n := range sizes {
			s.Cases = append(s.Cases, Case{ID: st.id + "-" + units.FormatBytes(float64(n)), Series: st.label, X: float64(n), Kind: KindObject,
				Label: fmt.Sprintf("%s, %s", st.label, units.FormatBytes(float64(n))), Bytes: n, InitCwnd: st.cwnd, InitRwnd: st.rwnd})
		}
	}
	s.Charts = []results.Chart{{
		ID: "ttlb", Title: "Time from SYN to last byte", Kind: "line",
		XLabel: "object size", XLog: true, XUnit: "bytes", YLabel: "time to last byte", YUnit: "s",
		Metric: "ttlb_s", Model: "ttlb_s",
		Marks: []results.Mark{{X: 17000, Label: "17 kB (the page in the reported problem)"}},
		Note:  "New connection per fetch; initcwnd on the server's route to the client, initrwnd on the client's route to the server. Dashed: the path model.",
	}, {
		ID: "rounds", Title: "Round trips from SYN to last byte", Kind: "line",
		XLabel: "object size", XLog: true, XUnit: "bytes", YLabel: "round trips", YUnit: "rounds",
		Metric: "rounds", Model: "rounds",
		Marks: []results.Mark{{X: 17000, Label: "17 kB"}},
	}}
	return nil
}

// longrttSetting is a buffer setting of the longrtt scenario.
type longrttSetting struct {
	id, label      string
	client, server []sysctl.Setting
	window         int64
	note           string
}

func expandLongRTT(s *Scenario, p Params) error {
	dur, err := runLength(s, p, 20*time.Second, 12*time.Second)
	if err != nil {
		return err
	}
	small := pathmodel.Triple{Min: 4096, Default: 87380, Max: 174760}
	smallW := pathmodel.Triple{Min: 4096, Default: 16384, Max: 174760}
	bdp := pathmodel.BDP(s.GoodputBps(), s.RTT)
	seedW := int64(640 * kib)
	bigW := 2 * max(s.Facts.CoreRmemMax, 212992)
	settings := []longrttSetting{
		{id: "small", label: "small buffers (max 170 KiB)", client: bufSysctls(small, smallW), server: bufSysctls(small, smallW),
			note: "tcp_rmem 4096 87380 174760, tcp_wmem 4096 16384 174760: a small host's old defaults"},
		{id: "host", label: "this host's settings",
			note: fmt.Sprintf("tcp_rmem %s, tcp_wmem %s", triple(s.Facts.HostRmem), triple(s.Facts.HostWmem))},
		{id: "w640k", label: "iperf3 -w 640K (the reported workaround)", window: seedW,
			note: "SO_RCVBUF/SO_SNDBUF 640 KiB on both ends; a fixed buffer turns autotuning off"},
		{id: "wbig", label: "iperf3 -w " + units.FormatIEC(float64(bigW)) + " (above rmem_max)", window: bigW,
			note: fmt.Sprintf("asks for more than net.core.rmem_max (%s): the kernel clamps it", units.FormatIEC(float64(s.Facts.CoreRmemMax)))},
	}
	if s.Facts.Snapshot != nil {
		set, desc, err := s.Facts.PlanSysctls(s.RTT, s.RateBps, 1)
		if err != nil {
			return fmt.Errorf("longhaul's plan for the path: %w", err)
		}
		settings = append(settings, longrttSetting{id: "plan", label: "longhaul plan", client: set, server: set, note: desc})
	}
	streams := []int{1, 4, 8}
	if s.Quick {
		streams = []int{1, 4}
		keep := []string{"small", "w640k", "wbig", "plan"}
		settings = slices.DeleteFunc(settings, func(st longrttSetting) bool { return !slices.Contains(keep, st.id) })
	}
	for _, st := range settings {
		for _, n := range streams {
			s.Cases = append(s.Cases, Case{ID: fmt.Sprintf("%s-P%d", st.id, n), Series: st.label, X: float64(n), Kind: KindIperf,
				Label: fmt.Sprintf("%s, %d stream(s)", st.label, n), Duration: dur, Streams: n, Window: st.window,
				Client: st.client, Server: st.server, Notes: []string{st.note}})
		}
	}
	s.Charts = []results.Chart{{
		ID: "streams", Title: "Throughput vs parallel streams", Kind: "line",
		XLabel: "parallel streams (iperf3 -P)", XUnit: "count", YLabel: "throughput (all streams)", YUnit: "bps",
		Metric: "throughput_bps", Model: "throughput_bps",
		Note: fmt.Sprintf("iperf3 -R: the server sends. BDP %s; the dashed lines are the model's ceiling for each setting.", units.FormatIEC(bdp)),
	}, tcpinfoChart("tcp_info over time (sender, first stream)")}
	s.TCPInfoCase = "w640k-P1"
	return nil
}

func expandUpload(s *Scenario, p Params) error {
	const body = 605 * 1000 // the seed's image
	type setting struct {
		id, label string
		rcvbuf    int64
	}
	settings := []setting{
		{"rcvbuf-small", "nginx rcvbuf=2920 (the reported server)", 2920},
		{"rcvbuf-64k", "nginx rcvbuf=64k", 64 * kib},
		{"rcvbuf-512k", "nginx rcvbuf=512k", 512 * kib},
		{"default", "no rcvbuf (autotuning)", 0},
	}
	if s.Quick {
		settings = []setting{settings[0], settings[3]}
	}
	for i, st := range settings {
		s.Cases = append(s.Cases, Case{ID: st.id, Series: "upload", Label: st.label, X: float64(i), Kind: KindUpload,
			Bytes: body, RcvBuf: st.rcvbuf, Capture: true})
	}
	s.Charts = []results.Chart{{
		ID: "upload", Title: fmt.Sprintf("Time to upload %s", units.FormatBytes(body)), Kind: "bar",
		XLabel: "server setting", YLabel: "upload time", YUnit: "s", Metric: "upload_s", Model: "upload_s",
		Note: "curl POSTs to nginx, which reads the whole body before answering. Dashed: window/RTT arithmetic with the window the server advertised.",
	}, tcpinfoChart("tcp_info over time (client, the sender)")}
	s.TCPInfoCase = "rcvbuf-small"
	return nil
}
