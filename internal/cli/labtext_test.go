//go:build linux && !longhaul_portable

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/lab"
)

// A lab of one run says "1 run", not "1 runs" (issue 53).
func TestLabProgressPlural(t *testing.T) {
	for _, tt := range []struct {
		total int
		want  string
	}{
		{1, "longhaul: lab: 1 run done in 0:05\n"},
		{3, "longhaul: lab: 3 runs done in 0:05\n"},
	} {
		var b strings.Builder
		progressLines(&b)(lab.Progress{Done: tt.total, Total: tt.total, Elapsed: 5 * time.Second})
		if b.String() != tt.want {
			t.Errorf("%d runs: got %q, want %q", tt.total, b.String(), tt.want)
		}
	}
	if got := count(0, "case") + ", " + count(1, "repeat"); got != "0 cases, 1 repeat" {
		t.Errorf("count: got %q", got)
	}
}
