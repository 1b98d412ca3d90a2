package exporter

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Host is what the exporter exports about the host's settings: the
// largest window each end can use (package pathmodel) and the audit
// findings (package audit: with no path, and against each peer path).
type Host struct {
	MaxWindowBytes map[string]float64 // by end: "receive", "send"
	Findings       []Finding
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// Metric descriptions. Names follow the Prometheus conventions: base
// units (seconds, bytes), _total for counters, and labels whose sums
// mean something (sum over limit of limited seconds is sending
// socket-seconds; sum over peer is the host's total).
var (
	descBusy = desc("longhaul_tcp_busy_seconds_total",
		"Time sockets had data to send (tcpi_busy_time), summed over the peer group's sockets.", "peer")
	descLimited = desc("longhaul_tcp_limited_seconds_total",
		"Time sending sockets were limited, by reason: rwnd (peer's receive window, tcpi_rwnd_limited), sndbuf (own send buffer, tcpi_sndbuf_limited), cwnd (the rest of busy time: congestion window), app (not busy, in intervals in which the socket sent data).", "peer", "limit")
	descSent = desc("longhaul_tcp_sent_bytes_total",
		"Bytes sent and acknowledged by the peer (tcpi_bytes_acked).", "peer")
	descReceived = desc("longhaul_tcp_received_bytes_total",
		"Bytes received (tcpi_bytes_received).", "peer")
	descRetrans = desc("longhaul_tcp_retransmitted_segments_total",
		"Segments retransmitted (tcpi_total_retrans).", "peer")
	descReorders = desc("longhaul_tcp_reorder_events_total",
		"Times sending sockets saw segments arrive out of order (tcpi_reord_seen): a path that reorders (link aggregation or multipath spraying packets).", "peer")
	descSpurious = desc("longhaul_tcp_spurious_retransmissions_total",
		"Retransmissions the peer reported as duplicates with D-SACK (tcpi_dsack_dups): segments taken for lost that were only late (reordering) or retransmitted too early.", "peer")
	descClosed = desc("longhaul_tcp_closed_sockets_total",
		"Sockets closed whose final counters were folded from the kernel's destroy notification.", "peer")
	descOpen = desc("longhaul_tcp_sockets",
		"TCP sockets open to the peer group at the last sample (listeners excluded).", "peer")
	descMinRTT = desc("longhaul_tcp_min_rtt_seconds",
		"Smallest tcpi_min_rtt among the peer group's open sockets at the last sample.", "peer")
	descFlows = desc("longhaul_tcp_flows",
		"Sockets that sent data in the last sample interval, by the verdict of longhaul flows.", "verdict")
	descCause = desc("longhaul_tcp_flows_cause",
		"Open sending sockets whose last 10 s of samples named this path cause by longhaul flows' rules (random-loss, shallow-buffer, bufferbloat, reordering; in the last 20 s).", "cause")
	descFlowLimited = desc("longhaul_tcp_flow_limited_seconds_total",
		"Per socket (--per-flow): time limited, by reason, since the exporter saw the socket.", "peer", "local", "remote", "limit")
	descFlowSent = desc("longhaul_tcp_flow_sent_bytes_total",
		"Per socket (--per-flow): bytes acknowledged since the exporter saw the socket.", "peer", "local", "remote")
	descWindow = desc("longhaul_host_max_window_bytes",
		"Largest TCP window one flow can use with this host's buffer settings (tcp_rmem/tcp_wmem max, window/buffer ratio); window*8/rtt is its rate ceiling.", "end")
	descFinding = desc("longhaul_audit_finding",
		"Findings of longhaul audit on this host: 1 per finding; peer is empty for the audit with no path, else the peer group whose path (--peer-path) the finding was judged against (only findings that path adds or changes).", "id", "severity", "peer")
	descBuild = desc("longhaul_build_info",
		"Build of the running longhaul: always 1.", "version", "revision", "goversion")
	descScrape = desc("longhaul_exporter_scrape_duration_seconds",
		"Time this scrape took to collect longhaul's metrics.")
	descSample = desc("longhaul_exporter_sample_duration_seconds",
		"Time the last sample (a sock_diag dump or lookup) and its fold took.")
	descSamples = desc("longhaul_exporter_samples_total",
		"Samples folded: full sock_diag dumps, and lookups of the sockets that moved data in between.")
	descFullDumps = desc("longhaul_exporter_full_dumps_total",
		"Full sock_diag dumps among the samples (they find new and closed sockets).")
	descTracked = desc("longhaul_exporter_tracked_sockets",
		"Sockets whose last counters the exporter keeps.")
	descNotified = desc("longhaul_exporter_destroy_notifications_total",
		"Socket destroy notifications folded into the totals.")
	descMissed = desc("longhaul_exporter_missed_closes_total",
		"Sockets that disappeared with no destroy notification: their last interval is not counted.")
	descOverruns = desc("longhaul_exporter_destroy_overruns_total",
		"Times the kernel dropped destroy notifications (receive buffer full).")
	descDropped = desc("longhaul_exporter_series_dropped_total",
		"Series not exported because of --max-series, summed over scrapes.")
	descMaxSeries = desc("longhaul_exporter_max_series",
		"The --max-series cap.")
)

// Collector exports a Tracker's view and the host's settings. It is a
// custom collector of const metrics: each scrape copies the tracker's
// state under its lock (bounded by --max-series) and emits it.
type Collector struct {
	t         *Tracker
	maxSeries int
	build     [3]string

	mu      sync.Mutex
	host    Host
	dropped float64
}

// NewCollector returns a collector of t.
func NewCollector(t *Tracker) *Collector {
	return &Collector{t: t, maxSeries: t.cfg.MaxSeries, build: buildInfo()}
}

// SetHost replaces the host's settings and findings.
func (c *Collector) SetHost(h Host) {
	c.mu.Lock()
	c.host = h
	c.mu.Unlock()
}

func buildInfo() [3]string {
	b := [3]string{"(devel)", "unknown", "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b[0], b[2] = bi.Main.Version, bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				b[1] = s.Value
			}
		}
	}
	return b
}

