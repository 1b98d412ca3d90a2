package docschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/results"
)

// The lab's results keep the schema written by hand
// (internal/results/schema.json, embedded as results.JSONSchema): it
// says what the Go types cannot (a header line or a run line by kind,
// members required, no unknown ones, repeat at least 1, a sample's end
// client or server), and results' tests hold real lab output to it and
// check what it refuses. Generated from the types it would say less, so
// this test keeps the two from drifting instead: the members of every
// object, at every path below a header and a run, are the same in the
// hand-written schema as in what the types give.
func TestLabSchemaMembers(t *testing.T) {
	gen, err := newGenerator(root).document(results.Schema, "longhaul.lab.v1.json", "lab",
		reflect.TypeFor[results.Header](), reflect.TypeFor[results.Run]())
	if err != nil {
		t.Fatal(err)
	}
	var g, h map[string]any
	if err := json.Unmarshal(gen, &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(results.JSONSchema, &h); err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{"results.Header", "header"}, {"results.Run", "run"}} {
		want, got := map[string][]string{}, map[string][]string{}
		members(g, def(g, pair[0]), pair[1], want, 0)
		members(h, def(h, pair[1]), pair[1], got, 0)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("internal/results/schema.json's %s and the Go type's members differ (-type +schema.json):\n%s", pair[1], diff)
		}
	}
}

func def(root map[string]any, name string) map[string]any {
	d, _ := root["$defs"].(map[string]any)
	s, _ := d[name].(map[string]any)
	return s
}

// members records the member names of the object at each path below s
// ("[]": a list's items, "{}": a map's values), through references and
// alternatives.
func members(root, s map[string]any, path string, out map[string][]string, depth int) {
	if s == nil || depth > 20 {
		return
	}
	if ref, ok := s["$ref"].(string); ok {
		members(root, def(root, strings.TrimPrefix(ref, "#/$defs/")), path, out, depth+1)
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		alts, _ := s[k].([]any)
		for _, a := range alts {
			m, _ := a.(map[string]any)
			members(root, m, path, out, depth+1)
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			if !slices.Contains(out[path], name) {
				out[path] = append(out[path], name)
			}
			m, _ := p.(map[string]any)
			members(root, m, path+"."+name, out, depth+1)
		}
		slices.Sort(out[path])
	}
	if m, ok := s["items"].(map[string]any); ok {
		members(root, m, path+"[]", out, depth+1)
	}
	if m, ok := s["additionalProperties"].(map[string]any); ok {
		members(root, m, path+"{}", out, depth+1)
	}
}

// TestLabSchemaValidatesRuns: every line of the lab's checked-in results
// (bench/) is valid under the schema generated from the types.
func TestLabSchemaValidatesRuns(t *testing.T) {
	var lab document
	for _, d := range documents {
		if d.name == results.Schema {
			lab = d
		}
	}
	s := compile(t, lab.file, generate(t, lab))
	files, _ := filepath.Glob(filepath.Join(root, "bench/*/results.jsonl"))
	if len(files) == 0 {
		t.Fatal("no lab results under bench/")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			validate(t, s, fmt.Sprintf("%s line %d", f, i+1), line)
		}
	}
}
