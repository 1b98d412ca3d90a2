package docschema

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/units"
)

// schema is the part of JSON Schema (draft 2020-12) the generator
// writes, in the order it writes it.
type schema struct {
	Schema      string     `json:"$schema,omitempty"`
	ID          string     `json:"$id,omitempty"`
	Title       string     `json:"title,omitempty"`
	Description string     `json:"description,omitempty"`
	Ref         string     `json:"$ref,omitempty"`
	Type        string     `json:"type,omitempty"`
	Format      string     `json:"format,omitempty"`
	Const       string     `json:"const,omitempty"`
	Properties  properties `json:"properties,omitempty"`
	Required    []string   `json:"required,omitempty"`
	Items       *schema    `json:"items,omitempty"`
	MinItems    *int       `json:"minItems,omitempty"`
	MaxItems    *int       `json:"maxItems,omitempty"`
	// AdditionalProperties is a map's values.
	AdditionalProperties *schema  `json:"additionalProperties,omitempty"`
	AnyOf                []schema `json:"anyOf,omitempty"`
	OneOf                []schema `json:"oneOf,omitempty"`
	Defs                 defs     `json:"$defs,omitempty"`
}

// property is one member of an object, in the Go field's order.
type property struct {
	name string
	s    schema
}

type properties []property

func (ps properties) MarshalJSON() ([]byte, error) {
	return orderedJSON(len(ps), func(i int) (string, any) { return ps[i].name, ps[i].s })
}

// defs are the named types, sorted by name.
type defs map[string]*schema

func (d defs) MarshalJSON() ([]byte, error) {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	slices.Sort(names)
	return orderedJSON(len(names), func(i int) (string, any) { return names[i], d[names[i]] })
}

func orderedJSON(n int, at func(int) (string, any)) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range n {
		k, v := at(i)
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	secondsType   = reflect.TypeFor[units.Seconds]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// generator writes the schema of one document: encoding/json's rules
// read off the Go types, the types' and fields' doc comments as
// descriptions. Only the document's schema member is required: a v1
// document an earlier build wrote lacks the members added since, and
// its readers take it. A pointer, list or map the producer writes
// without omitempty may be null.
type generator struct {
	root     string // the module's directory
	defs     defs
	comments map[string]string // "pkgpath.Type" and "pkgpath.Type.Field"
	parsed   map[string]bool   // package paths read
	err      error
}

func newGenerator(root string) *generator {
	return &generator{root: root, defs: defs{}, comments: map[string]string{}, parsed: map[string]bool{}}
}

// document is the schema of a document whose top-level type is t (or,
// for a file of JSON lines, one of ts), its schema field fixed to name.
func (g *generator) document(name, file, title string, ts ...reflect.Type) ([]byte, error) {
	top := schema{Schema: "https://json-schema.org/draft/2020-12/schema",
		ID: "https://github.com/longhaul/longhaul/docs/schema/" + file, Title: title}
	for _, t := range ts {
		s := g.of(t)
		def := g.defs[defName(t)]
		if name != "" && def != nil {
			for i, p := range def.Properties {
				if p.name == "schema" {
					def.Properties[i].s = schema{Type: "string", Const: name, Description: p.s.Description}
					def.Required = []string{"schema"}
				}
			}
		}
		if len(ts) == 1 {
			top.Ref = s.Ref
		} else {
			top.OneOf = append(top.OneOf, s)
		}
	}
	top.Defs = g.defs
	if g.err != nil {
		return nil, g.err
	}
	b, err := json.MarshalIndent(top, "", "  ")
	return append(b, '\n'), err
}

func defName(t reflect.Type) string {
	return filepath.Base(t.PkgPath()) + "." + t.Name()
}

// of is the schema of a value of type t.
func (g *generator) of(t reflect.Type) schema {
	if t.Kind() == reflect.Pointer {
		return g.of(t.Elem())
	}
	switch {
	case t == timeType:
		return schema{Type: "string", Format: "date-time"}
	case t == secondsType:
		return schema{Type: "number", Description: "seconds"}
	case t == rawType:
		return schema{} // any JSON: the field's comment says whose
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		g.fail(fmt.Errorf("%s writes its own JSON: say what in of", t))
		return schema{}
	case t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		return schema{Type: "string"}
	}
	switch t.Kind() {
	case reflect.Struct:
		name := defName(t)
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = nil // recursion stops here
			g.defs[name] = g.object(t)
		}
		return schema{Ref: "#/$defs/" + name}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{Type: "string", Description: "base64"}
		}
		it := g.of(t.Elem())
		return schema{Type: "array", Items: &it}
	case reflect.Array:
		it, n := g.of(t.Elem()), t.Len()
		return schema{Type: "array", Items: &it, MinItems: &n, MaxItems: &n}
	case reflect.Map:
		v := g.of(t.Elem())
		return schema{Type: "object", AdditionalProperties: &v}
	case reflect.Interface:
		return schema{}
	case reflect.Bool:
		return schema{Type: "boolean"}
	case reflect.String:
		return schema{Type: "string"}
	case reflect.Float32, reflect.Float64:
		return schema{Type: "number"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return schema{Type: "integer"}
	}
	g.fail(fmt.Errorf("%s: a kind JSON does not carry", t))
	return schema{}
}

