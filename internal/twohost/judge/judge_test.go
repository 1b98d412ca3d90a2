package judge

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/golden"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
	"github.com/longhaul/longhaul/internal/twohost/wire"
)

func TestJudgeNamesHostAndSetting(t *testing.T) {
	small, big := "4096 16384 131072", "4096 131072 33554432"
	rtt := 50 * time.Millisecond
	tests := []struct {
		name         string
		client, serv *snapshot.Snapshot
		phase        PhaseRaw
		verdict      string
		limit        testdoc.Limit
	}{
		{
			name: "server send buffer (kernel counts it)", client: host(big, big), serv: host(big, small),
			phase:   phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 15e6, RTT: rtt, Flight: 94000, SndShare: 0.9, Ssthresh: 1 << 20}),
			verdict: "sndbuf-limited", limit: testdoc.Limit{Host: testdoc.HostServer, Setting: "net.ipv4.tcp_wmem", Value: small},
		},
		{
			// The kernel calls it congestion-window time; flight, RTT and
			// the model say the send buffer.
			name: "server send buffer (hidden as cwnd time)", client: host(big, big), serv: host(big, small),
			phase:   phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 15e6, RTT: rtt, Flight: 110000, Ssthresh: 200000}),
			verdict: "sndbuf-limited", limit: testdoc.Limit{Host: testdoc.HostServer, Setting: "net.ipv4.tcp_wmem", Value: small},
		},
		{
			name: "client receive buffer", client: host(small, big), serv: host(big, big),
			phase:   phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 13e6, RTT: rtt, Flight: 84000, RwndShare: 0.95, Ssthresh: 1 << 20}),
			verdict: "rwnd-limited", limit: testdoc.Limit{Host: testdoc.HostClient, Setting: "net.ipv4.tcp_rmem", Value: small},
		},
		{
			name: "server receive buffer on upload", client: host(big, big), serv: host(small, big),
			phase:   phaseOf(wire.PhaseUpload, stream{Port: 40000, Rate: 13e6, RTT: rtt, Flight: 84000, RwndShare: 0.95, Ssthresh: 1 << 20}),
			verdict: "rwnd-limited", limit: testdoc.Limit{Host: testdoc.HostServer, Setting: "net.ipv4.tcp_rmem", Value: small},
		},
		{
			// At the path's rate a window above the BDP only caps the queue.
			name: "window-bound at the path's rate", client: host(big, big), serv: host(big, big),
			phase:   phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 94e6, RTT: 60 * time.Millisecond, Flight: 700000, RwndShare: 0.7, Ssthresh: 600000}),
			verdict: "rwnd-limited", limit: testdoc.Limit{Host: testdoc.HostPath},
		},
		{
			name: "the path", client: host(big, big), serv: host(big, big),
			phase:   phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 94e6, RTT: 70 * time.Millisecond, Flight: 800000, Ssthresh: 600000}),
			verdict: "bottleneck", limit: testdoc.Limit{Host: testdoc.HostPath},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Judge(rawWith(tc.client, tc.serv, tc.phase), JudgeOptions{RateBps: 100e6})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Directions) != 1 {
				t.Fatalf("%d directions", len(d.Directions))
			}
			dir := d.Directions[0]
			got := testdoc.Limit{Host: dir.Limit.Host, Setting: dir.Limit.Setting, Value: dir.Limit.Value}
			if dir.Flow.Verdict.Verdict != tc.verdict || got != tc.limit {
				t.Errorf("verdict %s, limit %+v; want %s, %+v\n%s", dir.Flow.Verdict.Verdict, got, tc.verdict, tc.limit, dir.Headline)
			}
		})
	}
}

func TestAggregateRate(t *testing.T) {
	// Two streams of 40 and 60 Mbit/s sampled by the same dumps: 100.
	var ss []flows.Sample
	ss = append(ss, stream{Port: 1, Rate: 40e6, RTT: time.Millisecond, Flight: 1}.Samples(4)...)
	ss = append(ss, stream{Port: 2, Rate: 60e6, RTT: time.Millisecond, Flight: 1}.Samples(4)...)
	if got := AggregateRate(ss); got < 99.9e6 || got > 100.1e6 {
		t.Errorf("aggregate %.4g bit/s, want 100 Mbit/s", got)
	}
	if got := AggregateRate(ss[:2]); got != 0 {
		t.Errorf("two samples: %g, want 0 (too few to judge)", got)
	}
}

