package plan

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/units"
)

// tcpMem raises tcp_mem's pressure point when the flows would cross it.
func (b *builder) tcpMem() {
	const key = "net.ipv4.tcp_mem"
	m, ok := b.s.TCPMem()
	if !ok {
		b.note("%s could not be read: memory pressure not checked", key)
		return
	}
	page := b.pageSize()
	if m[0] <= 0 || m[0] > m[1] || m[1] > m[2] {
		b.warn("%s %d %d %d is not ordered min <= pressure <= max: the plan leaves it; fix it first (longhaul audit says how)", key, m[0], m[1], m[2])
		return
	}
	mem := &b.p.Memory
	mem.TCPMemPressureBytes, mem.TCPMemMaxBytes = m[1]*page, m[2]*page
	if b.s.MemTotal > 0 && m[2]*page > b.s.MemTotal {
		b.warn("%s max %s is more than the host's RAM (%s), a fixed value copied from a tuning guide: the plan does not lower it; remove it from the sysctl configuration (longhaul audit)",
			key, units.FormatIEC(float64(m[2]*page)), units.FormatIEC(float64(b.s.MemTotal)))
	}
	need := mem.NeededBytes
	wantBytes := int64(math.Ceil(float64(need) * tcpMemHeadroom))
	wantPages := (wantBytes + page - 1) / page
	if m[1] >= wantPages {
		b.note("%s: pressure at %s leaves room for the %s the flows need (+%.0f%% for other sockets): left alone",
			key, units.FormatIEC(float64(m[1]*page)), units.FormatIEC(float64(need)), 100*(tcpMemHeadroom-1))
		return
	}
	np := wantPages
	nm := max(m[2], np*3/2)
	if b.budget > 0 && nm*page > b.budget && m[2]*page <= b.budget {
		nm = max(np, b.budget/page)
	}
	mem.TCPMemPressureBytes, mem.TCPMemMaxBytes = np*page, nm*page
	b.add(Item{
		Key: key, Kind: KindSysctl, Scope: ScopeHost,
		Current: fmt.Sprintf("%d %d %d", m[0], m[1], m[2]),
		New:     fmt.Sprintf("%d %d %d", m[0], np, nm),
		Why: fmt.Sprintf("tcp_mem is the host-wide budget for all TCP buffers, in pages of %d bytes: above pressure (now %s) the kernel shrinks every socket's buffer; %d flow(s) need %s on this path. New pressure: that + %.0f%% for the host's other sockets; max: 1.5 x pressure, the kernel's own ratio",
			page, units.FormatIEC(float64(m[1]*page)), b.req.Flows, units.FormatIEC(float64(need)), 100*(tcpMemHeadroom-1)),
		MemoryBytes: nm * page,
	})
}

func (b *builder) initCwnd() int {
	if b.in.InitCwnd > 0 {
		return b.in.InitCwnd
	}
	return pathmodel.DefaultInitCwnd
}

func (b *builder) mss() int {
	if b.in.MSS > 0 {
		return b.in.MSS
	}
	return pathmodel.DefaultMSS
}

// slowStartAfterIdle turns off the restart from the initial window after
// idle on senders over long paths.
func (b *builder) slowStartAfterIdle() {
	const key = "net.ipv4.tcp_slow_start_after_idle"
	v, ok := b.s.Int(key)
	switch {
	case !ok || v == 0:
		return
	case !b.req.Role.sends():
		b.note("%s: only a sender restarts from the initial window after idle: left alone for role %s", key, b.req.Role)
		return
	case b.req.RTT < longRTT:
		b.note("%s: at %s an idle restart costs little: left alone", key, units.FormatDuration(b.req.RTT))
		return
	}
	iw := b.initCwnd()
	rounds := pathmodel.SlowStartRounds(float64(b.now.FlowBDPBytes), iw, b.mss())
	cost := time.Duration(rounds) * b.req.RTT
	b.add(Item{
		Key: key, Kind: KindSysctl, Scope: ScopeNetns,
		Current: fmt.Sprint(v), New: "0",
		Why: fmt.Sprintf("a connection idle for one retransmission timeout (at least 200 ms + the RTT) restarts from the initial window, %d segments (RFC 2861), and needs %d round trips, %s at %s, to grow back to the %s window this path needs: every burst on a kept-alive connection pays that again",
			iw, rounds, units.FormatDuration(cost), units.FormatDuration(b.req.RTT), units.FormatBytes(float64(b.now.FlowBDPBytes))),
	})
}

