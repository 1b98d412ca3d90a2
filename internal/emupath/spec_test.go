package emupath

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/pathmodel"
)

func TestQueueSet(t *testing.T) {
	for in, want := range map[string]Queue{
		"1bdp": {BDPs: 1}, "0.5bdp": {BDPs: 0.5}, "1000p": {Packets: 1000}, "25MB": {Bytes: 25_000_000}, "64KiB": {Bytes: 65536},
	} {
		var q Queue
		if err := q.Set(in); err != nil || q != want {
			t.Errorf("%q: %+v, %v; want %+v", in, q, err, want)
		}
	}
	for _, in := range []string{"-1bdp", "0bdp", "xbdp", "0p", "1.5p", "-3", "lots"} {
		var q Queue
		if err := q.Set(in); err == nil {
			t.Errorf("%q accepted as %+v", in, q)
		}
	}
	// A bare number is packets to netem users and bytes to a size parser:
	// refused, with the ways to say it.
	for _, in := range []string{"100", " 1500 ", "2.5", "0"} {
		var q Queue
		err := q.Set(in)
		if err == nil || !strings.Contains(err.Error(), "no unit") || !strings.Contains(err.Error(), "p (netem's limit counts packets)") || !strings.Contains(err.Error(), "1bdp") {
			t.Errorf("%q: %+v, %v; want refused, saying how to write packets, bytes or BDPs", in, q, err)
		}
	}
	// What String prints is read back as the same queue.
	for _, q := range []Queue{{Bytes: 150_000}, {Packets: 100}, {BDPs: 0.5}} {
		var back Queue
		if err := back.Set(q.String()); err != nil || back != q {
			t.Errorf("%+v printed as %q, read back as %+v, %v", q, q.String(), back, err)
		}
	}
}

func TestLinkConfigs(t *testing.T) {
	l := Symmetric(200*time.Millisecond, 1e9, 0.001, 0, 7)
	up, down, err := l.Configs()
	if err != nil {
		t.Fatal(err)
	}
	if up.Delay != 100*time.Millisecond || down.Delay != 100*time.Millisecond || l.RTT() != 200*time.Millisecond {
		t.Errorf("delays %v %v", up.Delay, down.Delay)
	}
	if up.QueueBytes != 25_000_000 || up.Loss == nil || up.Seed != 7 || down.Seed != 8 {
		t.Errorf("up %+v down seed %d", up, down.Seed)
	}
	// No rate: no bottleneck and so no queue, whatever was asked.
	l.Up.RateBps, l.Up.Queue = 0, Queue{Packets: 10}
	if up, _, _ := l.Configs(); up.QueueBytes != 0 || up.QueuePackets != 0 {
		t.Errorf("unlimited link with a queue: %+v", up)
	}
	// A BDP queue on a short path is floored.
	if up, _, _ := Symmetric(0, 1e9, 0, 0, 1).Configs(); up.QueueBytes != linkemu.MinBDPQueue {
		t.Errorf("0 ms queue %d", up.QueueBytes)
	}
	long := Symmetric(11*time.Second, 1e9, 0, 0, 1)
	if _, _, err := long.Configs(); !badinput.Is(err) || !strings.Contains(err.Error(), "longer than the emulator supports") {
		t.Errorf("11 s path: %v", err)
	}
	bad := Symmetric(time.Second, 10, 0, 0, 1)
	if _, _, err := bad.Configs(); !badinput.Is(err) {
		t.Errorf("10 bit/s accepted: %v", err)
	}
}

func TestCheckJudge(t *testing.T) {
	r := CheckResult{RTTs: []time.Duration{200300 * time.Microsecond, 200500 * time.Microsecond}, Goodput: 930e6}
	path := Symmetric(200*time.Millisecond, 1e9, 0, 0, 1)
	v := r.Judge(path)
	if !v.OK() || v.MeanRTT != 200400*time.Microsecond || v.CeilingBps < 940e6 || v.CeilingBps > 942e6 {
		t.Errorf("good path judged %+v", v)
	}
	r.Goodput = 500e6
	if v := r.Judge(path); v.GoodputOK || v.OK() {
		t.Errorf("half the goodput passed: %+v", v)
	}
	// A policed down direction: goodput is not judged, and says why.
	policed := path
	policed.Down.Policer.Policer = linkemu.Policer{RateBps: 1e8, Burst: 1 << 16}
	if v := r.Judge(policed); !v.GoodputOK || v.CeilingBps != 0 || len(v.NotJudged) != 1 || !strings.HasPrefix(v.NotJudged[0], "policer 100 Mbit/s") {
		t.Errorf("policed path judged %+v", v)
	}
	// Reordering 10% of packets by 20 ms each way adds 4 ms to the mean.
	reordered := path
	reordered.Up.Reorder.Reorder = linkemu.Reorder{Share: 0.1, Extra: 20 * time.Millisecond}
	reordered.Down.Reorder = reordered.Up.Reorder
	r.RTTs = []time.Duration{204 * time.Millisecond}
	if v := r.Judge(reordered); !v.RTTOK || v.ExpectedRTT != 204*time.Millisecond {
		t.Errorf("reordered path's RTT judged %+v", v)
	}
	r.RTTs = []time.Duration{203 * time.Millisecond}
	if v := r.Judge(Symmetric(200*time.Millisecond, 0, 0, 0, 1)); v.RTTOK || !v.GoodputOK {
		t.Errorf("3 ms RTT error passed, or unlimited goodput judged: %+v", v)
	}
	// Unlimited: the goodput to expect is what 256 MiB buffers allow at
	// 200 ms (about 5 Gbit/s at the default ratio); a limited link has none.
	unlimited := Symmetric(200*time.Millisecond, 0, 0, 0, 1)
	if v := r.Judge(unlimited); v.WindowBoundBps != pathmodel.WindowCeiling(256<<20*pathmodel.DefaultScalingRatio, 200*time.Millisecond) || v.WindowBoundBps < 4e9 {
		t.Errorf("unlimited link: window bound %.4g bit/s", v.WindowBoundBps)
	}
	if v := r.Judge(path); v.WindowBoundBps != 0 {
		t.Errorf("a limited link has a window bound %.4g", v.WindowBoundBps)
	}
}
