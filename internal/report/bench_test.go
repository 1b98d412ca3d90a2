package report

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/longhaul/longhaul/internal/results"
)

// Bytes allocated per byte of input, building and rendering a page (go
// test -bench Report -benchmem ./internal/report): the memory a report
// takes over its input.
func benchPage(b *testing.B, file string, build func([]byte) (*Page, error)) {
	in, err := os.ReadFile(file)
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := build(in)
		if err != nil {
			b.Fatal(err)
		}
		if err := Render(io.Discard, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReportAnalysis(b *testing.B) {
	benchPage(b, "testdata/analysis-loss.json", func(in []byte) (*Page, error) { return BuildAnalysis(bytes.NewReader(in)) })
}

func BenchmarkReportLab(b *testing.B) {
	benchPage(b, "../../bench/lab-upload/results.jsonl", func(in []byte) (*Page, error) {
		f, err := results.Read(bytes.NewReader(in))
		if err != nil {
			return nil, err
		}
		return Build(f)
	})
}

func BenchmarkReportTest(b *testing.B) {
	benchPage(b, "testdata/test-walkthrough.json", func(in []byte) (*Page, error) { return BuildTest(bytes.NewReader(in)) })
}
