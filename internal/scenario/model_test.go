package scenario

import (
	"math"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/pathmodel"
	"github.com/longhaul/longhaul/internal/results"
)

func settings(clientRmem, serverWmem string) State {
	return State{
		Client: EndState{Sysctls: map[string]string{"net.ipv4.tcp_rmem": clientRmem, "net.ipv4.tcp_wmem": "4096 16384 4194304", "net.core.rmem_max": "4194304", "net.core.wmem_max": "4194304"}},
		Server: EndState{Sysctls: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 33554432", "net.ipv4.tcp_wmem": serverWmem, "net.core.rmem_max": "4194304", "net.core.wmem_max": "4194304"}},
	}
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol*math.Abs(want) {
		t.Errorf("%s = %g, want %g within %.1f%%", what, got, want, tol*100)
	}
}

func TestModelDownload(t *testing.T) {
	s, _ := Expand("buffers", Params{Quick: true}, facts())
	c := s.Cases[0]
	// The receiver's 4 MiB: 0.66 x 4 MiB per 200 ms.
	m, notes, err := Model(s, c, settings("4096 131072 4194304", "4096 16384 67108864"), nil)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "throughput", m["throughput_bps"], pathmodel.MSSWindow((4194304-pathmodel.RcvReserve)*0.66, 1448)*8/0.2, 0.001)
	if m["window_bound"] != 1 || !strings.Contains(notes[0], "receiver") {
		t.Errorf("window_bound %g, notes %q", m["window_bound"], notes)
	}
	// Big buffers: the path's goodput.
	m, notes, err = Model(s, c, settings("4096 131072 67108864", "4096 16384 67108864"), nil)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "throughput", m["throughput_bps"], 1e9*1448/1538, 0.001)
	if m["window_bound"] != 0 || !strings.Contains(notes[0], "path") {
		t.Errorf("window_bound %g, notes %q", m["window_bound"], notes)
	}
	// Settings that cannot be read back are an error, not a guess.
	if _, _, err := Model(s, Case{ID: "x", Kind: "teleport"}, settings("", ""), nil); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestModelObject(t *testing.T) {
	s, _ := Expand("initcwnd", Params{Quick: true}, facts())
	st := settings("4096 131072 33554432", "4096 16384 4194304")
	for _, tc := range []struct {
		cwnd, rwnd int
		rounds     float64
	}{{0, 0, 3}, {20, 20, 2}} {
		st.Server.InitCwnd, st.Client.InitRwnd = tc.cwnd, tc.rwnd
		m, _, err := Model(s, Case{ID: "o", Kind: KindObject, Bytes: 17000}, st, map[string]float64{"header_bytes": 240})
		if err != nil {
			t.Fatal(err)
		}
		if m["rounds"] != tc.rounds {
			t.Errorf("initcwnd %d: %g rounds, want %g", tc.cwnd, m["rounds"], tc.rounds)
		}
		near(t, "ttlb", m["ttlb_s"], tc.rounds*0.05, 0.05)
	}
}

func TestModelUpload(t *testing.T) {
	s, _ := Expand("upload", Params{Quick: true}, facts())
	st := settings("4096 131072 33554432", "4096 16384 4194304")
	m, notes, err := Model(s, s.Cases[0], st, map[string]float64{"window_bytes": 2896})
	if err != nil {
		t.Fatal(err)
	}
	// rcvbuf=2920 -> 5840-byte buffer -> 3854 bytes of space -> 2 x 1448.
	if m["window_bytes"] != 2896 {
		t.Errorf("window %g, want 2896", m["window_bytes"])
	}
	near(t, "upload", m["upload_s"], (1+math.Ceil(605000/2896.0))*0.035, 0.01)
	near(t, "window time", m["window_time_s"], 605000/2896.0*0.035, 0.001)
	if !strings.Contains(strings.Join(notes, " "), "rcvbuf=2920") {
		t.Errorf("notes %q", notes)
	}
}

func TestModelIperfClamp(t *testing.T) {
	s, _ := Expand("longrtt", Params{}, facts())
	var c Case
	for _, x := range s.Cases {
		if x.ID == "wbig-P1" {
			c = x
		}
	}
	m, notes, err := Model(s, c, settings("4096 131072 33554432", "4096 16384 4194304"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(notes, " "), "clamps SO_RCVBUF") {
		t.Errorf("no clamp note: %q", notes)
	}
	if m["throughput_bps"] <= 0 || m["throughput_bps"] > s.GoodputBps() {
		t.Errorf("throughput %g", m["throughput_bps"])
	}
}

func TestHeadlines(t *testing.T) {
	h := results.Header{Scenario: "buffers", Path: results.Path{RTTSeconds: 0.2, GoodputBps: 941.5e6}}
	sums := []results.Summary{
		{Case: "old-ubuntu", Label: "old Ubuntu defaults", N: 3, Median: map[string]float64{"throughput_bps": 120e6}, Model: map[string]float64{"throughput_bps": 121e6, "window_bound": 1}},
		{Case: "plan", Label: "longhaul plan", N: 3, Median: map[string]float64{"throughput_bps": 930e6}, Model: map[string]float64{"throughput_bps": 941e6}},
		{Case: "both-4M", Label: "both 4 MiB", N: 3, Median: map[string]float64{"throughput_bps": 100e6}, Model: map[string]float64{"throughput_bps": 110e6, "window_bound": 1}},
		{Case: "both-8M", Label: "both 8 MiB", N: 0, Median: map[string]float64{}, Model: map[string]float64{"throughput_bps": 220e6, "window_bound": 1}},
	}
	got := strings.Join(Headlines(h, sums), "\n")
	for _, want := range []string{"longhaul's plan: 930 Mbit/s, 99% of the path's goodput (941.5 Mbit/s), 7.8x the old Ubuntu defaults (120 Mbit/s).",
		"Where the window binds (2 cases), measured throughput is within 9% of the model's ceiling (worst: both 4 MiB)."} {
		if !strings.Contains(got, want) {
			t.Errorf("headlines:\n%s\nwant %q", got, want)
		}
	}
}
