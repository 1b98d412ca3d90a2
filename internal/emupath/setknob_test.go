package emupath

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/linkemu"
)

func TestLinkApply(t *testing.T) {
	l := Symmetric(100*time.Millisecond, 500e6, 0, 0, 1)
	err := l.Apply([]string{"down-policer=250Mbit/s/64KB", "down-reorder=5%/30ms", "down-loss=0.01%", "down-queue=0.05bdp", "up-middlebox=wscale=strip"})
	if err != nil {
		t.Fatal(err)
	}
	up, down, err := l.Configs()
	if err != nil {
		t.Fatal(err)
	}
	if down.Policer.RateBps != 250e6 || down.Policer.Burst != 64000 {
		t.Errorf("down policer %+v, want 250 Mbit/s, 64000 bytes", down.Policer)
	}
	if down.Reorder.Share != 0.05 || down.Reorder.Extra != 30*time.Millisecond {
		t.Errorf("down reorder %+v", down.Reorder)
	}
	if l.Down.Loss != 0.0001 || l.Up.Loss != 0 {
		t.Errorf("loss down %g up %g, want 0.0001 and 0", l.Down.Loss, l.Up.Loss)
	}
	if l.Down.Queue.BDPs != 0.05 || l.Up.Queue.BDPs != 1 {
		t.Errorf("queues down %+v up %+v", l.Down.Queue, l.Up.Queue)
	}
	if up.Middlebox.WScale != linkemu.WScaleStrip || down.Middlebox.WScale == linkemu.WScaleStrip {
		t.Errorf("middlebox up %+v down %+v: want the up direction's SYNs stripped", up.Middlebox, down.Middlebox)
	}
	for _, bad := range []string{"policer=1Mbit/s/64KB", "left-loss=1%", "down-loss", "down-colour=red", "down-loss=80%", "down-policer=fast"} {
		l := Symmetric(100*time.Millisecond, 500e6, 0, 0, 1)
		err := l.Apply([]string{bad})
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("Apply(%q) = %v, want an error naming it", bad, err)
		}
	}
}