func TestPathRate(t *testing.T) {
	bott := flows.Flow{ThroughputBps: 90e6}
	bott.Verdict.Verdict = "bottleneck"
	rwnd := flows.Flow{ThroughputBps: 940e6}
	rwnd.Verdict.Verdict = "rwnd-limited"
	loss := flows.Flow{ThroughputBps: 3e6}
	loss.Verdict.Verdict = "loss-limited"
	tests := []struct {
		name   string
		opt    JudgeOptions
		c      *testdoc.Capacity
		judged map[string][]flows.Flow
		want   float64
	}{
		{"--rate is the wire rate", JudgeOptions{RateBps: 1e9}, nil, nil, 1e9 * 1448 / 1538},
		{"capacity beats one stream", JudgeOptions{}, &testdoc.Capacity{Bps: 94e6, Streams: 8}, map[string][]flows.Flow{wire.PhaseDownload: {bott}}, 94e6},
		{"one bottlenecked stream beats buffer-bound streams", JudgeOptions{}, &testdoc.Capacity{Bps: 60e6, Streams: 8, AtLeast: true}, map[string][]flows.Flow{wire.PhaseUpload: {bott}}, 90e6},
		{"one window-bound stream beat the streams together", JudgeOptions{}, &testdoc.Capacity{Bps: 897e6, Streams: 8}, map[string][]flows.Flow{wire.PhaseDownload: {rwnd}}, 940e6},
		{"loss is not the path's rate", JudgeOptions{}, nil, map[string][]flows.Flow{wire.PhaseDownload: {loss}}, 0},
	}
	// Random loss held the single stream: the streams' rate is a lower
	// bound and the best estimate is what they were seen delivering.
	random := map[string]*diagnose.Cause{wire.PhaseDownload: {Name: diagnose.CauseRandomLoss}}
	c := &testdoc.Capacity{Bps: 275e6, PeakBps: 380e6, Streams: 8}
	if got, basis, _ := pathRate(JudgeOptions{}, c, map[string][]flows.Flow{wire.PhaseDownload: {loss}}, random, nil); got != 380e6 || !c.AtLeast || !strings.Contains(basis, "at least 380 Mbit/s") || !strings.Contains(basis, "random-loss") {
		t.Errorf("random loss: %g, %q, at least %v", got, basis, c.AtLeast)
	}
	if got, _, _ := pathRate(JudgeOptions{RateBps: 500e6}, c, nil, random, nil); got != pathmodel.Goodput(500e6) {
		t.Errorf("--rate is the rate whatever held the streams: %g", got)
	}
	// No cause named, 8 cubic streams held by a shallow queue after
	// their slow starts, bbr on one stream far faster: the path carried
	// at least bbr's rate (lab causes at 9f3199a, 100 ms x 500 Mbit/s,
	// shallow buffer run 6: the path reported at 152 Mbit/s).
	held := &testdoc.Capacity{Bps: 152.5e6, Streams: 8}
	bbr := []testdoc.CCPhase{{CC: "bbr", Granted: true, ThroughputBps: 458.8e6}, {CC: "reno", ThroughputBps: 600e6}}
	if got, basis, _ := pathRate(JudgeOptions{}, held, map[string][]flows.Flow{wire.PhaseDownload: {bott}}, nil, bbr); got != 458.8e6 || !strings.Contains(basis, "at least 458.8 Mbit/s") || !strings.Contains(basis, "bbr") {
		t.Errorf("bbr faster than the streams: %g, %q", got, basis)
	}
	pr := probes{otherBps: 458.8e6, paced: []diagnose.PacedRun{{RateBps: 688e6, Bps: 376e6}}}
	if got := pr.pathBps(152.5e6); got != 458.8e6 {
		t.Errorf("a flow is judged at %g, want bbr's 458.8e6 (the streams were held too)", got)
	}
	if got := pr.pathBps(400e6); got != 400e6 {
		t.Errorf("streams near bbr's rate: judged at %g, want theirs", got)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, basis, _ := pathRate(tc.opt, tc.c, tc.judged, nil, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("rate (-want +got):\n%s (basis %q)", diff, basis)
			}
		})
	}
}

