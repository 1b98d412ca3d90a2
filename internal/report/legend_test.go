package report

import (
	"bytes"
	stdhtml "html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A chart's legend reads "label: value" when the cursor is on a point
// and the label alone otherwise, never "time:" with nothing after the
// colon (issue 53). Rendered in headless Chromium, which lays out
// uPlot's legend and its CSS colon (th::after).
func TestLegendColonOnlyWithValue(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium")
	}
	bin := chromium(t)
	dir := t.TempDir()
	var b bytes.Buffer
	if err := Render(&b, build(t, "test-walkthrough")); err != nil {
		t.Fatal(err)
	}
	// After the page's own scripts: every legend row as label, colon
	// (the th::after content) and value.
	// Then the cursor on the middle of the first chart: its rows carry
	// values and their colons.
	probe := `<pre id="legend"></pre><pre id="hover"></pre><script>
function rows(root) {
  return Array.prototype.map.call(root.querySelectorAll(".u-legend tr"), function (tr) {
    var th = tr.querySelector("th"), td = tr.querySelector("td");
    return JSON.stringify([th.textContent, getComputedStyle(th, "::after").content, td ? td.textContent : ""]);
  }).join("\n");
}
document.getElementById("legend").textContent = rows(document);
var over = document.querySelector(".u-over"), r = over.getBoundingClientRect();
over.dispatchEvent(new MouseEvent("mouseenter", { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 }));
over.dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 }));
document.getElementById("hover").textContent = rows(document.querySelector(".uplot"));
</script></body>`
	page := strings.Replace(b.String(), "</body>", probe, 1)
	html := filepath.Join(dir, "legend.html")
	if err := os.WriteFile(html, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := run(t, bin, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--virtual-time-budget=5000", "--dump-dom", "file://"+html)
	m := regexp.MustCompile(`(?s)<pre id="legend">(.*?)</pre>`).FindStringSubmatch(dom)
	if m == nil || strings.TrimSpace(m[1]) == "" {
		t.Fatalf("no legend rows in the page: %s", lastLines(dom))
	}
	for _, row := range strings.Split(stdhtml.UnescapeString(m[1]), "\n") {
		if strings.Contains(row, `"\":\""`) && strings.HasSuffix(row, `,""]`) {
			t.Errorf("legend row with a colon and no value: %s", row)
		}
	}
	h := regexp.MustCompile(`(?s)<pre id="hover">(.*?)</pre>`).FindStringSubmatch(dom)
	if h == nil || !strings.Contains(stdhtml.UnescapeString(h[1]), `"\":\""`) {
		t.Errorf("no legend row with a colon and a value under the cursor: %v", h)
	}
}
