package report

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
)

// TestLoadTellsDocumentsApart: every kind of document report draws is
// recognised from its first bytes and drawn as its kind; anything else
// is bad input.
func TestLoadTellsDocumentsApart(t *testing.T) {
	for file, title := range map[string]string{ // drawn as its kind: the kind's title
		"test-walkthrough.json": "what limits it, at which host", "test-url.json": "Download of", "test-url-upload.json": "Upload (POST) to",
		"analysis-loss.json": "What limited each TCP flow", "buffers-quick.jsonl": "Throughput vs TCP buffer size",
	} {
		f, err := os.Open(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		page, dropped, err := Load(bufio.NewReader(f))
		f.Close()
		if err != nil || page == nil || dropped != "" {
			t.Errorf("%s: %v, dropped %q", file, err, dropped)
			continue
		}
		if !strings.Contains(page.Title, title) {
			t.Errorf("%s: drawn as %q", file, page.Title)
		}
	}
	for name, in := range map[string]string{
		"junk":                  "hello\n",
		"a damaged test result": `{"schema":"longhaul.test/v1", "x":`,
		"an empty file":         "",
		"another JSON document": `{"schema":"longhaul.plan/v1"}`,
	} {
		_, _, err := Load(bufio.NewReader(strings.NewReader(in)))
		if err == nil || !badinput.Is(err) || !strings.HasPrefix(err.Error(), "report: ") {
			t.Errorf("%s: %v, want bad input starting 'report: '", name, err)
		}
	}
}

// The page of an analysis says what analyze said of each flow's path:
// the cause it named, or why the capture cannot tell (analyze's own
// golden output, three flows: random loss, bufferbloat, and a capture
// taken at the receiver).
func TestAnalysisPathCause(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "cli", "testdata", "golden", "analyze-causes.json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := BuildAnalysis(f)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(p.Headlines, "\n")
	for _, want := range []string{"Path (random-loss): random loss:", "Path (bufferbloat): bufferbloat:", "Path: not told: "} {
		if !strings.Contains(all, want) {
			t.Errorf("headlines lack %q:\n%s", want, all)
		}
	}
}
