package report

import (
	"encoding/json"
	stdhtml "html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Linear byte axes tick at round binary values whose labels read round:
// 32.4 MiB of range gives 0, 8, 16, 24, 32 MiB, never 9.54 or 19.1 MiB
// (runs axis.js in headless Chromium, which make deps installs, and in
// node where it is installed).
func TestByteAxisTicks(t *testing.T) {
	for _, engine := range []string{"chromium", "node"} {
		t.Run(engine, func(t *testing.T) { byteAxisTicks(t, engine) })
	}
}

func byteAxisTicks(t *testing.T, engine string) {
	const mib = 1 << 20
	ranges := [][2]float64{{0, 30 * mib * 1.08}, {0, 3.053e6 * 1.08}, {0, 941e3}, {0, 130e3 * 1.08}, {2 * mib, 40 * mib}, {0, 1.2e9}}
	out := runJS(t, engine, axisJS+`
var ranges = `+mustJSON(t, ranges)+`;
var labels = JSON.stringify(ranges.map(function (r) {
  return byteSplits(r[0], r[1]).map(function (v) { return fmt(v, "bytes"); });
}));`)
	var labels [][]string
	if err := json.Unmarshal(out, &labels); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for i, ls := range labels {
		if len(ls) < 4 || len(ls) > 10 {
			t.Errorf("range %v: %d ticks %q, want 4..10", ranges[i], len(ls), ls)
		}
		for _, l := range ls {
			num := strings.Fields(l)[0]
			if strings.Contains(num, ".") && !strings.HasSuffix(num, ".5") && !strings.HasSuffix(num, ".25") && !strings.HasSuffix(num, ".75") {
				t.Errorf("range %v: tick %q is not a round binary value (ticks %q)", ranges[i], l, ls)
			}
		}
	}
	if got := strings.Join(labels[0], ", "); got != "0 B, 8 MiB, 16 MiB, 24 MiB, 32 MiB" {
		t.Errorf("0..32.4 MiB ticks %s", got)
	}
}

// runJS runs a script that sets the variable labels and returns its
// value: in node, or in headless Chromium (the value written into the
// page and read back from the DOM).
func runJS(t *testing.T, engine, script string) []byte {
	t.Helper()
	if engine == "node" {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Skip("node not installed")
		}
		out, err := exec.Command(node, "-e", script+"\nconsole.log(labels);").CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v: %s", err, out)
		}
		return out
	}
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "axis.html")
	html := "<!doctype html><html><body><pre id=\"out\"></pre><script>\n" + script +
		"\ndocument.getElementById('out').textContent = labels;\n</script></body></html>"
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := run(t, bin, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--dump-dom", "file://"+page)
	m := regexp.MustCompile(`<pre id="out">([^<]*)</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("chromium: no result in the page: %s", lastLines(dom))
	}
	return []byte(stdhtml.UnescapeString(m[1]))
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
