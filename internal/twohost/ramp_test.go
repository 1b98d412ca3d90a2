//go:build linux

package twohost

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/wire"
)

// Phases sized in round trips are cut to fit a deadline and say so; a
// fixed --duration is the user's and is not; a deadline that leaves
// under MinPhase a phase is an error, not a ramp judged.
func TestFitDeadline(t *testing.T) {
	rtt := 170 * time.Millisecond
	plan := func() []wire.PhaseReq {
		return []wire.PhaseReq{{Name: wire.PhaseDownload, DurationS: 6.8}, {Name: wire.PhaseUpload, DurationS: 6.8}, {Name: wire.PhaseCapacity, DurationS: 6.8}}
	}
	o := ClientOptions{Rounds: 40}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, d, cut, err := o.fitDeadline(ctx, plan(), 6800*time.Millisecond, rtt)
	if err != nil || d >= 5*time.Second || d < 4*time.Second || got[2].DurationS != d.Seconds() || !strings.Contains(cut, "40 round trips were asked") {
		t.Errorf("20 s for 3 phases of 6.8 s: %s, %q, %v", d, cut, err)
	}
	if _, d, cut, _ := o.fitDeadline(context.Background(), plan(), 6800*time.Millisecond, rtt); d != 6800*time.Millisecond || cut != "" {
		t.Errorf("no deadline: %s, %q", d, cut)
	}
	fixed := ClientOptions{Duration: 6800 * time.Millisecond}
	if _, d, cut, _ := fixed.fitDeadline(ctx, plan(), 6800*time.Millisecond, rtt); d != 6800*time.Millisecond || cut != "" {
		t.Errorf("a fixed --duration was cut: %s, %q", d, cut)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel2()
	if _, _, _, err := o.fitDeadline(short, plan(), 6800*time.Millisecond, rtt); err == nil || !strings.Contains(err.Error(), "allow more time") {
		t.Errorf("8 s for 3 phases: %v", err)
	}
	if r := (ClientOptions{RateBps: 100e6, MaxPhaseBytes: 50e6}).phaseRate(8 * time.Second); r != 50e6 {
		t.Errorf("50 MB in 8 s under a 100 Mbit/s cap: pace %g", r)
	}
}
