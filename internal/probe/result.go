//go:build linux

package probe

import (
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// result is one probe's outcome, and the metrics /probe answers with.
type result struct {
	at     time.Time     // when it ended
	until  time.Time     // served again instead of a new probe until then
	age    time.Duration // how old it is when served (0: fresh)
	took   time.Duration // waits for a busy target included
	waited time.Duration // of took, waiting for a busy target (queue.go)
	doc    *testdoc.Doc  // nil when the probe failed
	err    error
	reason string // failure reason: a bounded label value
	// unseen: a deferred probe's result (deferred.go) no scrape has
	// had yet: the next gets it whatever its age.
	unseen bool
}

func (r *result) aged(now time.Time) *result {
	c := *r
	c.age = max(now.Sub(r.at), 0)
	return &c
}

func pdesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("longhaul_probe_"+name, help, labels, nil)
}

// The probe's metrics. "client" in a label is the exporter's host (the
// prober), "server" the target.
var (
	descSuccess   = pdesc("success", "1 if the test against the target ran and was judged, else 0.")
	descDuration  = pdesc("duration_seconds", "How long the probe's test took (its waits for a busy target not included).")
	descQueued    = pdesc("queued_seconds", "How long the probe waited for the target's serve to end other tests (busy answers) before its own ran.")
	descAge       = pdesc("result_age_seconds", "Age of the result served: 0 when this scrape ran the probe, more when a recent result was reused (--probe-min-interval).")
	descBusy      = pdesc("target_busy", "1 if the target's longhaul serve was busy with another test (the answer is served again for about a probe's length).")
	descFailure   = pdesc("failure_info", "Why the probe failed: busy, exporter-busy, timeout, unreachable (refused or no route), reset, refused (by the target's serve: auth, caps), error.", "reason")
	descRate      = pdesc("throughput_bits_per_second", "What one TCP stream carried, by direction (download: the target sends; upload: the exporter's host sends).", "direction")
	descRetrans   = pdesc("retransmitted_segments", "Segments the sender retransmitted during the direction's phase.", "direction")
	descRTT       = pdesc("rtt_seconds", "The path's round trip: idle (least before any load) and loaded (median while the download ran).", "state")
	descPathRate  = pdesc("path_rate_bits_per_second", "The path's rate as the test estimated it (its basis in longhaul test's path_rate_basis); 0 when unknown.")
	descAfterPlan = pdesc("after_plans_bits_per_second", "What the path model predicts for the direction with both hosts' plans applied.", "direction")
	descLimit     = pdesc("limit_info", "What limited the direction: host (client: the exporter's host, server: the target, path, test, unknown), the setting when a host's (net.ipv4.tcp_rmem, ...), the path's cause when named, the flow's verdict.",
		"direction", "host", "setting", "cause", "verdict")
)

// labelValue keeps label values to the vocabularies they come from
// (sysctl keys, cause and verdict names): anything else is "other".
var labelValue = regexp.MustCompile(`^[a-z0-9_.-]{0,64}$`)

func bounded(s string) string {
	if labelValue.MatchString(s) {
		return s
	}
	return "other"
}

// Describe is unchecked: a result's series depend on what it holds.
func (r *result) Describe(chan<- *prometheus.Desc) {}

func (r *result) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(descSuccess, b2f(r.doc != nil))
	gauge(descDuration, (r.took - r.waited).Seconds())
	gauge(descQueued, r.waited.Seconds())
	gauge(descAge, r.age.Seconds())
	gauge(descBusy, b2f(r.reason == reasonBusy))
	if r.doc == nil {
		gauge(descFailure, 1, r.reason)
		return
	}
	d := r.doc
	gauge(descPathRate, d.PathRateBps)
	if len(d.RTT.IdleS) > 0 {
		gauge(descRTT, d.RTT.MinS, "idle")
	}
	if d.RTT.LoadedS > 0 {
		gauge(descRTT, d.RTT.LoadedS, "loaded")
	}
	for _, dir := range d.Directions {
		name := bounded(dir.Name)
		gauge(descRate, dir.ThroughputBps, name)
		gauge(descRetrans, float64(dir.Flow.Retrans), name)
		if dir.Model.AfterPlansBps > 0 {
			gauge(descAfterPlan, dir.Model.AfterPlansBps, name)
		}
		setting, cause := "", ""
		if strings.HasPrefix(dir.Limit.Setting, "net.") {
			setting = dir.Limit.Setting
		} else {
			cause = dir.Limit.Setting // a path's or CPU's cause name
		}
		if dir.Cause != nil {
			cause = dir.Cause.Name
		}
		gauge(descLimit, 1, name, bounded(dir.Limit.Host), bounded(setting), bounded(cause), bounded(dir.Flow.Verdict.Verdict))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
