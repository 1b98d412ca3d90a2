package results

import (
	"bytes"
	"os"
	"testing"
)

// FuzzRead: a results file from any bytes (report and lab read files a
// run may have left damaged) is read or refused with an error, never a
// panic; what is read has its header's schema.
func FuzzRead(f *testing.F) {
	// The header and the first run of a real file (the whole 10 kB file
	// slowed the fuzzer's workers to a few inputs a second).
	if b, err := os.ReadFile("testdata/causes-quick.jsonl"); err == nil {
		lines := bytes.SplitAfterN(b, []byte("\n"), 3)
		if len(lines) >= 2 {
			two := append(bytes.Clone(lines[0]), lines[1]...)
			f.Add(two)
			f.Add(lines[0])         // the header alone
			f.Add(two[:len(two)-5]) // a truncated last line
		}
	}
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Read(bytes.NewReader(b))
		if err == nil && file == nil {
			t.Fatal("no file and no error")
		}
	})
}
