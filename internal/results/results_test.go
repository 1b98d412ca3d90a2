package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

func sampleHeader() Header {
	return Header{Scenario: "buffers", Title: "t", Started: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Repeat: 2,
		Path: Path{RTTSeconds: 0.2, RateBps: 1e9, QueueBytes: 25e6, BDPBytes: 23537500, GoodputBps: 941.5e6},
		Host: Host{Hostname: "h", Kernel: "6.18", CPUs: 2}, CC: "cubic",
		Charts: []Chart{{ID: "throughput", Title: "x", Kind: "line", XLabel: "b", YLabel: "t", Metric: "throughput_bps", Model: "throughput_bps"}}}
}

func run(c string, rep int, valid bool, v float64) Run {
	r := Run{Scenario: "buffers", Case: c, Series: "both", X: 1, Label: c, Repeat: rep, Valid: valid, CC: "cubic",
		Started:  time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC),
		Settings: map[string]map[string]string{"client": {"net.ipv4.tcp_rmem": "4096 131072 6291456"}},
		Metrics:  map[string]float64{"throughput_bps": v}, Model: map[string]float64{"throughput_bps": 2 * v},
		Samples: []Sample{{T: 0.1, End: "server", Sock: "a-b", CwndB: 14480, BytesAcked: 1000}}}
	if !valid {
		r.Invalid = "the emulator overloaded"
	}
	return r
}

func write(t *testing.T, runs ...Run) []byte {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	if err := w.Header(sampleHeader()); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if err := w.Run(r); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	in := []Run{run("a", 1, true, 10), run("a", 2, false, 99), run("b", 1, true, 30)}
	f, err := Read(bytes.NewReader(write(t, in...)))
	if err != nil {
		t.Fatal(err)
	}
	if f.Header.Schema != Schema || f.Header.Kind != "header" || f.Header.Scenario != "buffers" || f.Header.Path.BDPBytes != 23537500 {
		t.Errorf("header = %+v", f.Header)
	}
	if len(f.Runs) != 3 || f.Runs[1].Valid || f.Runs[1].Invalid == "" || f.Runs[2].Metrics["throughput_bps"] != 30 {
		t.Errorf("runs = %+v", f.Runs)
	}
	if f.Runs[0].Samples[0].CwndB != 14480 || f.Runs[0].Settings["client"]["net.ipv4.tcp_rmem"] != "4096 131072 6291456" {
		t.Errorf("run 0 lost data: %+v", f.Runs[0])
	}
}

func TestReadTolerance(t *testing.T) {
	good := write(t, run("a", 1, true, 10), run("b", 1, true, 20))
	// A run killed while writing leaves a truncated last line: ignored.
	cut := good[:len(good)-40]
	f, err := Read(bytes.NewReader(cut))
	if err != nil {
		t.Fatalf("truncated last line: %v", err)
	}
	if len(f.Runs) != 1 || !strings.Contains(f.Dropped, "line 3") {
		t.Errorf("truncated file: %d runs, want 1; dropped %q, want line 3 named", len(f.Runs), f.Dropped)
	}
	if f, _ := Read(bytes.NewReader(good)); f.Dropped != "" {
		t.Errorf("whole file: dropped %q", f.Dropped)
	}
	for name, tc := range map[string]struct {
		in   string
		want string
	}{
		"bad line in the middle": {string(good[:bytes.IndexByte(good, '\n')+60]) + "\n" + string(good), "line 2"},
		"no header":              {`{"kind":"run","case":"a"}` + "\n", "run before the header"},
		"other schema":           {`{"kind":"header","schema":"longhaul.lab/v0"}` + "\n", `schema "longhaul.lab/v0"`},
		"empty":                  {"", "no header line"},
		"not json":               {"PK\x03\x04 zip\nmore\n", "line 1 is not JSON"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if name != "bad line in the middle" && !errors.Is(err, ErrSchema) {
				t.Errorf("err = %v, want ErrSchema", err)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	runs := []Run{run("b", 1, true, 30), run("a", 1, true, 10), run("a", 2, true, 40), run("a", 3, true, 20), run("a", 4, false, 1000)}
	s := Summarize(runs)
	if len(s) != 2 || s[0].Case != "b" || s[1].Case != "a" {
		t.Fatalf("order = %+v, want first-seen b, a", s)
	}
	a := s[1]
	if a.N != 3 || a.Invalid != 1 {
		t.Errorf("a: N=%d Invalid=%d, want 3 and 1", a.N, a.Invalid)
	}
	if a.Median["throughput_bps"] != 20 || a.Min["throughput_bps"] != 10 || a.Max["throughput_bps"] != 40 {
		t.Errorf("a: median %v min %v max %v, want 20 10 40 (the invalid 1000 ignored)", a.Median, a.Min, a.Max)
	}
	if a.Model["throughput_bps"] != 20 {
		t.Errorf("a: model %v, want the first run's 20", a.Model)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median even = %g, want 2.5", got)
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) should be NaN")
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSONSchema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validateLines(t *testing.T, s *jsonschema.Schema, data []byte) []error {
	t.Helper()
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		errs = append(errs, s.Validate(v))
	}
	return errs
}

// The schema describes what the Writer writes, field for field (the
// schema forbids unknown fields, so a new Go field without a schema entry
// fails here), and a real lab run's file.
func TestSchemaValidatesOutput(t *testing.T) {
	s := compileSchema(t)
	real, err := os.ReadFile("testdata/upload-quick.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	causes, err := os.ReadFile("testdata/causes-quick.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	judged := run("c", 1, true, 3)
	judged.Truth, judged.Named = "policer", map[string]string{"test": "policer", "flows": "-"}
	judged.Path = &RunPath{RTTSeconds: 0.05, RateBps: 100e6, Knobs: []string{"down-policer=50Mbit/s/64KB"}, ServerCPU: 0.5, IPv6: true}
	for name, data := range map[string][]byte{"writer": write(t, run("a", 1, true, 1), run("a", 2, false, 2), judged),
		"lab upload --quick": real, "lab causes --quick --ipv6": causes} {
		for i, err := range validateLines(t, s, data) {
			if err != nil {
				t.Errorf("%s line %d: %v", name, i+1, err)
			}
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	s := compileSchema(t)
	good := write(t, run("a", 1, true, 1))
	lines := bytes.SplitN(good, []byte("\n"), 3)
	mutate := func(line []byte, f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	for name, bad := range map[string][]byte{
		"header without path":    mutate(lines[0], func(m map[string]any) { delete(m, "path") }),
		"header schema v2":       mutate(lines[0], func(m map[string]any) { m["schema"] = "longhaul.lab/v2" }),
		"run with string metric": mutate(lines[1], func(m map[string]any) { m["metrics"] = map[string]any{"x": "fast"} }),
		"run repeat 0":           mutate(lines[1], func(m map[string]any) { m["repeat"] = 0 }),
		"run with unknown field": mutate(lines[1], func(m map[string]any) { m["throughput"] = 1 }),
		"sample of a third end": mutate(lines[1], func(m map[string]any) {
			m["samples"].([]any)[0].(map[string]any)["end"] = "middle"
		}),
		"unknown kind": []byte(`{"kind":"summary"}`),
	} {
		if errs := validateLines(t, s, bad); errs[0] == nil {
			t.Errorf("%s: schema accepted %s", name, bad)
		}
	}
}
