package report

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// Linear byte axes tick at round binary values whose labels read round:
// 32.4 MiB of range gives 0, 8, 16, 24, 32 MiB, never 9.54 or 19.1 MiB
// (runs axis.js in node; skipped where node is not installed).
func TestByteAxisTicks(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	const mib = 1 << 20
	ranges := [][2]float64{{0, 30 * mib * 1.08}, {0, 3.053e6 * 1.08}, {0, 941e3}, {0, 130e3 * 1.08}, {2 * mib, 40 * mib}, {0, 1.2e9}}
	script := axisJS + `
var ranges = ` + mustJSON(t, ranges) + `;
console.log(JSON.stringify(ranges.map(function (r) {
  return byteSplits(r[0], r[1]).map(function (v) { return fmt(v, "bytes"); });
})));`
	out, err := exec.Command(node, "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v: %s", err, out)
	}
	var labels [][]string
	if err := json.Unmarshal(out, &labels); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, ls := range labels {
		if len(ls) < 4 || len(ls) > 10 {
			t.Errorf("range %v: %d ticks %q, want 4..10", ranges[i], len(ls), ls)
		}
		for _, l := range ls {
			num := strings.Fields(l)[0]
			if strings.Contains(num, ".") && !strings.HasSuffix(num, ".5") && !strings.HasSuffix(num, ".25") && !strings.HasSuffix(num, ".75") {
				t.Errorf("range %v: tick %q is not a round binary value (ticks %q)", ranges[i], l, ls)
			}
		}
	}
	if got := strings.Join(labels[0], ", "); got != "0 B, 8 MiB, 16 MiB, 24 MiB, 32 MiB" {
		t.Errorf("0..32.4 MiB ticks %s", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