// noMetricsSave stops the cached ssthresh of kernels before 5.6 from
// cutting slow start short.
func (b *builder) noMetricsSave() {
	const key = "net.ipv4.tcp_no_metrics_save"
	v, ok := b.s.Int(key)
	if !ok || v != 0 || !b.req.Role.sends() {
		return
	}
	if b.s.Kernel.Release == "" || b.s.Kernel.AtLeast(5, 6) {
		b.note("%s: since Linux 5.6 ssthresh is not cached per destination (tcp_no_ssthresh_metrics_save=1, commit 65e6d90168f3): left alone", key)
		return
	}
	if b.req.RTT < longRTT {
		return
	}
	rounds := pathmodel.SlowStartRounds(float64(b.now.FlowBDPBytes), b.initCwnd(), b.mss())
	b.add(Item{
		Key: key, Kind: KindSysctl, Scope: ScopeNetns,
		Current: "0", New: "1",
		Why: fmt.Sprintf("before Linux 5.6 the kernel caches ssthresh per destination when a connection closes: after one lossy connection the next transfer to that host leaves slow start at the cached value and grows by about a segment per round trip instead of doubling; slow start would reach the %s window in %d round trips (%s). 1 stops saving metrics; ip tcp_metrics flush clears those already saved",
			units.FormatBytes(float64(b.now.FlowBDPBytes)), rounds, units.FormatDuration(time.Duration(rounds)*b.req.RTT)),
	})
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// app says what applications should do with SO_RCVBUF/SO_SNDBUF.
func (b *builder) app() {
	rtt := units.FormatDuration(b.req.RTT)
	if b.req.AppBuffers {
		var nginx []string
		var why []string
		var iperf string
		for _, e := range []struct {
			receive  bool
			opt, arg string
		}{{false, "SO_SNDBUF", "sndbuf"}, {true, "SO_RCVBUF", "rcvbuf"}} {
			if (e.receive && !b.req.Role.receives()) || (!e.receive && !b.req.Role.sends()) {
				continue
			}
			buf := b.endBuffer(e.receive)
			req := soRequest(buf)
			ratio := pathmodel.SendRatio
			if e.receive {
				ratio = b.now.RecvRatio.Value
				iperf = "iperf3 -w " + nginxSize(req)
			}
			sb := pathmodel.SetSockBuf(req, req, e.receive, ratio, b.req.RTT)
			nginx = append(nginx, e.arg+"="+nginxSize(req))
			why = append(why, fmt.Sprintf("%s %s: the kernel doubles it to %s, a window of %s, %s at %s", e.opt, units.FormatIEC(float64(req)), units.FormatIEC(float64(sb.BufferBytes)), units.FormatBytes(sb.WindowBytes), units.FormatRate(sb.CeilingBps), rtt))
		}
		snippet := "nginx: listen 443 ssl " + strings.Join(nginx, " ") + ";"
		if iperf != "" {
			snippet += "; " + iperf
		}
		b.add(Item{
			Key: "app SO_RCVBUF/SO_SNDBUF", Kind: KindApp,
			Current: "unknown: longhaul cannot see application settings",
			New:     snippet,
			Why:     strings.Join(why, "; ") + "; such sockets keep autotuning off and hold the whole buffer, so size them for the path, not larger",
		})
		return
	}
	var why []string
	for _, c := range []struct {
		core, opt string
		receive   bool
	}{{"net.core.rmem_max", "SO_RCVBUF", true}, {"net.core.wmem_max", "SO_SNDBUF", false}} {
		if (c.receive && !b.req.Role.receives()) || (!c.receive && !b.req.Role.sends()) {
			continue
		}
		core, ok := b.s.Int(c.core)
		if !ok {
			continue
		}
		ratio := pathmodel.SendRatio
		if c.receive {
			ratio = b.now.RecvRatio.Value
		}
		sb := pathmodel.SetSockBuf(pathmodel.MaxBuffer, core, c.receive, ratio, b.req.RTT)
		why = append(why, fmt.Sprintf("a socket that sets %s loses autotuning and gets at most 2 x %s = %s, a window of %s: %s at %s",
			c.opt, c.core, units.FormatIEC(float64(sb.BufferBytes)), units.FormatBytes(sb.WindowBytes), units.FormatRate(sb.CeilingBps), rtt))
	}
	if len(why) == 0 {
		return
	}
	b.add(Item{
		Key: "app SO_RCVBUF/SO_SNDBUF", Kind: KindApp,
		Current: "unknown: longhaul cannot see application settings",
		New:     "leave unset: remove nginx listen ... rcvbuf=/sndbuf= and iperf3 -w",
		Why:     strings.Join(why, "; ") + " (iperf3 -w is silently capped this way); unset, autotuning grows buffers to the tcp_rmem/tcp_wmem maximum. If an application must set them, plan again with --app-buffers",
	})
}

// nginxSize writes a size the way nginx and iperf3 read it.
func nginxSize(n int64) string {
	switch {
	case n%mib == 0:
		return fmt.Sprintf("%dm", n/mib)
	case n%1024 == 0:
		return fmt.Sprintf("%dk", n/1024)
	}
	return fmt.Sprint(n)
}

// after runs the model with the planned buffers.
func (b *builder) after() {
	in := b.in
	if b.rmemMax > 0 {
		in.Rmem.Max = b.rmemMax
	}
	if b.wmemMax > 0 {
		in.Wmem.Max = b.wmemMax
	}
	m := &b.p.Model
	m.PlannedBps, m.PlannedLimitedBy = m.NowBps, m.NowLimitedBy
	if r, err := pathmodel.Compute(in); err == nil {
		m.PlannedBps, m.PlannedLimitedBy = r.ExpectedBps, r.LimitedBy
	}
	var worst int64
	if b.req.Role.receives() && !in.Rmem.IsZero() {
		worst = max(worst, in.Rmem.Max)
	}
	if b.req.Role.sends() && !in.Wmem.IsZero() {
		worst = max(worst, in.Wmem.Max)
	}
	mem := &b.p.Memory
	mem.WorstCaseBytes = pathmodel.FlowMemory(b.req.Flows, 0, worst, [3]int64{}, b.pageSize(), 0).WorstCaseBytes
	if b.budget > 0 && mem.WorstCaseBytes > b.budget {
		b.warn("if every one of the %d flows grew its buffer to the maximum they would take %s, more than the budget %s: tcp_mem pressure then shrinks them first",
			b.req.Flows, units.FormatIEC(float64(mem.WorstCaseBytes)), units.FormatIEC(float64(b.budget)))
	}
	for _, it := range b.p.Items {
		if it.Kind == KindSysctl && it.MemoryBytes > pathmodel.MaxBuffer/2 && (it.Key == "net.ipv4.tcp_rmem" || it.Key == "net.ipv4.tcp_wmem") && b.req.Flows == 1 {
			b.warn("%s: a buffer above 1 GiB for one flow; parallel flows share the path with smaller buffers", it.Key)
		}
	}
}

// mtuProbing turns on Packetization Layer PMTU Discovery (RFC 4821) on
// a sender of a path with a measured black hole: without it a connection
// stalls at its first full-size segment.
func (b *builder) mtuProbing() {
	if !b.req.MTUProbing || !b.req.Role.sends() {
		return
	}
	if v, ok := b.s.Int("net.ipv4.tcp_mtu_probing"); ok && v == 0 {
		b.add(Item{
			Key: "net.ipv4.tcp_mtu_probing", Kind: KindSysctl, Scope: ScopeNetns,
			Current: "0", New: "1",
			Why: "a PMTU black hole was measured on this path (full-size segments never arrived, ICMP 'fragmentation needed' lost): with probing on, the kernel lowers a connection's segment size after a black hole instead of stalling (RFC 4821)",
		})
	}
}

// prerequisites switches on what every buffer change depends on: window
// scaling (without it no window exceeds 64 KB) and, on a receiver,
// receive autotuning (without it buffers stay at tcp_rmem[1]).
func (b *builder) prerequisites() {
	rtt := units.FormatDuration(b.req.RTT)
	// capNow lowers the expected rate when a switched-off prerequisite
	// caps every flow's window below what the buffers allow.
	capNow := func(window float64, why string) {
		agg := min(pathmodel.WindowCeiling(window, b.req.RTT)*float64(b.req.Flows), b.req.RateBps)
		if agg < b.p.Model.NowBps {
			b.p.Model.NowBps, b.p.Model.NowLimitedBy = agg, why
		}
	}
	if v, ok := b.s.Int("net.ipv4.tcp_window_scaling"); ok && v == 0 {
		capNow(pathmodel.MaxUnscaledWindow, "window scaling off")
		b.add(Item{
			Key: "net.ipv4.tcp_window_scaling", Kind: KindSysctl, Scope: ScopeNetns,
			Current: "0", New: "1",
			Why: fmt.Sprintf("without window scaling (RFC 7323) no window exceeds 65,535 bytes: %s at %s whatever the buffers; the path needs %s per flow",
				units.FormatRate(pathmodel.WindowCeiling(pathmodel.MaxUnscaledWindow, b.req.RTT)), rtt, units.FormatBytes(float64(b.now.FlowBDPBytes))),
		})
	}
	if v, ok := b.s.Int("net.ipv4.tcp_moderate_rcvbuf"); ok && v == 0 && b.req.Role.receives() {
		t, _ := b.s.Triple("net.ipv4.tcp_rmem")
		if t.Default == 0 {
			t.Default = 131072 // the kernel's default tcp_rmem[1]
		}
		window := float64(t.Default) * b.now.RecvRatio.Value
		capNow(window, "receive autotuning off")
		b.add(Item{
			Key: "net.ipv4.tcp_moderate_rcvbuf", Kind: KindSysctl, Scope: ScopeNetns,
			Current: "0", New: "1",
			Why: fmt.Sprintf("without receive autotuning every receive buffer stays at tcp_rmem[1] = %s, a window of %s: %s at %s; the tcp_rmem maximum only matters with it on",
				units.FormatIEC(float64(t.Default)), units.FormatBytes(window), units.FormatRate(pathmodel.WindowCeiling(window, b.req.RTT)), rtt),
		})
	}
	var off []string
	for _, k := range []string{"net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps"} {
		if v, ok := b.s.Int(k); ok && v == 0 {
			off = append(off, k)
		}
	}
	if len(off) > 0 {
		b.warn("%s off: loss recovery and RTT measurement suffer on long paths; the plan does not change them (longhaul audit explains)", strings.Join(off, " and "))
	}
	if cc := b.s.Sysctls["net.ipv4.tcp_congestion_control"]; cc == "reno" {
		b.warn("congestion control reno grows one segment per round trip after a loss: at %s it takes long to refill the path; the plan does not change it (longhaul audit explains)", rtt)
	}
}

// daemons warns about tuning daemons that rewrite sysctls at run time.
func (b *builder) daemons() {
	for _, d := range b.s.Daemons {
		switch d.Name {
		case "tuned":
			b.warn("tuned is running (pid %d): its profile may set these sysctls again; put the plan's values in the active tuned profile, or apply warns you of conflicts", d.PID)
		case "bpftune":
			b.warn("bpftune is running (pid %d): it rewrites TCP buffer sysctls at run time and may fight this plan; stop it or exclude its TCP tuner", d.PID)
		}
	}
}