func (g *generator) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

// field is a member of an object as encoding/json finds it.
type field struct {
	name     string
	depth    int
	tagged   bool
	nullable bool
	required bool // a const:"..." tag: the member is that string
	s        schema
}

// object is a struct's schema: its fields and its embedded structs'
// fields, with encoding/json's rule when two have one name (the
// shallower, else the one tagged, else neither).
func (g *generator) object(t reflect.Type) *schema {
	g.readComments(t.PkgPath())
	var fs []field
	g.fields(t, 0, &fs)
	s := &schema{Type: "object", Description: g.comments[t.PkgPath()+"."+t.Name()]}
	for i, f := range fs {
		if !dominant(i, fs) {
			continue
		}
		ps := f.s
		if f.nullable {
			ps = schema{Description: ps.Description, AnyOf: []schema{withoutDescription(ps), {Type: "null"}}}
		}
		s.Properties = append(s.Properties, property{f.name, ps})
		if f.required {
			s.Required = append(s.Required, f.name)
		}
	}
	return s
}

func withoutDescription(s schema) schema { s.Description = ""; return s }

func dominant(i int, fs []field) bool {
	f := fs[i]
	for j, o := range fs {
		if o.name != f.name || j == i {
			continue
		}
		if o.depth < f.depth || (o.depth == f.depth && (o.tagged || !f.tagged)) {
			return false
		}
	}
	return true
}

// fields appends t's JSON members.
func (g *generator) fields(t reflect.Type, depth int, out *[]field) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := sf.Type
		if sf.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && !et.Implements(marshalerType) && !et.Implements(textType) {
				g.readComments(et.PkgPath())
				g.fields(et, depth+1, out)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		f := field{name: name, depth: depth, tagged: tag != "", s: g.of(ft)}
		if strings.Contains(","+opts+",", ",string,") {
			f.s = schema{Type: "string"}
		}
		switch ft.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
			f.nullable = !omit && !(ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8)
		}
		if c := sf.Tag.Get("const"); c != "" {
			// A member that names the kind of a line (the lab's "kind"):
			// it tells one type of a document from another.
			f.s, f.required, f.nullable = schema{Type: "string", Const: c}, true, false
		}
		if c := g.comments[t.PkgPath()+"."+t.Name()+"."+sf.Name]; c != "" {
			f.s.Description = c
		}
		*out = append(*out, f)
	}
}

// readComments reads the doc comments of a package of this module once.
func (g *generator) readComments(pkg string) {
	const mod = "github.com/longhaul/longhaul/"
	if g.parsed[pkg] || !strings.HasPrefix(pkg, mod) {
		return
	}
	g.parsed[pkg] = true
	dir := filepath.Join(g.root, strings.TrimPrefix(pkg, mod))
	ents, err := os.ReadDir(dir)
	if err != nil {
		g.fail(err)
		return
	}
	fset := token.NewFileSet()
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			g.fail(err)
			return
		}
		g.fileComments(pkg, f)
	}
}

func (g *generator) fileComments(pkg string, f *ast.File) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, sp := range gd.Specs {
			ts := sp.(*ast.TypeSpec)
			c := ts.Doc
			if c == nil && len(gd.Specs) == 1 {
				c = gd.Doc
			}
			g.comments[pkg+"."+ts.Name.Name] = text(c, nil)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				for _, n := range fl.Names {
					g.comments[pkg+"."+ts.Name.Name+"."+n.Name] = text(fl.Doc, fl.Comment)
				}
			}
		}
	}
}

// text is a comment as one paragraph of plain text.
func text(groups ...*ast.CommentGroup) string {
	var parts []string
	for _, c := range groups {
		if c != nil {
			parts = append(parts, strings.Join(strings.Fields(c.Text()), " "))
		}
	}
	return strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), " ")
}
