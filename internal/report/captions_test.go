package report

import (
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/results"
)

// A lab chart whose results carry no model value draws no model line, so
// its caption does not name one; with the model it keeps the sentence.
func TestCaptionNamesOnlyWhatIsDrawn(t *testing.T) {
	c := results.Chart{ID: "c", Kind: "line", Metric: "goodput_bps", Model: "model_bps",
		Note: "Each point is the median of the repeats (bars: min..max); dashed: the path model's ceiling. curl downloads from nginx."}
	sums := []results.Summary{{Series: "a", X: 1, N: 1, Median: map[string]float64{"goodput_bps": 1e6},
		Min: map[string]float64{"goodput_bps": 1e6}, Max: map[string]float64{"goodput_bps": 1e6}}}
	for _, bar := range []bool{false, true} {
		var cd ChartData
		if bar {
			cd = barChart(c, sums)
		} else {
			cd = lineChart(c, sums)
		}
		if len(cd.Series) != 1 || strings.Contains(strings.ToLower(cd.Note), "dashed") || !strings.Contains(cd.Note, "curl downloads") {
			t.Errorf("bar %v: %d series, note %q: want the measured series only and the model's sentence gone", bar, len(cd.Series), cd.Note)
		}
		sums[0].Model = map[string]float64{"model_bps": 2e6}
		if cd = lineChart(c, sums); len(cd.Series) != 2 || cd.Note != c.Note {
			t.Errorf("with the model: %d series, note %q", len(cd.Series), cd.Note)
		}
		sums[0].Model = nil
	}
}
