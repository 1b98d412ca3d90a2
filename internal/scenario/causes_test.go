package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/diagnose"
)

func TestExpandCauses(t *testing.T) {
	s, err := Expand("causes", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2*len(failures) || s.Repeat != 10 {
		t.Fatalf("%d cases x %d repeats, want %d x 10 (every failure on two shapes)", len(s.Cases), s.Repeat, 2*len(failures))
	}
	// The terminal's header names every path (cpu-bound's own 1 Gbit/s
	// links among them), not the scenario's default one.
	if got, want := s.PathsLabel(), "4 paths (50 ms / 100 Mbit/s, 50 ms / 1 Gbit/s, 100 ms / 500 Mbit/s, 100 ms / 1 Gbit/s)"; got != want {
		t.Errorf("paths %q, want %q", got, want)
	}
	byID := map[string]Case{}
	for _, c := range s.Cases {
		byID[c.ID] = c
		if c.Kind != KindCauses || c.Truth == "" || c.Path == nil || c.Duration != 8*time.Second {
			t.Errorf("%s: kind %s, truth %q, path %v, duration %v", c.ID, c.Kind, c.Truth, c.Path, c.Duration)
		}
		if len(c.Server) != 2 || c.Server[0].Value != causesBuffer || len(c.Client) != 2 {
			t.Errorf("%s: buffers client %v server %v, want 128 MiB at both ends", c.ID, c.Client, c.Server)
		}
	}
	pol := byID["100ms-500M-policer"]
	if pol.Path.RTT != 100*time.Millisecond || pol.Path.RateBps != 500e6 || strings.Join(pol.Path.Knobs, " ") != "down-policer=250Mbit/s/64KB" {
		t.Errorf("policer at 100 ms x 500 Mbit/s: %+v", pol.Path)
	}
	if n := pol.Notes[0]; n != "emulate --rtt 100ms --rate 500Mbit/s --down-policer 250Mbit/s/64KB" {
		t.Errorf("policer's note %q: want the emulate command that makes its path", n)
	}
	if cpu := byID["50ms-100M-cpu-bound"]; cpu.Path.ServerCPU != 0.01 || cpu.Path.RateBps != 1e9 || cpu.Path.RTT != 50*time.Millisecond {
		t.Errorf("cpu-bound: %+v, want 0.01 of a core on a 1 Gbit/s link at the shape's RTT", cpu.Path)
	}
	if c := byID["50ms-100M-clean"]; c.Truth != Clean || len(c.Path.Knobs) != 0 || c.Path.ServerCPU != 0 {
		t.Errorf("clean: %+v", c)
	}
	// 0.05 BDP in packets, not floored at 100: 21 at 50 ms x 100 Mbit/s
	// (31,250 bytes in packets of 1,538 on the wire), 204 at 100 ms x 500 Mbit/s.
	for id, want := range map[string]string{"50ms-100M-shallow-buffer": "down-queue=21p", "100ms-500M-shallow-buffer": "down-queue=204p"} {
		if got := strings.Join(byID[id].Path.Knobs, " "); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
	if sb := byID["50ms-100M-shared-bottleneck"]; sb.Path.Competing != 1 || len(sb.Path.Knobs) != 0 || !strings.Contains(sb.Notes[0], "1 competing cubic download") {
		t.Errorf("shared bottleneck: %+v %q", sb.Path, sb.Notes)
	}
	if ws := byID["50ms-100M-window-scale-stripped"]; strings.Join(ws.Path.Knobs, " ") != "up-middlebox=wscale=strip" {
		t.Errorf("window scale stripped on the SYN's way: %v", ws.Path.Knobs)
	}

	// Quick: CI's subset on one shape; the user's path makes one shape.
	q, err := Expand("causes", Params{Quick: true, IPv6: true}, facts())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range q.Cases {
		ids = append(ids, c.ID)
		if !c.Path.IPv6 || c.Duration != 4*time.Second {
			t.Errorf("quick %s: IPv6 %v, duration %v", c.ID, c.Path.IPv6, c.Duration)
		}
	}
	if got := strings.Join(ids, " "); got != "50ms-100M-clean 50ms-100M-random-loss 50ms-100M-policer" || q.Repeat != 1 {
		t.Errorf("quick cases %q x %d", got, q.Repeat)
	}
	one, err := Expand("causes", Params{RTT: 200 * time.Millisecond, RateBps: 1e9}, facts())
	if err != nil || len(one.Cases) != len(failures) || one.Cases[0].ID != "200ms-1G-clean" {
		t.Errorf("--rtt 200ms --rate 1Gbit/s: %v, %d cases", err, len(one.Cases))
	}

	for _, p := range []Params{{Loss: 0.01}, {Queue: 1 << 20}, {Duration: time.Second}, {Duration: 2 * time.Minute}} {
		if _, err := Expand("causes", p, facts()); !badinput.Is(err) {
			t.Errorf("causes with %+v: %v, want bad input", p, err)
		}
	}
	if _, err := Expand("buffers", Params{IPv6: true}, facts()); err == nil || !strings.Contains(err.Error(), "causes") {
		t.Errorf("buffers --ipv6: %v, want it refused", err)
	}
}

func TestJudgeCause(t *testing.T) {
	for _, tc := range []struct{ tool, truth, named, want string }{
		{ToolTest, diagnose.CausePolicer, diagnose.CausePolicer, Right},
		{ToolTest, diagnose.CausePolicer, diagnose.CauseShallowBuffer, Wrong},
		{ToolTest, diagnose.CausePolicer, NoCause, Wrong},
		{ToolTest, Clean, NoCause, Right},
		{ToolTest, Clean, diagnose.CauseBufferbloat, Wrong},
		{ToolAnalyze, Clean, diagnose.CauseBufferbloat, Right},
		{ToolFlows, Clean, diagnose.CauseRandomLoss, Wrong},
		{ToolAnalyze, diagnose.CauseWindowScaleStripped, diagnose.FlagNoWindowScaling, Weaker},
		{ToolAnalyze, diagnose.CauseWindowScaleStripped, NoCause, Wrong},
		{ToolTest, diagnose.CauseWindowScaleStripped, diagnose.FlagNoWindowScaling, Wrong},
		{ToolFlows, diagnose.CauseCPUBound, NoCause, Weaker},
		{ToolFlows, diagnose.CauseCPUBound, diagnose.CauseCPUBound, Right},
		{ToolTest, diagnose.CauseCPUBound, NoCause, Wrong},
		{ToolAnalyze, diagnose.CauseReordering, "?", Wrong},
		{ToolAnalyze, diagnose.CausePolicer, diagnose.CauseShallowBuffer, Weaker},
		{ToolFlows, diagnose.CausePolicer, diagnose.CauseRandomLoss, Weaker},
		{ToolAnalyze, diagnose.CausePolicer, diagnose.CauseRandomLoss, Wrong},
		{ToolFlows, diagnose.CauseRandomLoss, diagnose.CausePolicer, Wrong},
		{ToolTest, diagnose.CauseSharedBottleneck, diagnose.CauseSharedBottleneck, Right},
		{ToolTest, diagnose.CauseSharedBottleneck, NoCause, Wrong},
		{ToolAnalyze, diagnose.CauseSharedBottleneck, diagnose.CauseBufferbloat, Weaker},
		{ToolFlows, diagnose.CauseSharedBottleneck, NoCause, Weaker},
		{ToolAnalyze, diagnose.CauseSharedBottleneck, diagnose.CauseShallowBuffer, Wrong},
		{ToolFlows, diagnose.CauseRandomLoss, AtLinkRate, Weaker},
		{ToolFlows, diagnose.CauseRandomLoss, NoCause, Wrong},
		{ToolFlows, Clean, AtLinkRate, Right},
		{ToolFlows, diagnose.CausePolicer, AtLinkRate, Wrong},
		{ToolFlows, diagnose.CauseShallowBuffer, AtLinkRate, Wrong},
	} {
		if got := JudgeCause(tc.tool, tc.truth, tc.named); got != tc.want {
			t.Errorf("JudgeCause(%s, %s, %s) = %s, want %s", tc.tool, tc.truth, tc.named, got, tc.want)
		}
	}
}

// TestCauseNamesAreDiagnoses: every name the matrix expects a tool to
// give (a row's truth, a documented weaker verdict) is one diagnose
// defines, so a name spelled differently here fails instead of never
// matching what the tools print.
func TestCauseNamesAreDiagnoses(t *testing.T) {
	known := append(diagnose.Causes(), diagnose.Flags()...)
	check := func(where, name string) {
		if !slices.Contains(known, name) {
			t.Errorf("%s %q is not a cause or flag diagnose defines", where, name)
		}
	}
	for _, f := range failures {
		if f.name != Clean {
			check("failure", f.name)
		}
	}
	for _, name := range quickFailures {
		if name != Clean {
			check("quick failure", name)
		}
	}
	for k, names := range weaker {
		check("weaker truth", k[1])
		for _, n := range names {
			if n != NoCause && n != AtLinkRate && n != "*" {
				check("weaker verdict of "+k[0]+" for "+k[1], n)
			}
		}
	}
}