// The text of a judged document, pinned (go test -update rewrites it).
func TestWriteTextGolden(t *testing.T) {
	small, big := "4096 16384 131072", "4096 131072 33554432"
	raw := rawWith(host(big, big), host(small, small),
		phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 15e6, RTT: 50 * time.Millisecond, Flight: 94000, SndShare: 0.9, Ssthresh: 1 << 20}),
		phaseOf(wire.PhaseUpload, stream{Port: 40001, Rate: 13e6, RTT: 50 * time.Millisecond, Flight: 84000, RwndShare: 0.95, Ssthresh: 1 << 20}),
		phaseOf(wire.PhaseCapacity, stream{Port: 40002, Rate: 24e6, RTT: 60 * time.Millisecond, Flight: 200000, Ssthresh: 100000},
			stream{Port: 40003, Rate: 23e6, RTT: 60 * time.Millisecond, Flight: 200000, Ssthresh: 100000},
			stream{Port: 40004, Rate: 24e6, RTT: 60 * time.Millisecond, Flight: 200000, Ssthresh: 100000},
			stream{Port: 40005, Rate: 23e6, RTT: 60 * time.Millisecond, Flight: 200000, Ssthresh: 100000}))
	d, err := Judge(raw, JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	testdoc.WriteText(&b, d)
	file := filepath.Join("testdata", "text.golden")
	if diff := cmp.Diff(string(golden.Read(t, file, b.Bytes())), b.String()); diff != "" {
		t.Errorf("text differs from %s (-want +got; go test -update after review):\n%s", file, diff)
	}
}

