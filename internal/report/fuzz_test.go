package report

import (
	"bufio"
	"bytes"
	"os"
	"testing"
)

// FuzzLoad: whatever report is given (a test, test URL or analyze
// document, lab results, or anything else) is drawn or refused, never a
// panic.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"testdata/test-url.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	if b, err := os.ReadFile("../results/testdata/causes-quick.jsonl"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"longhaul.test/v1","directions":[{"name":"download"}]}`))
	f.Add([]byte(`{"schema":"longhaul.analyze/v1","flows":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		page, _, err := Load(bufio.NewReader(bytes.NewReader(b)))
		if err == nil && page == nil {
			t.Fatal("no page and no error")
		}
	})
}
