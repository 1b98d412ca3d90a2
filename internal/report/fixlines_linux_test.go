//go:build linux

package report

import (
	"bytes"
	"encoding/json"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// testDocs are every longhaul.test/v1 and longhaul.test-url/v1
// document in the repository.
func testDocs(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == "bin") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".json") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		head := make([]byte, 512)
		n, _ := f.Read(head)
		if IsTest(head[:n]) || IsTestURL(head[:n]) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// textFixLines are the fix lines of test's text: from the first
// direction's fix or the plans to the notes.
func textFixLines(text string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "fix for the ") || strings.HasPrefix(l, "plans for ") ||
			strings.HasPrefix(l, "this host's plan") || strings.HasPrefix(l, "for a plan: ") {
			in = true
		}
		if strings.HasPrefix(l, "note: ") {
			break
		}
		if in {
			out = append(out, l)
		}
	}
	return trimBlank(out)
}

var fixPre = regexp.MustCompile(`(?s)<pre class="fix">(.*?)</pre>`)

// htmlFixLines are the lines of the report's "what to change" block.
func htmlFixLines(page string) []string {
	m := fixPre.FindStringSubmatch(page)
	if m == nil {
		return nil
	}
	return trimBlank(strings.Split(html.UnescapeString(m[1]), "\n"))
}

func trimBlank(l []string) []string {
	for len(l) > 0 && l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// One fix, one number, everywhere: for every test document in the
// repository, the report's fix lines are byte for byte the ones test
// printed.
func TestReportFixIsTheCommandsFix(t *testing.T) {
	docs := testDocs(t)
	if len(docs) < 3 {
		t.Fatalf("found %d test documents (%q), want the walkthrough's before and after and a URL test", len(docs), docs)
	}
	for _, p := range docs {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			text, page, hasPlan := renderBoth(t, b)
			var out bytes.Buffer
			if err := Render(&out, page); err != nil {
				t.Fatal(err)
			}
			want, got := textFixLines(text), htmlFixLines(out.String())
			if hasPlan && len(want) == 0 {
				t.Fatalf("the text shows no fix lines for a document with plans:\n%s", text)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("report's fix lines differ from the command's (-text +report):\n%s", diff)
			}
		})
	}
}

// renderBoth renders a document as test printed it and as the report's
// page; hasPlan says whether it holds a plan.
func renderBoth(t *testing.T, b []byte) (text string, page *Page, hasPlan bool) {
	t.Helper()
	var w bytes.Buffer
	if IsTestURL(b[:min(len(b), 512)]) {
		var d testdoc.URLDoc
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		testdoc.WriteURLText(&w, &d)
		p, err := BuildTestURL(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return w.String(), p, d.Plan != nil
	}
	d, err := testdoc.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	testdoc.WriteText(&w, d)
	p, err := BuildTest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return w.String(), p, d.Plans != nil
}
