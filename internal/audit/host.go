package audit

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
	"github.com/longhaul/longhaul/internal/units"
)

// checkOptions: window scaling, SACK and timestamps (RFC 7323, 2018).
func checkOptions(s *snapshot.Snapshot, p Path) []Finding {
	var out []Finding
	rtt := 100 * time.Millisecond
	if p.given() {
		rtt = p.RTT
	}
	if v, ok := s.Int("net.ipv4.tcp_window_scaling"); ok && v == 0 {
		out = append(out, Finding{
			ID: "window-scaling-off", Severity: Crit, Key: "net.ipv4.tcp_window_scaling",
			Observed: "net.ipv4.tcp_window_scaling = 0",
			Expected: "1",
			Why: fmt.Sprintf("without window scaling no window exceeds 65,535 bytes: %s at %s, whatever the buffers",
				units.FormatRate(pathmodel.WindowCeiling(pathmodel.MaxUnscaledWindow, rtt)), units.FormatDuration(rtt)),
			Fix: "sysctl -w net.ipv4.tcp_window_scaling=1",
		})
	}
	if v, ok := s.Int("net.ipv4.tcp_sack"); ok && v == 0 {
		out = append(out, Finding{
			ID: "sack-off", Severity: Warn, Key: "net.ipv4.tcp_sack",
			Observed: "net.ipv4.tcp_sack = 0", Expected: "1",
			Why: "without selective acknowledgements a loss in a large window costs a round trip per lost segment or a timeout; on long paths recovery takes seconds",
			Fix: "sysctl -w net.ipv4.tcp_sack=1",
		})
	}
	if v, ok := s.Int("net.ipv4.tcp_timestamps"); ok && v == 0 {
		out = append(out, Finding{
			ID: "timestamps-off", Severity: Warn, Key: "net.ipv4.tcp_timestamps",
			Observed: "net.ipv4.tcp_timestamps = 0", Expected: "1",
			Why: "timestamps give RTT samples on every ACK (RFC 7323) and protect against wrapped sequence numbers above ~1 Gbit/s (PAWS)",
			Fix: "sysctl -w net.ipv4.tcp_timestamps=1",
		})
	}
	return out
}

func checkSlowStartAfterIdle(s *snapshot.Snapshot, p Path) []Finding {
	v, ok := s.Int("net.ipv4.tcp_slow_start_after_idle")
	if !ok || v == 0 {
		return nil
	}
	sev := Info
	if p.given() && p.RTT >= 20*time.Millisecond {
		sev = Warn
	}
	return []Finding{{
		ID: "slow-start-after-idle", Severity: sev, Key: "net.ipv4.tcp_slow_start_after_idle",
		Observed: fmt.Sprintf("net.ipv4.tcp_slow_start_after_idle = %d", v),
		Expected: "0 for keep-alive connections over long paths",
		Why:      "a connection idle for one retransmission timeout restarts from the initial window (RFC 2861): each burst on a reused connection pays slow start again, one round trip per doubling",
		Fix:      "sysctl -w net.ipv4.tcp_slow_start_after_idle=0",
	}}
}

func checkCongestionControl(s *snapshot.Snapshot, p Path) []Finding {
	cc, ok := s.Sysctls["net.ipv4.tcp_congestion_control"]
	if !ok {
		return nil
	}
	f := Finding{
		ID: "congestion-control", Severity: Info, Key: "net.ipv4.tcp_congestion_control",
		Observed: fmt.Sprintf("default %s; available: %s; allowed without privilege: %s", cc,
			s.Sysctls["net.ipv4.tcp_available_congestion_control"], s.Sysctls["net.ipv4.tcp_allowed_congestion_control"]),
		Expected: "cubic or bbr",
		Why:      "the congestion control decides how fast a flow grows and how it reacts to loss; on long lossy paths bbr keeps rate where cubic backs off",
		Fix:      "none needed",
	}
	if cc == "reno" {
		f.Severity = Warn
		f.Why = "reno grows the window by one segment per round trip: at 200 ms it takes minutes to fill a 1 Gbit/s path after a loss"
		f.Fix = "sysctl -w net.ipv4.tcp_congestion_control=cubic (or bbr if available)"
	}
	return []Finding{f}
}

