package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/badinput"
	"github.com/longhaul/longhaul/internal/linkemu"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/sysconf"
	"github.com/longhaul/longhaul/internal/sysctl"
)

// facts is a host like this lab machine: tcp_rmem max 32 MiB, tcp_wmem
// max 4 MiB, so that longhaul's plan raises both for a long fat path.
func facts() Facts {
	snap := &snapshot.Snapshot{Source: "test", PageSize: 4096, MemTotal: 24 << 30,
		Kernel: sysconf.Kernel{Release: "6.18.0", Major: 6, Minor: 18},
		Sysctls: map[string]string{
			"net.ipv4.tcp_rmem": "4096 131072 33554432", "net.ipv4.tcp_wmem": "4096 16384 4194304",
			"net.core.rmem_max": "4194304", "net.core.wmem_max": "4194304",
			"net.ipv4.tcp_slow_start_after_idle": "1", "net.ipv4.tcp_mem": "6174336 8232448 12348672",
		}}
	f, err := FactsFrom(snap, results.Host{Hostname: "test"})
	if err != nil {
		panic(err)
	}
	return f
}

// planned is longhaul plan's namespace value of key for the path.
func planned(t *testing.T, f Facts, rtt time.Duration, rate float64, key string) string {
	t.Helper()
	set, _, err := f.PlanSysctls(rtt, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	return setting(set, key)
}

func ids(s *Scenario) []string {
	var out []string
	for _, c := range s.Cases {
		out = append(out, c.ID)
	}
	return out
}

func setting(list []sysctl.Setting, key string) string {
	for _, s := range list {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

func TestExpandBuffers(t *testing.T) {
	s, err := Expand("buffers", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if s.RTT != 200*time.Millisecond || s.RateBps != 1e9 || s.Repeat != 3 || s.CC != "cubic" {
		t.Errorf("defaults: rtt %v rate %g repeat %d cc %q", s.RTT, s.RateBps, s.Repeat, s.CC)
	}
	// 14 sizes x 3 sides + 3 profiles.
	if len(s.Cases) != 14*3+3 {
		t.Fatalf("%d cases, want 45: %v", len(s.Cases), ids(s))
	}
	byID := map[string]Case{}
	for _, c := range s.Cases {
		byID[c.ID] = c
		if c.Kind != KindDownload || c.Duration != 12*time.Second {
			t.Errorf("%s: kind %s duration %v", c.ID, c.Kind, c.Duration)
		}
	}
	// The sweep covers 4 KB to 1 GB, as in the seed.
	if c := byID["both-4K"]; setting(c.Client, "net.ipv4.tcp_rmem") != "4096 4096 4096" || c.X != 4096 {
		t.Errorf("both-4K: %+v", c)
	}
	if c := byID["both-1G"]; setting(c.Server, "net.ipv4.tcp_wmem") != "4096 16384 1073741824" {
		t.Errorf("both-1G: %+v", c)
	}
	// Client-only sets only the client; server-only only the server.
	if c := byID["client-64M"]; len(c.Server) != 0 || setting(c.Client, "net.ipv4.tcp_rmem") != "4096 131072 67108864" {
		t.Errorf("client-64M: %+v", c)
	}
	if c := byID["server-64M"]; len(c.Client) != 0 || setting(c.Server, "net.ipv4.tcp_wmem") != "4096 16384 67108864" {
		t.Errorf("server-64M: %+v", c)
	}
	if c := byID["old-ubuntu"]; setting(c.Client, "net.ipv4.tcp_rmem") != "4096 131072 6291456" || setting(c.Server, "net.ipv4.tcp_wmem") != "4096 16384 4194304" {
		t.Errorf("old-ubuntu: %+v", c)
	}
	if c := byID["host"]; setting(c.Client, "net.ipv4.tcp_rmem") != "4096 131072 33554432" {
		t.Errorf("host: %+v", c)
	}
	wantR, wantW := planned(t, facts(), 200*time.Millisecond, 1e9, "net.ipv4.tcp_rmem"), planned(t, facts(), 200*time.Millisecond, 1e9, "net.ipv4.tcp_wmem")
	rmax, _ := sysctl.ParseTriple(wantR)
	if c := byID["plan"]; wantW == "" || c.X != float64(rmax.Max) || setting(c.Server, "net.ipv4.tcp_wmem") != wantW || setting(c.Client, "net.ipv4.tcp_rmem") != wantR {
		t.Errorf("plan: %+v", c)
	}
	var tcpinfo results.Chart
	for _, ch := range s.Charts {
		if ch.Kind == "tcpinfo" {
			tcpinfo = ch
		}
	}
	if tcpinfo.Case != "plan" || tcpinfo.End != "server" {
		t.Errorf("tcpinfo chart draws %q at %q, want plan at server", tcpinfo.Case, tcpinfo.End)
	}
	if s.Charts[0].Marks[0].X < 23e6 || s.Charts[0].Marks[0].X > 24e6 {
		t.Errorf("BDP mark at %g, want 941.5 Mbit/s x 200 ms = 23.5 MB", s.Charts[0].Marks[0].X)
	}

	q, err := Expand("buffers", Params{Quick: true}, facts())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"both-256K", "both-4M", "both-16M", "both-64M", "old-ubuntu", "host", "plan"}
	if !slices.Equal(ids(q), want) || q.Repeat != 1 || q.Cases[0].Duration != 8*time.Second {
		t.Errorf("quick: %v repeat %d duration %v", ids(q), q.Repeat, q.Cases[0].Duration)
	}
	// Under ten minutes including set-up, for make demo and CI.
	if est := q.Estimate(); est > 2*time.Minute {
		t.Errorf("quick estimate %v", est)
	}
	// Without a plan the profile is left out, not faked.
	f := facts()
	f.Snapshot = nil
	np, err := Expand("buffers", Params{Quick: true}, f)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(np), "plan") {
		t.Error("plan case without a plan")
	}
}

func TestExpandInitcwnd(t *testing.T) {
	s, err := Expand("initcwnd", Params{Quick: true}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if s.RTT != 50*time.Millisecond || s.Repeat != 3 {
		t.Errorf("rtt %v repeat %d", s.RTT, s.Repeat)
	}
	var has17 bool
	for _, c := range s.Cases {
		if c.Kind != KindObject {
			t.Errorf("%s: kind %s", c.ID, c.Kind)
		}
		if c.Bytes == 17000 && c.InitCwnd == 20 && c.InitRwnd == 20 {
			has17 = true
		}
	}
	if !has17 {
		t.Errorf("no 17 kB case with initcwnd 20 / initrwnd 20: %v", ids(s))
	}
	full, err := Expand("initcwnd", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Cases) != 9*4 || full.Cases[0].Bytes != 1000 || full.Cases[8].Bytes != 1000000 {
		t.Errorf("full: %v", ids(full))
	}
}

func TestExpandLongRTT(t *testing.T) {
	s, err := Expand("longrtt", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if s.RTT != 411*time.Millisecond || s.RateBps != 20e6 {
		t.Errorf("path %v %g", s.RTT, s.RateBps)
	}
	byID := map[string]Case{}
	for _, c := range s.Cases {
		byID[c.ID] = c
	}
	if c := byID["w640k-P4"]; c.Window != 640*1024 || c.Streams != 4 || c.Kind != KindIperf {
		t.Errorf("w640k-P4: %+v", c)
	}
	// -w above rmem_max: twice the host's 4 MiB.
	if c := byID["wbig-P1"]; c.Window != 8<<20 || !strings.Contains(c.Notes[0], "clamps") {
		t.Errorf("wbig-P1: %+v", c)
	}
	if len(s.Cases) != 5*3 {
		t.Errorf("%d cases: %v", len(s.Cases), ids(s))
	}
}

func TestExpandUpload(t *testing.T) {
	s, err := Expand("upload", Params{Quick: true}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(s); !slices.Equal(got, []string{"rcvbuf-small", "default"}) {
		t.Errorf("quick cases %v", got)
	}
	if c := s.Cases[0]; c.RcvBuf != 2920 || c.Bytes != 605000 || !c.Capture || c.Kind != KindUpload {
		t.Errorf("small: %+v", c)
	}
	if s.Charts[1].End != "client" {
		t.Errorf("upload tcpinfo end %q, want client (the sender)", s.Charts[1].End)
	}
}

func TestExpandParams(t *testing.T) {
	s, err := Expand("buffers", Params{RTT: 100 * time.Millisecond, RateBps: 500e6, Repeat: 5, CC: "bbr", Queue: 1 << 20, Duration: 6 * time.Second}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if s.RTT != 100*time.Millisecond || s.RateBps != 500e6 || s.Repeat != 5 || s.CC != "bbr" || s.Queue != 1<<20 || s.Cases[0].Duration != 6*time.Second {
		t.Errorf("params not applied: %+v", s)
	}
	d, err := Expand("buffers", Params{}, facts())
	if err != nil {
		t.Fatal(err)
	}
	if d.Queue != linkemu.BDPQueue(1, 1e9, 200*time.Millisecond) {
		t.Errorf("default queue %d, want one BDP", d.Queue)
	}
}

func TestExpandBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		scenario string
		p        Params
		want     string
	}{
		"unknown scenario":     {"speedtest", Params{}, `unknown scenario "speedtest" (have: buffers, initcwnd, longrtt, upload, emulator, causes)`},
		"rtt too long":         {"buffers", Params{RTT: 10 * time.Second}, "rtt 10s out of range"},
		"rate too high":        {"buffers", Params{RateBps: 100e9}, "rate 100 Gbit/s out of range"},
		"loss 60%":             {"upload", Params{Loss: 0.6}, "loss 60% out of range"},
		"repeat 1000":          {"upload", Params{Repeat: 1000}, "repeat 1000 out of range"},
		"queue below a packet": {"upload", Params{Queue: 1000}, "smaller than one packet"},
		"duration too short":   {"buffers", Params{Duration: 3 * time.Second}, "too short for a 200ms path"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Expand(tc.scenario, tc.p, facts())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !badinput.Is(err) {
				t.Errorf("err = %v, want bad input (exit 2)", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	s, _ := Expand("buffers", Params{}, facts())
	if err := Filter(s, []string{"both-*M", "plan"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"both-1M", "both-2M", "both-4M", "both-8M", "both-16M", "both-32M", "both-64M", "both-128M", "both-256M", "plan"}
	if !slices.Equal(ids(s), want) {
		t.Errorf("filtered %v, want %v", ids(s), want)
	}
	if err := Filter(s, []string{"nothing*"}); err == nil || !badinput.Is(err) || !strings.Contains(err.Error(), "matches none") {
		t.Errorf("no match: %v", err)
	}
	if err := Filter(s, []string{"[bad"}); err == nil || !badinput.Is(err) {
		t.Errorf("bad glob: %v", err)
	}
}

// A case is named by its id or by the label the tables print, in any
// case; a miss lists both (issue 53).
func TestFilterByLabel(t *testing.T) {
	s, _ := Expand("buffers", Params{}, facts())
	label := s.Cases[0].Label
	if label == "" || label == s.Cases[0].ID {
		t.Fatalf("case %q has no label of its own", s.Cases[0].ID)
	}
	if err := Filter(s, []string{strings.ToUpper(label), "PLAN"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{s.Cases[0].ID, "plan"}; !slices.Equal(ids(s), want) {
		t.Errorf("filtered %v, want %v", ids(s), want)
	}
	s, _ = Expand("buffers", Params{}, facts())
	err := Filter(s, []string{"nothing"})
	if err == nil || !strings.Contains(err.Error(), "one of: ") || !strings.Contains(err.Error(), s.Cases[0].ID+" ("+label+")") {
		t.Errorf("a miss does not list ids and names: %v", err)
	}
}

func TestOverlay(t *testing.T) {
	base := []sysctl.Setting{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}
	got := overlay(base, []sysctl.Setting{{Key: "b", Value: "3"}, {Key: "c", Value: "4"}})
	want := []sysctl.Setting{{Key: "a", Value: "1"}, {Key: "b", Value: "3"}, {Key: "c", Value: "4"}}
	if !slices.Equal(got, want) || base[1].Value != "2" {
		t.Errorf("overlay = %v (base %v)", got, base)
	}
	// The user's extra sysctls never collide with a case's own.
	s, err := Expand("buffers", Params{Quick: true, ClientSysctls: []sysctl.Setting{{Key: "net.ipv4.tcp_rmem", Value: "1 2 3"}, {Key: "net.ipv4.tcp_sack", Value: "0"}}}, facts())
	if err != nil {
		t.Fatal(err)
	}
	c := s.Cases[0]
	if len(c.Client) != 3 || setting(c.Client, "net.ipv4.tcp_rmem") != "4096 131072 262144" || setting(c.Client, "net.ipv4.tcp_sack") != "0" {
		t.Errorf("client sysctls %v", c.Client)
	}
}

func TestExpandVerify(t *testing.T) {
	planSet := []sysctl.Setting{{Key: "net.ipv4.tcp_rmem", Value: "4096 131072 48234496"}, {Key: "net.ipv4.tcp_slow_start_after_idle", Value: "0"}}
	s, err := ExpandVerify(Params{RTT: 200 * time.Millisecond, RateBps: 1e9}, facts(), planSet, "plan", "old-ubuntu")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(s); !slices.Equal(got, []string{"baseline", "plan"}) || s.Name != "verify" || s.Repeat != 3 {
		t.Fatalf("cases %v name %s repeat %d", got, s.Name, s.Repeat)
	}
	pl := s.Cases[1]
	// The plan's values over the host's (the host after apply), whatever
	// the baseline: tcp_wmem stays the host's.
	if setting(pl.Server, "net.ipv4.tcp_rmem") != "4096 131072 48234496" || setting(pl.Server, "net.ipv4.tcp_wmem") != "4096 16384 4194304" ||
		setting(s.Cases[0].Client, "net.ipv4.tcp_rmem") != "4096 131072 6291456" ||
		setting(pl.Client, "net.ipv4.tcp_slow_start_after_idle") != "0" {
		t.Errorf("plan case %+v", pl)
	}
	if _, err := ExpandVerify(Params{}, facts(), planSet, "plan", "yesterday"); err == nil || !badinput.Is(err) {
		t.Errorf("bad baseline: %v", err)
	}
}
