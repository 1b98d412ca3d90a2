package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/results"
)

// steadyRatio is the max of the second half of a series over its mean.
func steadyRatio(ys []*float64) (ratio, mean float64) {
	h := ys[len(ys)/2:]
	var sum, hi float64
	for _, y := range h {
		sum += *y
		hi = max(hi, *y)
	}
	mean = sum / float64(len(h))
	return hi / mean, mean
}

// burstySender is n sockets of rate bit/s each whose ACKs come in one
// burst per rtt, each socket sampled every 100 ms at its own offset (as
// the sampler reads the sockets one after another).
func burstySender(n int, rate, rtt, secs float64) []results.Sample {
	var out []results.Sample
	for k := 0; k < n; k++ {
		off := 0.007 * float64(k)
		for i := 0; float64(i)*0.1 <= secs; i++ {
			t := off + float64(i)*0.1
			bursts := math.Floor((t + 0.037) / rtt) // every burst carries rate x rtt, between two samples
			out = append(out, results.Sample{T: t, End: "server", Sock: fmt.Sprintf("s%d", k), RTT: rtt,
				BytesAcked: int64(bursts * rate * rtt / 8)})
		}
	}
	return out
}

// A steady flow reads steady: averaged over a round trip, the plotted
// rate of a flow whose ACKs come once per 200 ms stays within 1.3x of its
// mean (per 100 ms sample it read 0 or twice the rate), and eight such
// streams sampled at staggered instants sum to the total.
func TestRateSeriesSteady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []results.Sample
		want    float64
	}{
		{"one stream, 117 Mbit/s at 200 ms", burstySender(1, 117e6, 0.2, 12), 117e6},
		{"one stream, 117 Mbit/s at 209 ms", burstySender(1, 117e6, 0.209, 12), 117e6},
		{"eight streams of 25 Mbit/s at 200 ms", burstySender(8, 25e6, 0.2, 12), 200e6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ys, w := rateSeries(tc.samples, "server")
			if w < 0.2 {
				t.Errorf("window %g s, want at least the RTT", w)
			}
			ratio, mean := steadyRatio(ys)
			if ratio > 1.3 || math.Abs(mean-tc.want) > 0.1*tc.want {
				t.Errorf("max/mean %.2f, mean %.4g bit/s; want <= 1.3 and %.4g", ratio, mean, tc.want)
			}
		})
	}
}

// The walkthrough's "before" run: both directions held by a 4 MiB send
// buffer at ~115 Mbit/s, the capacity phase 8 streams at ~900 Mbit/s.
func TestRateSeriesWalkthrough(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "test-walkthrough.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildTest(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range p.Charts {
		if !strings.HasSuffix(c.ID, "-rate") {
			continue
		}
		n++
		if ratio, mean := steadyRatio(c.Series[0].Y); ratio > 1.3 {
			t.Errorf("%s: max %.2fx the mean %s", c.ID, ratio, Format(mean, "bps"))
		}
		if len(c.Series) != 2 || c.Series[1].Role != "model" || !strings.Contains(c.Note, "Dashed") {
			t.Errorf("%s: want the measured series and the dashed model line named in the caption, got %d series, note %q", c.ID, len(c.Series), c.Note)
		}
	}
	if n != 3 {
		t.Errorf("%d throughput charts, want 3 (download, upload, capacity)", n)
	}
}

// A caption names only what is drawn: no model, no "Dashed".
func TestRateChartWithoutModel(t *testing.T) {
	cs := phaseCharts("capacity", 8, burstySender(8, 25e6, 0.2, 4), refLine{})
	if len(cs) != 1 || len(cs[0].Series) != 1 || strings.Contains(cs[0].Note, "ashed") {
		t.Errorf("charts %d, series %d, note %q: want one measured series and no dashed line named", len(cs), len(cs[0].Series), cs[0].Note)
	}
}
