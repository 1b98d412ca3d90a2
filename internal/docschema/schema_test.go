package docschema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/longhaul/longhaul/internal/flows"
	"github.com/longhaul/longhaul/internal/golden"
	"github.com/longhaul/longhaul/internal/plan"
	"github.com/longhaul/longhaul/internal/results"
	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/tcpflow"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// root is the module's directory, from this package's.
const root = "../.."

// document is one versioned document: its schema name, its schema file
// under docs/schema, its producer's type, and real documents of the
// kind in the repository (the producers' golden files and test data).
// The lab's results (longhaul.lab/v1, a header line then a run a line)
// are generated here from their types like the others; the lab itself
// validates with its stricter hand-written schema,
// internal/results/schema.json, held to the same members (lab_test.go).
type document struct {
	name, file, title string
	types             []reflect.Type
	samples           []string // files under root; "FILE#host": that member
}

var documents = []document{
	{name: testdoc.Schema, file: "longhaul.test.v1.json", title: "longhaul test --json",
		types:   []reflect.Type{reflect.TypeFor[testdoc.Doc]()},
		samples: []string{"internal/report/testdata/test-walkthrough.json", "internal/report/testdata/test-walkthrough-after.json"}},
	{name: testdoc.URLSchema, file: "longhaul.test-url.v1.json", title: "longhaul test URL --json",
		types:   []reflect.Type{reflect.TypeFor[testdoc.URLDoc]()},
		samples: []string{"internal/report/testdata/test-url.json", "internal/report/testdata/test-url-upload.json"}},
	{name: tcpflow.Schema, file: "longhaul.analyze.v1.json", title: "longhaul analyze --json",
		types: []reflect.Type{reflect.TypeFor[tcpflow.Doc]()},
		samples: []string{"internal/report/testdata/analysis-loss.json", "internal/report/testdata/analysis-upload.json",
			"internal/cli/testdata/golden/analyze-causes.json.golden", "internal/cli/testdata/golden/analyze-flows.json.golden"}},
	{name: flows.Schema, file: "longhaul.flows.v1.json", title: "longhaul flows --json (one document a line with --watch)",
		types: []reflect.Type{reflect.TypeFor[flows.Doc]()}},
	{name: plan.Schema, file: "longhaul.plan.v1.json", title: "longhaul plan --json, plan -o, the plans of test -o",
		types: []reflect.Type{reflect.TypeFor[plan.Plan]()},
		samples: []string{"internal/cli/testdata/golden/plan-ubuntu-2004.json.golden", "internal/cli/testdata/golden/plan-snapshot-dst.json.golden",
			"internal/emit/testdata/fleet.json"}},
	{name: results.Schema, file: "longhaul.lab.v1.json", title: "longhaul lab's results.jsonl: one line each, a header then the runs",
		types: []reflect.Type{reflect.TypeFor[results.Header](), reflect.TypeFor[results.Run]()}},
	{file: "snapshot.json", title: "a host's snapshot (audit --json's host, audit --snapshot, plan --snapshot; no schema name of its own)",
		types: []reflect.Type{reflect.TypeFor[snapshot.Snapshot]()},
		samples: []string{"internal/cli/testdata/golden/audit-debian-13.json.golden#host", "internal/cli/testdata/golden/audit-ubuntu-2004.json.golden#host",
			"internal/cli/testdata/golden/audit-broken.json.golden#host"}},
}

func generate(t *testing.T, d document) []byte {
	t.Helper()
	b, err := newGenerator(root).document(d.name, d.file, d.title, d.types...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSchemas: every checked-in schema is what its type gives now (go
// test -update, or make schemas, writes them; review the diff).
func TestSchemas(t *testing.T) {
	for _, d := range documents {
		golden.Check(t, filepath.Join(root, "docs/schema", d.file), d.file+" drifted from its Go type", generate(t, d))
	}
}

// TestSchemasValidate: the producers' real documents in the repository,
// and each type's zero value as its producer writes it (nil lists as
// null), are valid under the schemas.
func TestSchemasValidate(t *testing.T) {
	for _, d := range documents {
		t.Run(d.file, func(t *testing.T) {
			s := compile(t, d.file, generate(t, d))
			for _, typ := range d.types {
				zero := reflect.New(typ).Elem()
				if f := zero.FieldByName("Schema"); f.IsValid() && d.name != "" {
					f.SetString(d.name)
				}
				for i := range typ.NumField() { // a line's kind, as the producer writes it
					if c := typ.Field(i).Tag.Get("const"); c != "" {
						zero.Field(i).SetString(c)
					}
				}
				b, err := json.Marshal(zero.Interface())
				if err != nil {
					t.Fatal(err)
				}
				validate(t, s, typ.String()+"'s zero value", b)
			}
			for _, f := range d.samples {
				validate(t, s, f, sample(t, f))
			}
		})
	}
}

// TestSchemasRefuse: a schema refuses another schema's name and a member
// of the wrong kind.
func TestSchemasRefuse(t *testing.T) {
	for _, d := range documents {
		if d.name == "" {
			continue
		}
		s := compile(t, d.file, generate(t, d))
		for _, bad := range []string{`{}`, `{"schema":"` + d.name + `x"}`, `{"schema":"` + d.name + `","` + member(t, d) + `":{"x":[]}}`} {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
			if err != nil {
				t.Fatal(err)
			}
			if s.Validate(v) == nil {
				t.Errorf("%s accepted %s", d.file, bad)
			}
		}
	}
}

// member is a member of d's top-level object other than its schema that
// is not an object.
func member(t *testing.T, d document) string {
	typ := d.types[0]
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if k := f.Type.Kind(); name != "" && name != "schema" && k != reflect.Struct && k != reflect.Map && k != reflect.Pointer && k != reflect.Interface {
			return name
		}
	}
	t.Fatalf("%s: no member to spoil", d.file)
	return ""
}

func compile(t *testing.T, name string, b []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, what string, b []byte) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("%s: %v", what, err)
	}
}

// sample reads a document file (FILE#member: that member of its
// top-level object).
func sample(t *testing.T, name string) []byte {
	t.Helper()
	file, member, _ := strings.Cut(name, "#")
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	if member == "" {
		return b
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m[member]
}
