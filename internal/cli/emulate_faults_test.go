package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/linkemu"
)

// The fault flags of emulate: outages per direction and burst loss.
func TestEmulateFaultFlags(t *testing.T) {
	tests := []struct {
		name               string
		a                  emulateArgs
		upOut, downOut     []linkemu.Outage
		upBurst, downBurst bool
		wantErr            string
	}{
		{name: "outage both ways", a: emulateArgs{rtt: "50ms", outage: "1s@5s"},
			upOut: []linkemu.Outage{{Start: 5 * time.Second, Duration: time.Second}}, downOut: []linkemu.Outage{{Start: 5 * time.Second, Duration: time.Second}}},
		{name: "outage one way", a: emulateArgs{rtt: "50ms", downOut: "30s@2s"},
			downOut: []linkemu.Outage{{Start: 2 * time.Second, Duration: 30 * time.Second}}},
		{name: "burst loss up", a: emulateArgs{rtt: "50ms", upBurst: "2%/8"}, upBurst: true},
		{name: "burst loss both", a: emulateArgs{rtt: "50ms", burst: "1%/4"}, upBurst: true, downBurst: true},
		{name: "loss and burst loss", a: emulateArgs{rtt: "50ms", loss: "1%", burst: "1%/4"}, wantErr: "not both"},
		{name: "bad burst", a: emulateArgs{rtt: "50ms", burst: "1%"}, wantErr: "MEAN/BURST"},
		{name: "bad outage", a: emulateArgs{rtt: "50ms", outage: "1s"}, wantErr: "DURATION@START"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.queue = "1bdp"
			up, down, _, err := tc.a.linkConfigs()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.upOut, up.Outages); diff != "" {
				t.Errorf("up outages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.downOut, down.Outages); diff != "" {
				t.Errorf("down outages (-want +got):\n%s", diff)
			}
			_, upGE := up.Loss.(linkemu.GilbertElliott)
			_, downGE := down.Loss.(linkemu.GilbertElliott)
			if upGE != tc.upBurst || downGE != tc.downBurst {
				t.Errorf("burst loss up %v down %v, want %v %v", upGE, downGE, tc.upBurst, tc.downBurst)
			}
		})
	}
}
