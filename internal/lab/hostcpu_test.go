package lab

import (
	"math"
	"strings"
	"testing"
)

func TestParseProcStat(t *testing.T) {
	const a = "cpu  100 5 50 1000 20 3 7 2 40 0\ncpu0 50 2 25 500 10 1 3 1 0 0\nintr 1\n"
	const b = "cpu  300 5 150 1100 20 13 17 2 90 0\ncpu0 150 2 75 550 10 6 8 1 0 0\n"
	ta, err := parseProcStat(strings.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	// busy: user nice system irq softirq steal = 100+5+50+3+7+2; guest left out.
	if ta.busy != 167 || ta.total != 1187 {
		t.Fatalf("parsed %+v", ta)
	}
	tb, _ := parseProcStat(strings.NewReader(b))
	// 320 busy of 420 ticks on 2 CPUs: 1.52 cores.
	if got := busyCores(ta, tb, 2); math.Abs(got-2*320.0/420) > 1e-9 {
		t.Errorf("busy cores %v", got)
	}
	if busyCores(tb, ta, 2) != 0 {
		t.Errorf("a counter going back must not give a negative load")
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 x 4 5\n"} {
		if _, err := parseProcStat(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