// Under a millisecond of round trip (loopback, a LAN) the hosts set the
// rate: a flow read as in slow start, or held by a buffer whose flight
// per round trip is far above the rate, is not "the test: run longer"
// nor a buffer, and no plans are made for a 0 s path. A tiny buffer
// that does hold the flow is still named.
func TestJudgeSubMillisecondPath(t *testing.T) {
	big := "4096 131072 33554432"
	us := time.Microsecond
	for _, tc := range []struct {
		name      string
		st        stream
		host, has string
	}{
		{"slow start at 18 Gbit/s", stream{Port: 40000, Rate: 18e9, RTT: 40 * us, Flight: 2_400_000}, testdoc.HostServer, "nothing to tune"},
		{"sndbuf at 18 Gbit/s", stream{Port: 40000, Rate: 18e9, RTT: 40 * us, Flight: 2_400_000, SndShare: 0.95, Ssthresh: 1 << 20}, testdoc.HostServer, "nothing to tune"},
		{"a 4 kB window", stream{Port: 40000, Rate: 70e6, RTT: 400 * us, Flight: 4000, RwndShare: 0.95, Ssthresh: 1 << 20}, testdoc.HostClient, "tcp_rmem"},
		{"a 1.2 MB window at 25 Gbit/s", stream{Port: 40000, Rate: 25e9, RTT: 45 * us, Flight: 1_220_000, RwndShare: 0.98, Ssthresh: 1 << 20}, testdoc.HostServer, "nothing to tune"},
	} {
		raw := rawWith(host(big, big), host(big, big), phaseOf(wire.PhaseDownload, tc.st))
		raw.IdleRTTs = []time.Duration{tc.st.RTT}
		d, err := Judge(raw, JudgeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l := d.Directions[0].Limit
		if l.Host != tc.host || !strings.Contains(l.Text, tc.has) {
			t.Errorf("%s: limit %+v (verdict %s); want %s, %q", tc.name, l, d.Directions[0].Flow.Verdict.Verdict, tc.host, tc.has)
		}
		// One answer: the fix line does not size a buffer the limit says
		// limits nothing.
		if fix := strings.Join(d.Fix, "\n"); tc.has == "nothing to tune" && (strings.Contains(fix, "raise") || !strings.Contains(fix, "nothing to tune")) {
			t.Errorf("%s: limit says nothing to tune, fix lines %q", tc.name, fix)
		}
		if d.Plans != nil || !strings.Contains(strings.Join(d.Notes, "\n"), "too short a path") {
			t.Errorf("%s: plans %v, notes %q; want none, saying why", tc.name, d.Plans != nil, d.Notes)
		}
	}
}

// Losses while the flow ran at the path's rate (--rate) were the
// bottleneck's queue overflowing: the path is named as filled, not as
// losing packets; below that rate, with the round trip at its minimum
// all along (no queue), the losses are random loss, named with its fix.
func TestJudgeLossAtThePathsRate(t *testing.T) {
	big := "4096 131072 33554432"
	for _, tc := range []struct {
		rate float64
		has  string
	}{{94e6, "queue overflowing"}, {40e6, "random loss"}} {
		st := stream{Port: 40000, Rate: tc.rate, RTT: 50 * time.Millisecond, Flight: 600_000, Ssthresh: 1 << 20, LossEvery: 1}
		d, err := Judge(rawWith(host(big, big), host(big, big), phaseOf(wire.PhaseDownload, st)), JudgeOptions{RateBps: 100e6})
		if err != nil {
			t.Fatal(err)
		}
		dir := d.Directions[0]
		if dir.Flow.Verdict.Verdict != "loss-limited" || dir.Limit.Host != testdoc.HostPath || !strings.Contains(dir.Limit.Text, tc.has) {
			t.Errorf("at %.0f bit/s: verdict %s, limit %+v; want loss-limited, the path, %q", tc.rate, dir.Flow.Verdict.Verdict, dir.Limit, tc.has)
		}
		if c := dir.Cause; tc.rate < 90e6 && (c == nil || c.Name != diagnose.CauseRandomLoss || !strings.Contains(dir.Flow.Fix, "network: find the link")) {
			t.Errorf("at %.0f bit/s: cause %+v, fix %q", tc.rate, c, dir.Flow.Fix)
		}
	}
}

// A download run with bbr asked of the server (--cc-phase bbr) is judged
// apart: it does not replace the plain download, the random-loss cause
// quotes what it carried, and the path's rate is at least that; a server
// that did not switch is said to have sent with its default.
func TestJudgeCCPhase(t *testing.T) {
	big := "4096 131072 33554432"
	lossy := stream{Port: 40000, Rate: 40e6, RTT: 50 * time.Millisecond, Flight: 250_000, Ssthresh: 200_000, LossEvery: 1}
	fast := stream{Port: 40001, Rate: 94e6, RTT: 50 * time.Millisecond, Flight: 600_000, Ssthresh: 1 << 20}
	for _, granted := range []bool{true, false} {
		bbr := phaseOf(wire.PhaseDownload, fast)
		bbr.Grant.Phase, bbr.AskedCC = 2, "bbr"
		if granted {
			bbr.Grant.CC = "bbr"
		}
		d, err := Judge(rawWith(host(big, big), host(big, big), phaseOf(wire.PhaseDownload, lossy), bbr), JudgeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Directions) != 1 || d.Directions[0].ThroughputBps > 50e6 {
			t.Fatalf("granted %v: the bbr phase replaced the download: %+v", granted, d.Directions)
		}
		if len(d.CCPhases) != 1 || d.CCPhases[0].CC != "bbr" || d.CCPhases[0].Granted != granted || d.CCPhases[0].ThroughputBps < 90e6 {
			t.Fatalf("granted %v: cc phases %+v", granted, d.CCPhases)
		}
		c := d.Directions[0].Cause
		if c == nil || c.Name != diagnose.CauseRandomLoss {
			t.Fatalf("granted %v: cause %+v (verdict %s)", granted, c, d.Directions[0].Flow.Verdict.Verdict)
		}
		if quoted := strings.Contains(c.Text, "with bbr the server carried"); quoted != granted {
			t.Errorf("granted %v: cause text %q", granted, c.Text)
		}
		var txt bytes.Buffer
		testdoc.WriteText(&txt, d)
		want := "download (bbr)"
		if !granted {
			want = "the server sent with its default"
		}
		if !strings.Contains(txt.String(), want) {
			t.Errorf("granted %v: text lacks %q:\n%s", granted, want, txt.String())
		}
	}
}

// A test that ran with clamped segments after the server's first large
// message never arrived names a PMTU black hole for the whole path, with
// its fix line first.
func TestJudgeBlackHole(t *testing.T) {
	big := "4096 131072 33554432"
	raw := rawWith(host(big, big), host(big, big), phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 90e6, RTT: 50 * time.Millisecond, Flight: 600_000, Ssthresh: 1 << 20}))
	raw.BlackHoleMSS = 1200
	d, err := Judge(raw, JudgeOptions{RateBps: 100e6})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Causes) != 1 || d.Causes[0].Name != diagnose.CausePMTUBlackHole || d.Causes[0].Numbers["mss_that_passed"] != 1200 {
		t.Fatalf("causes %+v", d.Causes)
	}
	if len(d.Fix) == 0 || !strings.HasPrefix(d.Fix[0], "fix for the path (pmtu-black-hole): network: let ICMP") || !strings.Contains(d.Fix[0], "net.ipv4.tcp_mtu_probing=1") {
		t.Errorf("fix %q", d.Fix)
	}
	var txt bytes.Buffer
	testdoc.WriteText(&txt, d)
	if !strings.Contains(txt.String(), "path: a PMTU black hole") {
		t.Errorf("text:\n%s", txt.String())
	}
	// The server (the sender) is planned tcp_mtu_probing=1; the client,
	// whose direction was not found at fault, is not.
	has := func(items []plan.Item) bool {
		return slices.ContainsFunc(items, func(it plan.Item) bool { return it.Key == "net.ipv4.tcp_mtu_probing" && it.New == "1" })
	}
	if d.Plans == nil || !has(d.Plans.Server.Items) || has(d.Plans.Client.Items) {
		t.Errorf("plans %+v", d.Plans)
	}
	// Without the clamp, nothing.
	raw.BlackHoleMSS = 0
	if d, _ := Judge(raw, JudgeOptions{RateBps: 100e6}); len(d.Causes) != 0 {
		t.Errorf("causes %+v", d.Causes)
	}
}

