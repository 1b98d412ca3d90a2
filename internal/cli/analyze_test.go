package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
	"github.com/longhaul/longhaul/internal/golden"
)

// analyzeCapture writes a pcapng with three flows built packet by packet:
// 1. the upload seed: 605 kB into a 2,920-byte window at 35 ms;
// 2. a download whose reader stops (zero window) for 3 s;
// 3. request/response with think time (application-limited).
func analyzeCapture(t *testing.T) string {
	t.Helper()
	w := ct.NewWriter(ct.Format{NG: true}, capture.LinkEthernet)
	syn := ct.Opts{}.MSS(1460).SACKOK().WScale(7)

	c := ct.NewConv(w, "198.18.0.1:50000", "198.18.0.2:443")
	c.Win = [2]uint16{64240, 2920}
	c.Handshake(syn, ct.Opts{}.MSS(1412).SACKOK().WScale(0), 35*time.Millisecond, 50*time.Microsecond)
	for sent := 0; sent < 605_000; sent += 2824 {
		c.Data(ct.Client, 1412)
		c.Data(ct.Client, 1412)
		c.Advance(35 * time.Millisecond)
		c.AckAll(ct.Server)
		c.Advance(20 * time.Microsecond)
	}
	c.Fin(ct.Client)
	c.Advance(35 * time.Millisecond)
	c.Fin(ct.Server)

	d := ct.NewConv(w, "198.18.0.1:50001", "198.18.0.3:8080")
	d.Now = c.Now.Add(time.Second)
	d.Handshake(syn, syn, 20*time.Millisecond, 50*time.Microsecond)
	d.Data(ct.Client, 200)
	d.Advance(20 * time.Millisecond)
	for k := range 6 {
		for range 10 << min(k, 3) {
			d.Data(ct.Server, 1448)
		}
		// Captured at the client: it acknowledges at once, the next
		// flight comes a round trip later.
		d.Advance(50 * time.Microsecond)
		d.AckAll(ct.Client)
		d.Advance(20 * time.Millisecond)
	}
	d.Win[ct.Client] = 0
	d.AckAll(ct.Client)
	for range 5 {
		d.Advance(600 * time.Millisecond)
		d.Emit(ct.Server, ct.TCP{Seq: d.Next[ct.Server] - 1, Ack: d.Rcvd[ct.Server], Flags: capture.FlagACK, Window: 1000})
		d.Advance(20 * time.Millisecond)
		d.AckAll(ct.Client)
	}
	d.Win[ct.Client] = 1000
	d.AckAll(ct.Client)
	for range 20 {
		d.Data(ct.Server, 1448)
	}
	d.Advance(50 * time.Microsecond)
	d.AckAll(ct.Client)

	e := ct.NewConv(w, "[2001:db8::1]:40000", "[2001:db8::2]:80")
	e.Now = d.Now.Add(time.Second)
	e.Handshake(syn, syn, 10*time.Millisecond, 50*time.Microsecond)
	for range 30 {
		e.Data(ct.Client, 300)
		e.Advance(10 * time.Millisecond)
		e.AckAll(ct.Server)
		e.Advance(80 * time.Millisecond)
		e.Data(ct.Server, 1448)
		e.Data(ct.Server, 700)
		e.Advance(50 * time.Microsecond)
		e.AckAll(ct.Client)
		e.Advance(time.Millisecond)
	}
	path := filepath.Join(t.TempDir(), "flows.pcapng")
	if err := os.WriteFile(path, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name+".golden"), name, []byte(got))
}

func TestAnalyzeGolden(t *testing.T) {
	file := analyzeCapture(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"analyze-flows", nil},
		{"analyze-flows.json", []string{"--json"}},
		{"analyze-flow1-rate", []string{"--flow", "1", "--rate", "100Mbit/s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := run(t, append([]string{"analyze", file}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, out)
		})
	}
}

