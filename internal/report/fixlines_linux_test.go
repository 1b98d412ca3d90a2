//go:build linux

package report

import (
	"bytes"
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/longhaul/longhaul/internal/twohost"
)

// testDocs are every longhaul.test/v1 document in the repository.
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
		if IsTest(head[:n]) {
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
		if strings.HasPrefix(l, "fix for the ") || strings.HasPrefix(l, "plans for ") {
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
	if len(docs) < 2 {
		t.Fatalf("found %d test documents (%q), want the fixtures and the walkthrough's before and after", len(docs), docs)
	}
	for _, p := range docs {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			d, err := twohost.ReadDoc(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			twohost.WriteText(&text, d)
			page, err := BuildTest(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := Render(&out, page); err != nil {
				t.Fatal(err)
			}
			want, got := textFixLines(text.String()), htmlFixLines(out.String())
			if d.Plans != nil && len(want) == 0 {
				t.Fatalf("the text shows no fix lines for a document with plans:\n%s", text.String())
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("report's fix lines differ from the command's (-text +report):\n%s", diff)
			}
		})
	}
}