// Paced loss probes are kept apart from the download, print in the
// table, and a run that fell short of its pace without a queue names a
// policer at the most any run carried, which is then the path's rate.
func TestJudgePacedPolicer(t *testing.T) {
	big := "4096 131072 33554432"
	rtt := 50 * time.Millisecond
	// Bursty losses: 10 segments at a time, every second.
	down := phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 15e6, RTT: rtt, Flight: 94_000, Ssthresh: 90_000, LossEvery: 10})
	held := phaseOf(wire.PhaseDownload, stream{Port: 40001, Rate: 30e6, RTT: rtt, Flight: 190_000, Ssthresh: 1 << 20})
	held.Grant.Phase, held.Grant.RateBps, held.AskedPace = 2, 30e6, 30e6
	short := phaseOf(wire.PhaseDownload, stream{Port: 40002, Rate: 42e6, RTT: rtt, Flight: 260_000, Ssthresh: 250_000, LossEvery: 4})
	short.Grant.Phase, short.Grant.RateBps, short.AskedPace = 3, 60e6, 60e6
	d, err := Judge(rawWith(host(big, big), host(big, big), down, held, short), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Directions) != 1 || len(d.PacedPhases) != 2 || d.PacedPhases[1].GrantedRateBps != 60e6 || d.PacedPhases[1].LossRate <= 0 {
		t.Fatalf("directions %d, paced %+v", len(d.Directions), d.PacedPhases)
	}
	c := d.Directions[0].Cause
	if c == nil || c.Name != diagnose.CausePolicer {
		t.Fatalf("cause %+v (verdict %s)", c, d.Directions[0].Flow.Verdict.Verdict)
	}
	if r := c.Numbers["policer_bps"]; r < 40e6 || r > 44e6 || d.PathRateBps != r {
		t.Errorf("policer %.4g, path rate %.4g (%s)", r, d.PathRateBps, d.PathRateBasis)
	}
	var txt bytes.Buffer
	testdoc.WriteText(&txt, d)
	if !strings.Contains(txt.String(), "download (paced 60 Mbit/s)") {
		t.Errorf("text:\n%s", txt.String())
	}
}

