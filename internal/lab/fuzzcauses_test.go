package lab

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzCausesDocs: the causes matrix reads the documents test, analyze
// and flows wrote (longhaul.test/v1, analyze/v1, flows/v1) with their
// producers' types; any bytes are read or refused, never a panic, and
// a document read names something.
func FuzzCausesDocs(f *testing.F) {
	files, _ := filepath.Glob("testdata/causes/*.json")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"flows":[null,{"directions":[{"sender":"b:9978","bytes":2000000,"cause":null,"flags":null}]}]}`))
	f.Add([]byte(`{"server":"a:9978","directions":[{"name":"download","flow":null}],"causes":[{"name":"pmtu-black-hole"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if named, _, _, _, ok := testNamed(b); ok && named == "" {
			t.Fatal("test: read, yet nothing named")
		}
		if named, ok := analyzeNamed(b, "9978", 100e6); ok && named == "" {
			t.Fatal("analyze: read, yet nothing named")
		}
		if named, ok := flowsNamed(b, "9978", 100e6); ok && named == "" {
			t.Fatal("flows: read, yet nothing named")
		}
		flowsBlackHole(b)
	})
}