func checkMetrics(s *snapshot.Snapshot, p Path) []Finding {
	v, ok := s.Int("net.ipv4.tcp_no_metrics_save")
	if !ok || v != 0 {
		return nil
	}
	return []Finding{{
		ID: "metrics-cached", Severity: Info, Key: "net.ipv4.tcp_no_metrics_save",
		Observed: "net.ipv4.tcp_no_metrics_save = 0",
		Expected: "1 on hosts that run repeated throughput tests",
		Why:      "the kernel caches ssthresh and RTT per destination when a connection closes; the next test to the same host starts from them, so tests run one after another are not independent",
		Fix:      "between tests: ip tcp_metrics flush; or sysctl -w net.ipv4.tcp_no_metrics_save=1 on test hosts",
	}}
}

// checkInitialWindows reports the default route's initcwnd/initrwnd and
// what they mean for a short response.
func checkInitialWindows(s *snapshot.Snapshot, p Path) []Finding {
	if s.Net == nil {
		return nil
	}
	d := s.Net.DefaultRoutes()
	if len(d) == 0 {
		return nil
	}
	r := d[0]
	show := func(v int, what string) string {
		if v == 0 {
			return what + " unset (kernel default)"
		}
		return fmt.Sprintf("%s %d", what, v)
	}
	f := Finding{
		ID: "initial-windows", Severity: Info, Key: "route " + r.Dst,
		Observed: fmt.Sprintf("%s route via %s dev %s: %s, %s", r.Family, orNone(r.Gateway), r.Dev, show(r.InitCwnd, "initcwnd"), show(r.InitRwnd, "initrwnd")),
		Expected: "initcwnd/initrwnd sized for the responses your hosts send over long paths",
		Why:      "a new connection sends at most min(initcwnd, initrwnd) segments in its first round trip and doubles per round trip after",
		Fix:      "none needed",
	}
	if p.given() {
		const obj = 64_000
		in := s.ModelInput()
		in.RTT, in.RateBps, in.TransferBytes = p.RTT, p.RateBps, obj
		now, err1 := pathmodel.Compute(in)
		// Since 4.19 a receiver offers up to 64 KB in its SYN-ACK and
		// initrwnd can only lower that: suggest it for older kernels only.
		// `ip route change` without initrwnd removes it: the default.
		metrics := "initcwnd 20"
		in.InitCwnd, in.InitRwnd = 20, 0
		if !s.Kernel.AtLeast(4, 19) {
			metrics, in.InitRwnd = "initcwnd 20 initrwnd 20", 20
		}
		better, err2 := pathmodel.Compute(in)
		if err1 == nil && err2 == nil && better.Transfer.RoundTrips < now.Transfer.RoundTrips {
			f.Why = fmt.Sprintf("%s; a %s response takes %d round trips (%s) from SYN to last byte, %d with %s",
				f.Why, units.FormatBytes(obj), now.Transfer.RoundTrips, units.FormatDuration(time.Duration(now.Transfer.Seconds*float64(time.Second))), better.Transfer.RoundTrips, metrics)
			via := ""
			if r.Gateway != "" {
				via = " via " + r.Gateway
			}
			f.Fix = fmt.Sprintf("for short responses over this path, on the sender, per route: ip route change %s%s dev %s %s; persist it in the network configuration (systemd-networkd [Route] InitialCongestionWindow=/InitialAdvertisedReceiveWindow=, or NetworkManager route attributes)", r.Dst, via, r.Dev, metrics)
		}
	}
	return []Finding{f}
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func checkLink(s *snapshot.Snapshot, p Path) []Finding {
	if s.Net == nil || s.Net.DefaultLink == nil {
		return nil
	}
	l := s.Net.DefaultLink
	var out []Finding
	if l.MTU > 0 && l.MTU < 1500 {
		out = append(out, Finding{
			ID: "mtu", Severity: Info, Key: "link " + l.Name,
			Observed: fmt.Sprintf("%s MTU %d", l.Name, l.MTU),
			Expected: "1500 or more where the path allows",
			Why:      fmt.Sprintf("segments carry at most %d payload bytes (with timestamps); windows count in segments, so each round trip carries %.0f%% less than at 1500", l.MTU-52, 100*(1-float64(l.MTU-52)/1448)),
			Fix:      "none if a tunnel or the provider sets it; otherwise ip link set " + l.Name + " mtu 1500",
		})
	}
	var off []string
	for _, name := range []string{"tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload"} {
		if v, ok := l.Offloads[name]; ok && !v {
			off = append(off, name)
		}
	}
	if len(off) > 0 {
		out = append(out, Finding{
			ID: "offloads-off", Severity: Warn, Key: "link " + l.Name,
			Observed: fmt.Sprintf("%s: %s off", l.Name, strings.Join(off, ", ")),
			Expected: "segmentation and receive offloads on",
			Why:      "without them the kernel handles every 1500-byte packet one by one: several times the CPU per byte, and one core may not reach multi-Gbit/s",
			Fix:      fmt.Sprintf("ethtool -K %s tso on gso on gro on", l.Name),
		})
	}
	if l.Qdisc != "" {
		out = append(out, Finding{
			ID: "qdisc", Severity: Info, Key: "link " + l.Name,
			Observed: fmt.Sprintf("%s root qdisc %s, txqueuelen %d", l.Name, l.Qdisc, l.TxQueueLen),
			Expected: "fq where available (pacing, fair queues); any qdisc works with bbr since 4.13",
			Why:      "the qdisc decides queueing at this host; bbr paces in TCP itself when fq is absent",
			Fix:      "none needed",
		})
	}
	return out
}

// checkConflicts reports keys set differently in several persistent
// sources, and keys whose running value differs from the configuration.
func checkConflicts(s *snapshot.Snapshot, p Path) []Finding {
	if s.Config == nil {
		return nil
	}
	var out []Finding
	for _, c := range s.Config.Conflicts() {
		var places []string
		for _, a := range c.Assignments {
			places = append(places, fmt.Sprintf("%s:%d = %s", a.File, a.Line, a.Value))
		}
		last := c.Assignments[len(c.Assignments)-1]
		out = append(out, Finding{
			ID: "sysctl-conflict", Severity: Warn, Key: c.Key,
			Observed: fmt.Sprintf("%s set in %d places: %s", c.Key, len(c.Assignments), strings.Join(places, "; ")),
			Expected: "one source per key",
			Why:      fmt.Sprintf("systemd-sysctl applies files in lexical order of their names and /etc/sysctl.conf last, so %s wins at boot; the other lines mislead whoever reads them", last.File),
			Fix:      fmt.Sprintf("keep %s in %s and delete it from the other files", c.Key, last.File),
		})
	}
	eff := s.Config.Effective()
	for _, k := range sortedKeys(eff) {
		run, ok := s.Sysctls[k]
		a := eff[k]
		if !ok || sysctl.Normalize(a.Value) == run {
			continue
		}
		out = append(out, Finding{
			ID: "config-not-applied", Severity: Info, Key: k,
			Observed: fmt.Sprintf("%s is %s at runtime but %s:%d sets %s", k, run, a.File, a.Line, a.Value),
			Expected: "runtime and configuration agree",
			Why:      "the running value was changed after boot or the file was never applied: after a reboot the host behaves differently",
			Fix:      fmt.Sprintf("apply the file (sysctl -p %s) or update it to the running value", a.File),
		})
	}
	return out
}

func sortedKeys(m map[string]sysconf.Assignment) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func checkUnknownKeys(s *snapshot.Snapshot, p Path) []Finding {
	if s.Config == nil {
		return nil
	}
	eff := s.Config.Effective()
	var out []Finding
	for _, k := range s.ConfigUnknownKeys {
		a := eff[k]
		f := Finding{
			ID: "unknown-key", Severity: Warn, Key: k,
			Observed: fmt.Sprintf("%s:%d sets %s, which kernel %s does not have", a.File, a.Line, k, s.Kernel.Release),
			Expected: "only keys the running kernel has",
			Why:      "the line does nothing (keys like tcp_collapse_max_bytes exist only on patched kernels) and systemd-sysctl logs an error at every boot",
			Fix:      fmt.Sprintf("delete the line from %s", a.File),
		}
		if a.IgnoreMissing {
			f.Severity = Info
			f.Why = "the line does nothing on this kernel; its '-' prefix keeps systemd-sysctl quiet about it"
		}
		out = append(out, f)
	}
	return out
}

func checkDaemons(s *snapshot.Snapshot, p Path) []Finding {
	var out []Finding
	for _, d := range s.Daemons {
		switch d.Name {
		case "tuned", "bpftune":
			out = append(out, Finding{
				ID: "tuning-daemon", Severity: Warn, Key: "process " + d.Name,
				Observed: fmt.Sprintf("%s is running (pid %d)", d.Name, d.PID),
				Expected: "one owner for TCP settings",
				Why:      fmt.Sprintf("%s changes TCP sysctls itself and may override or revert what sysctl.d or longhaul sets", d.Name),
				Fix:      fmt.Sprintf("check what %s manages (tuned-adm active / bpftune -s) before changing settings, or stop it: systemctl disable --now %s", d.Name, d.Name),
			})
		}
	}
	return out
}
