package exporter

import (
	"bytes"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/longhaul/longhaul/internal/audit"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/golden"
)

// fixed is a collector over a tracker with two samples and a close.
func fixed(t *testing.T, perFlow bool) *Collector {
	t.Helper()
	tr := NewTracker(Config{Groups: []Group{{Name: "far", Prefix: netip.MustParsePrefix("198.18.0.2/32")}},
		MaxSeries: 2000, PerFlow: perFlow})
	tr.Sample(at(0), []flows.Sock{sk(1, peer, 0, 0, 0, 0)})
	tr.Sample(at(1), []flows.Sock{sk(1, peer, 12_500_000, 1, 0.9, 0), sk(2, "203.0.113.9:443", 2_000_000, 0.5, 0, 0)})
	tr.Closed(at(1.5), sk(2, "203.0.113.9:443", 2_500_000, 0.6, 0, 0.1))
	tr.SetSampleCost(sec(0.004))
	c := NewCollector(tr)
	c.build = [3]string{"v1.2.3", "abc123", "go1.26"}
	c.SetHost(Host{MaxWindowBytes: map[string]float64{"receive": 4194304, "send": 3052666},
		Findings: []Finding{{Finding: audit.Finding{ID: "tcp-rmem-max", Severity: audit.Warn}},
			{Finding: audit.Finding{ID: "tcp-wmem-max", Severity: audit.Crit}, Peer: "sin"}}})
	return c
}

// names are the metrics whose values a test can know (not the scrape's
// own duration).
func names(c prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc, 64)
	c.Describe(ch)
	close(ch)
	var out []string
	for d := range ch {
		n := strings.Split(d.String(), `"`)[1]
		if n != "longhaul_exporter_scrape_duration_seconds" {
			out = append(out, n)
		}
	}
	return out
}

func TestCollectorGolden(t *testing.T) {
	for _, perFlow := range []bool{false, true} {
		name := map[bool]string{false: "metrics", true: "metrics-per-flow"}[perFlow]
		t.Run(name, func(t *testing.T) {
			c := fixed(t, perFlow)
			got, err := testutil.CollectAndFormat(c, expfmt.TypeTextPlain, names(c)...)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".golden")
			golden.Check(t, path, path, got)
		})
	}
}

// The names follow the Prometheus conventions (promlint).
func TestCollectorLint(t *testing.T) {
	problems, err := testutil.CollectAndLint(fixed(t, true))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// promtool (Debian's prometheus package) accepts the exposition.
func TestPromtoolCheckMetrics(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (make deps installs it)")
	}
	text, err := testutil.CollectAndFormat(fixed(t, true), expfmt.TypeTextPlain)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("promtool", "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// manyPeers is one sample of n sockets, each to its own /24, each busy
// enough for a group of its own.
func manyPeers(n int) []flows.Sock {
	socks := make([]flows.Sock, n)
	for i := range socks {
		remote := fmt.Sprintf("10.%d.%d.1:443", i>>8, i&0xff)
		socks[i] = sk(uint64(i+1), remote, 1e6, 0.5, 0.25, 0)
	}
	return socks
}

// 50,000 distinct peers stay under the cap, nothing of them is lost from
// the sums, and per-flow series over the cap are dropped and counted.
func TestCardinalityCap(t *testing.T) {
	const n, maxSeries = 50_000, 2000
	for _, perFlow := range []bool{false, true} {
		t.Run(fmt.Sprintf("per-flow=%v", perFlow), func(t *testing.T) {
			tr := NewTracker(Config{MaxSeries: maxSeries, PerFlow: perFlow})
			base := make([]flows.Sock, n)
			for i, s := range manyPeers(n) {
				s.BytesAcked, s.Busy, s.RwndLimited = 0, 0, 0
				base[i] = s
			}
			tr.Sample(at(0), base)
			tr.Sample(at(1), manyPeers(n))
			c := NewCollector(tr)
			series := testutil.CollectAndCount(c)
			if series > maxSeries {
				t.Errorf("%d series, cap %d", series, maxSeries)
			}
			var sent float64
			for _, g := range tr.View(0).Groups {
				sent += g.Sent
			}
			if sent != n*1e6 {
				t.Errorf("sum of sent bytes over groups %.0f, want %d", sent, n*1_000_000)
			}
			dropped := testutil.ToFloat64(onlyDropped{c})
			if perFlow && dropped < float64(n*(len(Limits)+1)-maxSeries) {
				t.Errorf("dropped %.0f series, want at least %d", dropped, n*(len(Limits)+1)-maxSeries)
			}
			if !perFlow && dropped != 0 {
				t.Errorf("dropped %.0f series without --per-flow", dropped)
			}
			t.Logf("%d series, %d groups, %.0f dropped", series, len(tr.View(0).Groups), dropped)
		})
	}
}

// onlyDropped collects c and passes on only the dropped-series counter.
type onlyDropped struct{ c *Collector }

func (o onlyDropped) Describe(ch chan<- *prometheus.Desc) { ch <- descDropped }
func (o onlyDropped) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric, 64)
	go func() { o.c.Collect(all); close(all) }()
	for m := range all {
		if m.Desc() == descDropped {
			ch <- m
		}
	}
}