// A download pinned at 64 KB without window scaling: both hosts allow
// scaling, so a middlebox stripped it (the path's cause, the network's
// fix); with scaling off on the client, the client's setting.
func TestJudgeWindowScaling(t *testing.T) {
	big := "4096 131072 33554432"
	st := stream{Port: 40000, Rate: 10.4e6, RTT: 50 * time.Millisecond, Flight: 65_535, RwndShare: 0.95, Ssthresh: 1 << 20, Unscaled: true}
	d, err := Judge(rawWith(host(big, big), host(big, big), phaseOf(wire.PhaseDownload, st)), JudgeOptions{RateBps: 100e6})
	if err != nil {
		t.Fatal(err)
	}
	dir := d.Directions[0]
	if dir.Cause == nil || dir.Cause.Name != diagnose.CauseWindowScaleStripped || dir.Limit.Host != testdoc.HostPath || !strings.HasPrefix(dir.Flow.Fix, "network: let the TCP window scale option") {
		t.Fatalf("verdict %s cause %+v limit %+v fix %q", dir.Flow.Verdict.Verdict, dir.Cause, dir.Limit, dir.Flow.Fix)
	}
	off := host(big, big)
	off.Sysctls["net.ipv4.tcp_window_scaling"] = "0"
	d, err = Judge(rawWith(off, host(big, big), phaseOf(wire.PhaseDownload, st)), JudgeOptions{RateBps: 100e6})
	if err != nil {
		t.Fatal(err)
	}
	dir = d.Directions[0]
	if dir.Cause != nil || dir.Limit.Host != testdoc.HostClient || dir.Limit.Setting != "net.ipv4.tcp_window_scaling" || !strings.Contains(dir.Flow.Fix, "net.ipv4.tcp_window_scaling: 0 -> 1") {
		t.Errorf("cause %+v limit %+v fix %q", dir.Cause, dir.Limit, dir.Flow.Fix)
	}
}

// A download held by the server's application while the server's process
// waited for a CPU most of the phase: the server's CPU, its fix first; a
// server that did not measure its CPU leaves the verdict as it was.
func TestJudgeCPUBound(t *testing.T) {
	big := "4096 131072 33554432"
	app := stream{Port: 40000, Rate: 20e6, RTT: 50 * time.Millisecond, Flight: 20_000, Ssthresh: 1 << 20}
	p := phaseOf(wire.PhaseDownload, app)
	// Busy a fifth of each interval: the rest the application left idle.
	for i := range p.Server {
		p.Server[i].Sock.Busy = p.Server[i].Sock.Busy / 5
	}
	p.Done.Seconds, p.Done.CPU = 4, &testdoc.CPUUse{RunS: 0.8, WaitS: 3}
	d, err := Judge(rawWith(host(big, big), host(big, big), p), JudgeOptions{RateBps: 100e6})
	if err != nil {
		t.Fatal(err)
	}
	dir := d.Directions[0]
	if dir.Flow.Verdict.Verdict != diagnose.AppLimited || dir.Cause == nil || dir.Cause.Name != diagnose.CauseCPUBound ||
		dir.Limit.Host != testdoc.HostServer || !strings.HasPrefix(dir.Flow.Fix, "sender: give the server's process more CPU") {
		t.Fatalf("verdict %s cause %+v limit %+v fix %q", dir.Flow.Verdict.Verdict, dir.Cause, dir.Limit, dir.Flow.Fix)
	}
	if d.Phases[0].ServerCPU == nil || d.Phases[0].ServerCPU.WaitS != 3 {
		t.Errorf("phase record cpu %+v", d.Phases[0].ServerCPU)
	}
	p.Done.CPU = nil
	d, _ = Judge(rawWith(host(big, big), host(big, big), p), JudgeOptions{RateBps: 100e6})
	if dir := d.Directions[0]; dir.Cause != nil || dir.Limit.Host != testdoc.HostServer {
		t.Errorf("without cpu: cause %+v limit %+v", dir.Cause, dir.Limit)
	}
}