// TestAnalyzeJSONContract checks the documented fields (docs/json.md).
func TestAnalyzeJSONContract(t *testing.T) {
	out, _, err := run(t, "analyze", analyzeCapture(t), "--json", "--rate", "100Mbit/s")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Schema string                       `json:"schema"`
		Flows  []map[string]json.RawMessage `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Schema != "longhaul.analyze/v1" || len(doc.Flows) != 3 {
		t.Fatalf("schema %q, %d flows", doc.Schema, len(doc.Flows))
	}
	for _, k := range []string{"client", "server", "bytes", "duration_s", "verdict", "share", "flags", "rtt_s", "rwnd_bytes", "throughput_bps", "ceiling_bps", "bdp_bytes", "fix"} {
		if _, ok := doc.Flows[0][k]; !ok {
			t.Errorf("flows[0] lacks %q", k)
		}
	}
	want := []string{`"rwnd-limited"`, `"zero-window"`, `"app-limited"`}
	for i, f := range doc.Flows {
		if string(f["verdict"]) != want[i] {
			t.Errorf("flow %d verdict %s, want %s", i+1, f["verdict"], want[i])
		}
	}
}

func TestAnalyzeTimeline(t *testing.T) {
	out, _, err := run(t, "analyze", analyzeCapture(t), "--flow", "2", "--timeline", "--points", "50")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Flows []struct {
			Directions []struct {
				Sender   string `json:"sender"`
				Timeline *struct {
					Points []struct {
						T    float64 `json:"t"`
						Seq  int64   `json:"seq"`
						Ack  int64   `json:"ack"`
						Rwnd int64   `json:"rwnd"`
					} `json:"points"`
					Events []struct {
						Kind string `json:"kind"`
					} `json:"events"`
				} `json:"timeline"`
			} `json:"directions"`
		} `json:"flows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Flows) != 1 {
		t.Fatalf("%d flows, want flow 2 only", len(doc.Flows))
	}
	kinds := map[string]int{}
	var points int
	for _, d := range doc.Flows[0].Directions {
		if d.Timeline == nil {
			t.Fatalf("direction %s has no timeline", d.Sender)
		}
		points += len(d.Timeline.Points)
		if len(d.Timeline.Points) > 50 {
			t.Errorf("%d points, want <= 50", len(d.Timeline.Points))
		}
		for _, e := range d.Timeline.Events {
			kinds[e.Kind]++
		}
	}
	if points == 0 || kinds["zero-window"] != 1 || kinds["window-open"] != 1 || kinds["zero-window-probe"] != 5 {
		t.Errorf("%d points, events %v", points, kinds)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	file := analyzeCapture(t)
	b, _ := os.ReadFile(file)
	dir := t.TempDir()
	trunc := filepath.Join(dir, "cut.pcapng")
	os.WriteFile(trunc, b[:len(b)*2/3], 0o644)
	text := filepath.Join(dir, "dump.txt")
	os.WriteFile(text, []byte("18:46:01.000001 IP 10.0.0.1.5201 > 10.0.0.2.40000: Flags [.], ack 1\n"), 0o644)
	snoop := filepath.Join(dir, "old.snoop")
	os.WriteFile(snoop, []byte("snoop\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04"), 0o644)

	out, _, err := run(t, "analyze", trunc)
	if err == nil || !errors.Is(err, capture.ErrTruncated) || ExitCode(err, new(strings.Builder)) != exitError {
		t.Errorf("truncated: err %v, want a truncation error with exit 1", err)
	}
	if !strings.Contains(out, "Flow 1:") || !strings.Contains(err.Error(), "the flows above are from the packets before it") {
		t.Errorf("truncated: output lacks the flows so far:\n%s\nerr %v", out, err)
	}
	for _, tc := range []struct{ file, want string }{
		{text, "a text file"},
		{snoop, "editcap -F pcap"},
		{filepath.Join(dir, "missing.pcap"), "no such file"},
	} {
		_, _, err := run(t, "analyze", tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
			t.Errorf("%s: err %v, want one line containing %q", tc.file, err, tc.want)
		}
	}
	if _, _, err := run(t, "analyze", text); ExitCode(err, new(strings.Builder)) != exitUsage {
		t.Errorf("text file: exit %d, want %d", ExitCode(err, new(strings.Builder)), exitUsage)
	}
	if _, _, err := run(t, "analyze", file, "--flow", "9"); err == nil || ExitCode(err, new(strings.Builder)) != exitUsage {
		t.Errorf("--flow 9: err %v, want a usage error", err)
	}
}
