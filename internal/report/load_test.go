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
		"test-walkthrough.json": "what limits it, at which host", "test-url.json": "Download of",
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
