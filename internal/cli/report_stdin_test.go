package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withStdin makes os.Stdin a pipe that carries data, for the length of
// the test.
func withStdin(t *testing.T, data []byte) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write(data)
		w.Close()
	}()
	old := os.Stdin
	os.Stdin = r
	t.Cleanup(func() {
		os.Stdin = old
		r.Close()
	})
}

// report - reads standard input, as the commands that take documents do:
// a test URL's document becomes a page, lab results become the tables.
func TestReportStdin(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "report", "testdata", "test-url.json"))
	if err != nil {
		t.Fatal(err)
	}
	withStdin(t, doc)
	out := filepath.Join(t.TempDir(), "url.html")
	stdout, stderr, err := run(t, "report", "-", "-o", out)
	if err != nil {
		t.Fatalf("report - -o: %v: %s", err, stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil || strings.TrimSpace(stdout) != out || !strings.Contains(string(page), "Download of http://198.18.0.2/big") {
		t.Errorf("report - -o: stdout %q, page %d bytes (%v); want the page of the document piped in", stdout, len(page), err)
	}

	res, err := os.ReadFile(filepath.Join("..", "results", "testdata", "causes-quick.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	withStdin(t, res)
	stdout, stderr, err = run(t, "report", "--text", "-")
	if err != nil || !strings.Contains(stdout, "Named right, per case and tool") {
		t.Errorf("report --text -: %v: %s\n%s", err, stderr, stdout)
	}

	// Without -o there is no directory to put report.html in; - twice
	// cannot be read twice.
	for _, args := range [][]string{{"report", "-"}, {"report", "--text", "-", "-"}} {
		withStdin(t, res)
		_, _, err := run(t, args...)
		var msg bytes.Buffer
		if code := ExitCode(err, &msg); code != exitUsage || strings.Count(msg.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want a one-line usage error", args, code, msg.String())
		}
	}
}
