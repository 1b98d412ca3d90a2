package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// report renders a test URL's document (it refused it with "line 1 is
// not JSON") with the fix test printed.
func TestReportTestURL(t *testing.T) {
	out := filepath.Join(t.TempDir(), "url.html")
	stdout, stderr, err := run(t, "report", filepath.Join("..", "report", "testdata", "test-url.json"), "-o", out)
	if err != nil {
		t.Fatalf("report: %v: %s", err, stderr)
	}
	if strings.TrimSpace(stdout) != out {
		t.Errorf("stdout %q, want the file written", stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Download of http://198.18.0.2/big", "net.ipv4.tcp_rmem: 4096 131072 262144 -&gt; 4096 131072 3145728", `"url-rate"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