// Describe sends every description Collect may use.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBusy, descLimited, descSent, descReceived, descRetrans, descReorders, descSpurious, descClosed,
		descOpen, descMinRTT, descFlows, descCause, descFlowLimited, descFlowSent, descWindow, descFinding, descBuild,
		descScrape, descSample, descSamples, descFullDumps, descTracked, descNotified, descMissed, descOverruns, descDropped, descMaxSeries} {
		ch <- d
	}
}

// emitter sends const metrics until the series cap, then counts drops.
type emitter struct {
	ch      chan<- prometheus.Metric
	left    int
	dropped int
}

func (e *emitter) emit(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	if e.left <= 0 {
		e.dropped++
		return
	}
	e.left--
	e.ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
}

// selfSeries is the number of self metrics, emitted last and kept out of
// reach of the cap.
const selfSeries = 10

// Collect emits the metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	start := time.Now()
	e := &emitter{ch: ch, left: c.maxSeries - selfSeries}
	v := c.t.View(c.maxSeries)
	e.emit(descBuild, prometheus.GaugeValue, 1, c.build[:]...)
	c.mu.Lock()
	host := c.host
	c.mu.Unlock()
	for _, end := range []string{"receive", "send"} {
		if w, ok := host.MaxWindowBytes[end]; ok {
			e.emit(descWindow, prometheus.GaugeValue, w, end)
		}
	}
	for _, f := range host.Findings {
		e.emit(descFinding, prometheus.GaugeValue, 1, f.ID, string(f.Severity), f.Peer)
	}
	for verdict, n := range v.Verdicts {
		e.emit(descFlows, prometheus.GaugeValue, float64(n), verdict)
	}
	for cause, n := range v.Causes {
		e.emit(descCause, prometheus.GaugeValue, float64(n), cause)
	}
	for _, g := range v.Groups {
		emitGroup(e, g)
	}
	for _, f := range v.Flows {
		for i, l := range Limits {
			e.emit(descFlowLimited, prometheus.CounterValue, f.Limited[i], f.Peer, f.Local, f.Remote, l)
		}
		e.emit(descFlowSent, prometheus.CounterValue, f.Sent, f.Peer, f.Local, f.Remote)
	}
	e.dropped += v.MoreFlows * (len(Limits) + 1)
	c.mu.Lock()
	c.dropped += float64(e.dropped)
	dropped := c.dropped
	c.mu.Unlock()
	s := v.Self
	ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, dropped)
	ch <- prometheus.MustNewConstMetric(descMaxSeries, prometheus.GaugeValue, float64(c.maxSeries))
	ch <- prometheus.MustNewConstMetric(descSamples, prometheus.CounterValue, s.Samples)
	ch <- prometheus.MustNewConstMetric(descFullDumps, prometheus.CounterValue, s.FullDumps)
	ch <- prometheus.MustNewConstMetric(descSample, prometheus.GaugeValue, s.SampleSeconds)
	ch <- prometheus.MustNewConstMetric(descTracked, prometheus.GaugeValue, float64(s.Tracked))
	ch <- prometheus.MustNewConstMetric(descNotified, prometheus.CounterValue, s.ClosesNotified)
	ch <- prometheus.MustNewConstMetric(descMissed, prometheus.CounterValue, s.ClosesMissed)
	ch <- prometheus.MustNewConstMetric(descOverruns, prometheus.CounterValue, s.Overruns)
	ch <- prometheus.MustNewConstMetric(descScrape, prometheus.GaugeValue, time.Since(start).Seconds())
}

func emitGroup(e *emitter, g GroupView) {
	e.emit(descBusy, prometheus.CounterValue, g.Busy, g.Name)
	for i, l := range Limits {
		e.emit(descLimited, prometheus.CounterValue, g.Limited[i], g.Name, l)
	}
	e.emit(descSent, prometheus.CounterValue, g.Sent, g.Name)
	e.emit(descReceived, prometheus.CounterValue, g.Received, g.Name)
	e.emit(descRetrans, prometheus.CounterValue, g.Retrans, g.Name)
	e.emit(descReorders, prometheus.CounterValue, g.Reorders, g.Name)
	e.emit(descSpurious, prometheus.CounterValue, g.Spurious, g.Name)
	e.emit(descClosed, prometheus.CounterValue, g.Closed, g.Name)
	e.emit(descOpen, prometheus.GaugeValue, float64(g.Open), g.Name)
	if g.MinRTT > 0 {
		e.emit(descMinRTT, prometheus.GaugeValue, g.MinRTT.Seconds(), g.Name)
	}
}
