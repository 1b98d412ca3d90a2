package audit

import (
	"fmt"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/snapshot"
)

// audit's fix and plan's item size the same buffer for the same host and
// path: one rule (pathmodel.PlannedBuffer) decides it.
func TestAuditAndPlanAgreeOnSizes(t *testing.T) {
	paths := []Path{
		longPath,
		{RTT: 50 * time.Millisecond, RateBps: 100e6},
		{RTT: 120 * time.Millisecond, RateBps: 10e9},
		withFlows(longPath, 4),
		{RTT: 300 * time.Millisecond, RateBps: 2.5e9, Flows: 2},
	}
	s := snap(kRmem, rmem6M, kWmem, wmem4M, kRmemMax, "212992", kWmemMax, "212992",
		kTCPMem, "4000000 6000000 8000000")
	for _, p := range paths {
		t.Run(fmt.Sprintf("%s %g %d", p.RTT, p.RateBps, p.flows()), func(t *testing.T) {
			pl, err := plan.Make(s, plan.Request{RTT: p.RTT, RateBps: p.RateBps, Flows: p.flows(), Role: plan.Both, MemoryBudget: 64 << 30})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				key   string
				check func(*snapshot.Snapshot, Path) []Finding
			}{{kRmem, checkRmem}, {kWmem, checkWmem}} {
				var planned int64
				for _, it := range pl.Items {
					if it.Key == c.key {
						if _, err := fmt.Sscanf(it.New, "%d %d %d", new(int64), new(int64), &planned); err != nil {
							t.Fatal(err)
						}
					}
				}
				fs := c.check(s, p)
				if len(fs) != 1 {
					t.Fatalf("%s: %d finding(s), want one", c.key, len(fs))
				}
				if planned == 0 {
					if fs[0].Fix != "none needed" {
						t.Errorf("%s: plan leaves it alone, audit's fix is %q", c.key, fs[0].Fix)
					}
					continue
				}
				if got := fixTripleMax(t, fs[0].Fix, c.key); got != planned {
					t.Errorf("%s: audit's fix sets max %d, plan sets %d", c.key, got, planned)
				}
			}
		})
	}
}
