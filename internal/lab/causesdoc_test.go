package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/longhaul/longhaul/internal/diagnose"
	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/scenario"
)

// The documents of four runs of scripts/bench-causes.sh (100 ms x
// 500 Mbit/s), trimmed to the fields the matrix reads; what each tool
// named is what scripts/causes-row.py reads from the full documents. And
// test's and analyze's documents of a PMTU black hole (lab causes, 50 ms
// x 100 Mbit/s), and a competing download's (lab causes at 17bd68e).
func TestCauseDocuments(t *testing.T) {
	for _, tc := range []struct {
		run, test, analyze, flows string
		single                    float64
	}{
		{"policer-1", diagnose.CauseShallowBuffer, diagnose.CauseShallowBuffer, diagnose.CauseRandomLoss, 7.5e6},
		{"window-scale-stripped-1", diagnose.CauseWindowScaleStripped, diagnose.FlagNoWindowScaling, diagnose.FlagNoWindowScaling, 5.2e6},
		{"clean-1", "-", "-", "-", 400e6},
		{"bufferbloat-1", diagnose.CauseBufferbloat, diagnose.CauseBufferbloat, diagnose.CauseBufferbloat, 400e6},
		{"pmtu-black-hole-1", diagnose.CausePMTUBlackHole, diagnose.CausePMTUBlackHole, "", 0},
		// A competing download (lab causes, 100 ms x 500 Mbit/s): its
		// sender, in the server's namespace too, carried 430 Mbit/s
		// against test's 40 over flows' window; flows reads test's
		// download (loss-limited, no cause: the documented weaker
		// verdict), not the busier competitor (at-link-rate before).
		{"shared-bottleneck-2", diagnose.CauseSharedBottleneck, "-", "-", 50e6},
		// 5% held 30 ms on 50 ms x 100 Mbit/s: test names it the cause;
		// analyze (315 of 51,936 segments late) and flows saw it without
		// it holding the flow (seen), which names the failure too.
		{"reordering-1", diagnose.CauseReordering, diagnose.CauseReordering, diagnose.CauseReordering, 65e6},
	} {
		read := func(suffix string) []byte {
			b, err := os.ReadFile(filepath.Join("testdata", "causes", tc.run+suffix))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		if tc.flows == "" {
			// A black hole: test names it for the whole test (found
			// before the download ran), analyze on the connection that
			// stalled on it (the download ran with small segments).
			named, _, _, port, ok := testNamed(read(".json"))
			if !ok || named != tc.test {
				t.Errorf("%s: test named %q (ok %v), want %q", tc.run, named, ok, tc.test)
			}
			if got, ok := analyzeNamed(read(".analyze.json"), port, 0); !ok || got != tc.analyze {
				t.Errorf("%s: analyze named %q (ok %v), want %q", tc.run, got, ok, tc.analyze)
			}
			continue
		}
		named, single, rate, port, ok := testNamed(read(".json"))
		if !ok || named != tc.test || port != "9978" || rate < single {
			t.Errorf("%s: test named %q (ok %v), single %.3g, path rate %.3g, port %q", tc.run, named, ok, single, rate, port)
		}
		if single < tc.single*0.9 {
			t.Errorf("%s: single stream %.3g bit/s, want at least %.3g", tc.run, single, tc.single*0.9)
		}
		if got, ok := analyzeNamed(read(".analyze.json"), port, 0); !ok || got != tc.analyze {
			t.Errorf("%s: analyze named %q (ok %v), want %q", tc.run, got, ok, tc.analyze)
		}
		if got, ok := flowsNamed(read(".flows.json"), port, 0); !ok || got != tc.flows {
			t.Errorf("%s: flows named %q (ok %v), want %q", tc.run, got, ok, tc.flows)
		}
	}
	// At the link's goodput the competitor (430 of 470 Mbit/s) would pass
	// for a download at the link's rate.
	doc, err := os.ReadFile(filepath.Join("testdata", "causes", "shared-bottleneck-2.flows.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := flowsNamed(doc, "9978", pathmodel.Goodput(500e6)); !ok || got != scenario.NoCause {
		t.Errorf("shared-bottleneck-2 at 500 Mbit/s: flows named %q (ok %v), want %q", got, ok, scenario.NoCause)
	}
	// No verdict in a document that is not one: "?" in the matrix.
	for _, bad := range []string{"", "{", `{"flows": 3}`, `{"directions": [{"name": "upload"}]}`} {
		if _, _, _, _, ok := testNamed([]byte(bad)); ok {
			t.Errorf("testNamed(%q) ok", bad)
		}
		if _, ok := analyzeNamed([]byte(bad), "9978", 94e6); ok {
			t.Errorf("analyzeNamed(%q) ok", bad)
		}
		if _, ok := flowsNamed([]byte(bad), "9978", 94e6); ok {
			t.Errorf("flowsNamed(%q) ok", bad)
		}
	}
}

// flows names nothing over a window where random loss did not hold the
// flow: at 91.2 Mbit/s of the 100 Mbit/s link's 94.1 (a lab run at 0.01%
// and 50 ms, two segments lost in 4 s) that is AtLinkRate; below 90% of
// the link's goodput it stays nothing named, and a cause named stays
// named. A busier socket on another port (a competing download's
// sender) is not test's download.
func TestFlowsNamedAtLinkRate(t *testing.T) {
	doc := func(bps float64, cause string) []byte {
		c := ""
		if cause != "" {
			c = `, "cause": {"name": "` + cause + `"}`
		}
		return []byte(fmt.Sprintf(`{"flows": [
			{"local": "198.18.0.2:9978", "direction": "receive", "bytes_sent": 0, "throughput_bps": 0, "verdict": "app-limited", "flags": []},
			{"local": "198.18.0.2:54098", "direction": "send", "bytes_sent": 215346560, "throughput_bps": 430.3e6, "verdict": "bottleneck", "flags": []},
			{"local": "198.18.0.2:9978", "direction": "send", "bytes_sent": 45627928, "throughput_bps": %g, "verdict": "bottleneck", "flags": []%s}]}`, bps, c))
	}
	link := pathmodel.Goodput(100e6)
	for _, tc := range []struct {
		bps         float64
		cause, want string
		link        float64
	}{
		{91.2e6, "", scenario.AtLinkRate, link},
		{80e6, "", scenario.NoCause, link},
		{91.2e6, "", scenario.NoCause, 0},
		{91.2e6, diagnose.CauseRandomLoss, diagnose.CauseRandomLoss, link},
		{60e6, diagnose.CauseRandomLoss, diagnose.CauseRandomLoss, link},
	} {
		if got, ok := flowsNamed(doc(tc.bps, tc.cause), "9978", tc.link); !ok || got != tc.want {
			t.Errorf("flows at %.3g bit/s of %.3g naming %q: %q (ok %v), want %q", tc.bps, tc.link, tc.cause, got, ok, tc.want)
		}
	}
}

// analyze names nothing for a download random loss did not hold: at
// 87.5 Mbit/s of the link's 94.1 over the whole download, slow start
// included (a lab run at 0.01% and 50 ms: 848 segments resent, nearly
// all at the top of the one-BDP queue, the median RTT +12 ms), that is
// AtLinkRate; below 90% it stays nothing named, a cause named stays
// named, and a black hole on another connection is still the run's.
func TestAnalyzeNamedAtLinkRate(t *testing.T) {
	doc := func(bps float64, cause, other string) []byte {
		c, o := "", ""
		if cause != "" {
			c = `, "cause": {"name": "` + cause + `"}`
		}
		if other != "" {
			o = `, "cause": {"name": "` + other + `"}`
		}
		return []byte(fmt.Sprintf(`{"flows": [
			{"directions": [{"sender": "198.18.0.2:9978", "bytes": 90046699, "throughput_bps": %g, "verdict": "loss-limited", "flags": []%s}]},
			{"directions": [{"sender": "198.18.0.2:9978", "bytes": 3000, "throughput_bps": 0, "verdict": "unknown", "flags": []%s}]}]}`, bps, c, o))
	}
	link := pathmodel.Goodput(100e6)
	for _, tc := range []struct {
		bps                float64
		cause, other, want string
		link               float64
	}{
		{87.5e6, "", "", scenario.AtLinkRate, link},
		{80e6, "", "", scenario.NoCause, link},
		{87.5e6, "", "", scenario.NoCause, 0},
		{87.5e6, diagnose.CauseRandomLoss, "", diagnose.CauseRandomLoss, link},
		{87.5e6, "", diagnose.CausePMTUBlackHole, diagnose.CausePMTUBlackHole, link},
	} {
		if got, ok := analyzeNamed(doc(tc.bps, tc.cause, tc.other), "9978", tc.link); !ok || got != tc.want {
			t.Errorf("analyze at %.3g bit/s of %.3g naming %q (%q on another): %q (ok %v), want %q", tc.bps, tc.link, tc.cause, tc.other, got, ok, tc.want)
		}
	}
	if got := scenario.JudgeCause(scenario.ToolAnalyze, diagnose.CauseRandomLoss, scenario.AtLinkRate); got != scenario.Weaker {
		t.Errorf("analyze at-link-rate on random loss judged %q, want weaker", got)
	}
}

// test at the path's rate over 5% of segments held 30 ms (50 ms x
// 100 Mbit/s, lab causes): the download named no cause, RACK tolerated
// the reordering, and test saw it (the direction's seen), which names
// the failure as analyze's and flows' seen do.
func TestCauseDocumentTestSeen(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "causes", "reordering-seen-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	named, single, rate, _, ok := testNamed(b)
	if !ok || named != diagnose.CauseReordering || single < 90e6 || rate < single {
		t.Errorf("test named %q (ok %v), single %.3g, path rate %.3g; want reordering at the path's rate", named, ok, single, rate)
	}
}

// flows over the session's set-up names a black hole on the socket stuck
// on it, which moved nothing (not the busiest); other causes there do not
// count.
func TestFlowsBlackHole(t *testing.T) {
	stuck := `{"flows":[{"direction":"send","bytes_sent":5000,"flags":[]},{"direction":"send","bytes_sent":0,"flags":["rto-stall"],"cause":{"name":"pmtu-black-hole"}}]}`
	if !flowsBlackHole([]byte(stuck)) {
		t.Error("a stuck socket's black hole: not found")
	}
	for _, doc := range []string{`{"flows":[{"direction":"send","cause":{"name":"random-loss"}}]}`, `{"flows":[]}`, ``, `{`} {
		if flowsBlackHole([]byte(doc)) {
			t.Errorf("%q: a black hole", doc)
		}
	}
}

// A failure seen comes before a flag: analyze's download on the
// reordering path, a full one-BDP queue holding the late segments too
// (its round trip doubled at the 90th percentile: the bufferbloat flag),
// saw the reordering (lab, 50 ms x 100 Mbit/s, repeat 3 of 4).
func TestJudgedSeenBeforeFlag(t *testing.T) {
	j := judged{Flags: []string{diagnose.CauseBufferbloat, diagnose.CauseReordering, "vantage-server"}, Seen: []diagnose.Cause{{Name: diagnose.CauseReordering}}}
	if got := j.named(); got != diagnose.CauseReordering {
		t.Errorf("seen reordering with the bufferbloat flag: named %q", got)
	}
	j.Seen = nil
	if got := j.named(); got != diagnose.CauseBufferbloat {
		t.Errorf("the flag alone: named %q", got)
	}
	j.Cause = &diagnose.Cause{Name: diagnose.CauseRandomLoss}
	if got := j.named(); got != diagnose.CauseRandomLoss {
		t.Errorf("a cause: named %q", got)
	}
}