// A capacity phase whose server was CPU-bound measured a lower bound.
func TestJudgeCapacityCPUBound(t *testing.T) {
	big := "4096 131072 33554432"
	s := func(port uint16) stream {
		return stream{Port: port, Rate: 40e6, RTT: 20 * time.Millisecond, Flight: 300_000, Ssthresh: 200_000}
	}
	p := phaseOf(wire.PhaseCapacity, s(40001), s(40002), s(40003), s(40004))
	p.Done.Seconds, p.Done.CPU = 4, &testdoc.CPUUse{RunS: 0.04, WaitS: 6.8}
	d, err := Judge(rawWith(host(big, big), host(big, big), p), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Capacity; c == nil || c.CPUBound != testdoc.HostServer || !c.AtLeast || !strings.Contains(d.PathRateBasis, "the server's CPU held them") {
		t.Errorf("capacity %+v, basis %q", d.Capacity, d.PathRateBasis)
	}
	// The download held by the same CPU, at about what the capacity phase
	// carried (bench-causes' cpu-bound case: 196 Mbit/s both): still the
	// server's CPU, not "at the path's rate".
	dl := phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 160e6, RTT: 20 * time.Millisecond, Flight: 300_000, Ssthresh: 200_000})
	for i := range dl.Server {
		dl.Server[i].Sock.Busy = dl.Server[i].Sock.Busy / 5
	}
	dl.Done.Seconds, dl.Done.CPU = 4, &testdoc.CPUUse{RunS: 0.08, WaitS: 7}
	d, err = Judge(rawWith(host(big, big), host(big, big), dl, p), JudgeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range d.Directions {
		if dir.Name == wire.PhaseDownload && (dir.Cause == nil || dir.Cause.Name != diagnose.CauseCPUBound) {
			t.Errorf("download at the CPU-bound capacity's rate: cause %+v (capacity %+v)", dir.Cause, d.Capacity)
		}
	}
}

// A download at the path's rate on a path that loses at random: the
// paced run under it fell short, losing, with no queue (measured: 0.01%
// on 50 ms x 100 Mbit/s, the download at 91.4 of 91.9 Mbit/s, paced at
// 70.5 it carried 26.2). Random loss did not hold the download: it is
// seen, not its cause.
func TestJudgeRandomLossSeenAtThePathsRate(t *testing.T) {
	big := "4096 131072 33554432"
	rtt := 50 * time.Millisecond
	down := phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 92e6, RTT: rtt, Flight: 600_000, Ssthresh: 1 << 20})
	short := phaseOf(wire.PhaseDownload, stream{Port: 40001, Rate: 26e6, RTT: rtt, Flight: 160_000, Ssthresh: 150_000, LossEvery: 1})
	short.Grant.Phase, short.Grant.RateBps, short.AskedPace = 2, 70e6, 70e6
	d, err := Judge(rawWith(host(big, big), host(big, big), down, short), JudgeOptions{RateBps: 100e6})
	if err != nil {
		t.Fatal(err)
	}
	dir := d.Directions[0]
	if dir.Cause != nil || len(dir.Seen) != 1 || dir.Seen[0].Name != diagnose.CauseRandomLoss || dir.Seen[0].Numbers["paced_bps"] != 70e6 {
		t.Fatalf("verdict %s, cause %+v, seen %+v", dir.Flow.Verdict.Verdict, dir.Cause, dir.Seen)
	}
	var txt bytes.Buffer
	testdoc.WriteText(&txt, d)
	if !strings.Contains(txt.String(), "also seen: random loss: paced at 70 Mbit/s") {
		t.Errorf("text:\n%s", txt.String())
	}
	// A paced run that held its pace: nothing seen.
	held := phaseOf(wire.PhaseDownload, stream{Port: 40001, Rate: 70e6, RTT: rtt, Flight: 440_000, Ssthresh: 1 << 20})
	held.Grant.Phase, held.Grant.RateBps, held.AskedPace = 2, 70e6, 70e6
	if d, _ := Judge(rawWith(host(big, big), host(big, big), down, held), JudgeOptions{RateBps: 100e6}); len(d.Directions[0].Seen) != 0 || d.Directions[0].Cause != nil {
		t.Errorf("held pace: cause %+v, seen %+v", d.Directions[0].Cause, d.Directions[0].Seen)
	}
}

