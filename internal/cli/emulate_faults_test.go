//go:build linux && !longhaul_portable

package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/longhaul/longhaul/internal/linkemu"
)

// The fault flags of emulate: outages per direction and burst loss.
func TestEmulateFaultFlags(t *testing.T) {
	tests := []struct {
		name               string
		args               []string
		upOut, downOut     []linkemu.Outage
		upBurst, downBurst bool
		wantErr            string
	}{
		{name: "outage both ways", args: []string{"--rtt", "50ms", "--outage", "1s@5s"},
			upOut: []linkemu.Outage{{Start: 5 * time.Second, Duration: time.Second}}, downOut: []linkemu.Outage{{Start: 5 * time.Second, Duration: time.Second}}},
		{name: "outage one way", args: []string{"--rtt", "50ms", "--down-outage", "30s@2s"},
			downOut: []linkemu.Outage{{Start: 2 * time.Second, Duration: 30 * time.Second}}},
		{name: "burst loss up", args: []string{"--rtt", "50ms", "--up-burst-loss", "2%/8"}, upBurst: true},
		{name: "burst loss both", args: []string{"--rtt", "50ms", "--burst-loss", "1%/4"}, upBurst: true, downBurst: true},
		{name: "loss and burst loss", args: []string{"--rtt", "50ms", "--loss", "1%", "--burst-loss", "1%/4"}, wantErr: "not both"},
		{name: "bad burst", args: []string{"--rtt", "50ms", "--burst-loss", "1%"}, wantErr: "MEAN/BURST"},
		{name: "bad outage", args: []string{"--rtt", "50ms", "--outage", "1s"}, wantErr: "DURATION@START"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a emulateArgs
			fs := pflag.NewFlagSet("emulate", pflag.ContinueOnError)
			a.registerFlags(fs)
			err := fs.Parse(tc.args)
			var up, down linkemu.Config
			if err == nil {
				var l interface {
					Configs() (linkemu.Config, linkemu.Config, error)
				}
				if l, err = a.link(); err == nil {
					up, down, err = l.Configs()
				}
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.upOut, []linkemu.Outage(up.Outages)); diff != "" {
				t.Errorf("up outages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.downOut, []linkemu.Outage(down.Outages)); diff != "" {
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
