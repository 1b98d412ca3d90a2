package pathmodel

import (
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
)

// A transfer whose time overflows a duration is refused, not printed as
// a negative time (calc --size 9e18).
func TestTransferTooLarge(t *testing.T) {
	for _, in := range []Input{
		{RTT: 100 * time.Millisecond, RateBps: 1e9, TransferBytes: 9e18},
		{RTT: 100 * time.Millisecond, RateBps: 1e3, TransferBytes: 1e15},
	} {
		if _, err := Compute(in); err == nil || !badinput.Is(err) {
			t.Errorf("%+v: %v", in, err)
		}
	}
	r, err := Compute(Input{RTT: 100 * time.Millisecond, RateBps: 1e9, TransferBytes: 1e15})
	if err != nil || r.Transfer == nil || r.Transfer.Seconds < 8e6 {
		t.Errorf("1 PB at 1 Gbit/s: %+v %v", r.Transfer, err)
	}
}