// The bufferbloat flag reads the RTT under load over the phase's second
// half, not the last sample's: cubic filling the bottleneck's own
// one-BDP queue passes twice the minimum only at the top of a cycle
// (the last sample of a clean 50 ms run did, and the run was flagged),
// while a deep queue holds the RTT there.
func TestJudgeBloatFlagOverTheHalf(t *testing.T) {
	big := "4096 131072 33554432"
	for _, tc := range []struct {
		name     string
		low, top time.Duration // the sawtooth's smoothed RTT; the last sample is at its top
		flagged  bool
	}{
		{"one-BDP queue", 65 * time.Millisecond, 103 * time.Millisecond, false},
		{"eight-BDP queue", 250 * time.Millisecond, 450 * time.Millisecond, true},
	} {
		st := stream{Port: 40000, Rate: 94e6, RTT: 50 * time.Millisecond, Flight: 1_200_000, Ssthresh: 1 << 20}
		p := phaseOf(wire.PhaseDownload, st)
		n := len(p.Server)
		for i := range p.Server {
			// cycles of 10 samples rising from low to top, the last at the top
			back := time.Duration((n - 1 - i) % 10)
			p.Server[i].Sock.RTT = tc.top - (tc.top-tc.low)*back/9
		}
		if last := p.Server[n-1].Sock.RTT; last != tc.top {
			t.Fatalf("%s: the last sample's RTT %v, want the top %v", tc.name, last, tc.top)
		}
		d, err := Judge(rawWith(host(big, big), host(big, big), p), JudgeOptions{RateBps: 100e6})
		if err != nil {
			t.Fatal(err)
		}
		fl := d.Directions[0].Flow.Verdict.Flags
		if got := slices.Contains(fl, diagnose.FlagBufferbloat); got != tc.flagged {
			t.Errorf("%s: flags %v, bufferbloat %v, want %v", tc.name, fl, got, tc.flagged)
		}
	}
}

// A shared bottleneck needs its queue to the end of the download: random
// loss on a one-BDP drop-tail queue held one stream at 62 of 94 Mbit/s
// after slow start had filled the queue (lab, 50 ms x 100 Mbit/s, 0.01%:
// the pings +40 ms early, +0.3 ms over the second half), and was named a
// shared bottleneck from the whole download's median; another user's
// download keeps the queue standing to the end.
func TestJudgeSharedNeedsTheQueueToTheEnd(t *testing.T) {
	big := "4096 131072 33554432"
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name   string
		late   time.Duration // the pings of the second half
		shared bool
	}{{"slow start's queue", ms(50.3), false}, {"a queue to the end", ms(63), true}} {
		p := phaseOf(wire.PhaseDownload, stream{Port: 40000, Rate: 60e6, RTT: 50 * time.Millisecond, Flight: 400_000, Ssthresh: 300_000, LossEvery: 1})
		p.LoadedRTTs = []time.Duration{ms(90), ms(95), ms(92), ms(88), ms(70), ms(56)}
		for range 5 {
			p.LoadedRTTs = append(p.LoadedRTTs, tc.late)
		}
		d, err := Judge(rawWith(host(big, big), host(big, big), p), JudgeOptions{RateBps: 100e6})
		if err != nil {
			t.Fatal(err)
		}
		c := d.Directions[0].Cause
		if got := c != nil && c.Name == diagnose.CauseSharedBottleneck; got != tc.shared {
			t.Errorf("%s: cause %+v, want shared-bottleneck %v", tc.name, c, tc.shared)
		}
	}
}
