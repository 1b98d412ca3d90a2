package report

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/golden"
	"github.com/longhaul/longhaul/internal/results"
)

var fixtures = []string{"buffers-quick", "initcwnd-quick", "upload-quick", "analysis-loss", "analysis-upload", "test-walkthrough", "test-walkthrough-after", "test-url", "test-url-upload"}

// build makes the page of a fixture: lab results (.jsonl) or an
// analyze --timeline document (.json).
func build(t *testing.T, name string) *Page {
	t.Helper()
	if strings.HasPrefix(name, "test-") {
		return buildTest(t, name)
	}
	if strings.HasPrefix(name, "analysis-") {
		f, err := os.Open(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		head := make([]byte, 512)
		n, _ := f.Read(head)
		if !IsAnalysis(head[:n]) {
			t.Fatalf("%s not recognised as an analysis", name)
		}
		if _, err := f.Seek(0, 0); err != nil {
			t.Fatal(err)
		}
		p, err := BuildAnalysis(f)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, err := Build(load(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// buildTest makes the page of a longhaul test document (the README
// walkthrough's two runs, before and after the plans, written by
// scripts/walkthrough-twohost.sh; the receiver's samples of the capacity
// phase, which no chart draws, dropped to keep the fixtures small).
func buildTest(t *testing.T, name string) *Page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	if IsTestURL(b[:min(len(b), 512)]) {
		p, err := BuildTestURL(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if !IsTest(b[:min(len(b), 512)]) {
		t.Fatalf("%s not recognised as a test result", name)
	}
	p, err := BuildTest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, name string) *results.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := results.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The page data of real lab results, pinned: every number the charts
// and the table show (rewrite with go test -update after checking).
func TestBuildGolden(t *testing.T) {
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			p := build(t, name)
			got, err := json.MarshalIndent(p, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".page.golden")
			if want := golden.Read(t, path, got); !bytes.Equal(got, want) {
				t.Errorf("page data differs from %s (run go test -update and review the diff)", path)
			}
		})
	}
}

func TestBuildCharts(t *testing.T) {
	p, err := Build(load(t, "buffers-quick"))
	if err != nil {
		t.Fatal(err)
	}
	// The quick buffers fixture's plan run was invalid: no tcp_info chart
	// for it, the profile bar empty, and the reason listed.
	if len(p.Charts) != 2 || p.Charts[0].ID != "throughput" || p.Charts[1].ID != "profiles" {
		t.Fatalf("charts %+v", p.Charts)
	}
	line := p.Charts[0]
	if !line.XLog || line.X[0] != 256*1024 || line.X[len(line.X)-1] != 64<<20 {
		t.Errorf("x %v", line.X)
	}
	if line.Series[0].Role != "measured" || line.Series[1].Role != "model" || *line.Series[0].Y[3] < 900e6 {
		t.Errorf("series %+v", line.Series)
	}
	bar := p.Charts[1]
	if strings.Join(bar.XNames, "|") != "old Ubuntu defaults|this host's settings|longhaul plan" || bar.Series[0].Y[2] != nil {
		t.Errorf("bars %v %v", bar.XNames, bar.Series[0].Y)
	}
	if len(p.Invalid) != 1 || !strings.Contains(p.Invalid[0], "overloaded") {
		t.Errorf("invalid %v", p.Invalid)
	}

	u, err := Build(load(t, "upload-quick"))
	if err != nil {
		t.Fatal(err)
	}
	ti := u.Charts[1]
	if ti.Kind != "tcpinfo" || !strings.Contains(ti.Title, "client 198.18.0.1:") || len(ti.X) < 10 {
		t.Fatalf("tcpinfo chart %s, %d points", ti.Title, len(ti.X))
	}
	// The seed's window: the server advertises 2,896 bytes.
	var wnd *SeriesData
	for i := range ti.Series {
		if strings.HasPrefix(ti.Series[i].Label, "peer's window") {
			wnd = &ti.Series[i]
		}
	}
	if wnd == nil || *wnd.Y[len(wnd.Y)/2] != 2896 {
		t.Errorf("window series %+v", wnd)
	}
}

func TestBuildRejectsUnknownChart(t *testing.T) {
	f := load(t, "upload-quick")
	f.Header.Charts = append(f.Header.Charts, results.Chart{ID: "pie", Kind: "pie"})
	if _, err := Build(f); err == nil || !strings.Contains(err.Error(), `unknown kind "pie"`) {
		t.Errorf("err = %v", err)
	}
}

func TestRenderSelfContained(t *testing.T) {
	p, err := Build(load(t, "upload-quick"))
	if err != nil {
		t.Fatal(err)
	}
	p.Title = "</script><script>alert(1)</script>"
	var b bytes.Buffer
	if err := Render(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"uPlot", `id="data"`, "&lt;/script&gt;&lt;script&gt;alert(1)"} {
		if !strings.Contains(html, want) {
			t.Errorf("html lacks %q", want)
		}
	}
	// Offline: no external resource.
	if m := regexp.MustCompile(`(src|href)="(https?:)?//`).FindString(html); m != "" {
		t.Errorf("external reference %q", m)
	}
	if strings.Contains(html, "<script>alert(1)") {
		t.Error("title not escaped")
	}
}

func chromium(t *testing.T) string {
	t.Helper()
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	t.Skip("no chromium: apt-get install chromium")
	return ""
}

// The report renders in headless Chromium: every chart draws (the page
// marks data-charts="N/N" after drawing, and an error box otherwise) and
// the screenshot has the charts' ink.
func TestRenderInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts Chromium twice per fixture (30 s)")
	}
	bin := chromium(t)
	dir := t.TempDir()
	for _, name := range fixtures {
		t.Run(name, func(t *testing.T) {
			p := build(t, name)
			var b bytes.Buffer
			if err := Render(&b, p); err != nil {
				t.Fatal(err)
			}
			html := filepath.Join(dir, name+".html")
			if err := os.WriteFile(html, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + filepath.Join(dir, "profile-"+name)}
			dom := run(t, bin, append(args, "--virtual-time-budget=5000", "--dump-dom", "file://"+html)...)
			want := regexp.MustCompile(`data-charts="(\d+)/(\d+)"`).FindStringSubmatch(dom)
			if want == nil || want[1] != want[2] || want[1] == "0" {
				t.Fatalf("charts not drawn: %v; error box: %s", want, regexp.MustCompile(`<div id="error">[^<]*`).FindString(dom))
			}
			if n := strings.Count(dom, `class="uplot`); n < len(p.Charts) {
				t.Errorf("%d uplot elements for %d charts", n, len(p.Charts))
			}
			shot := filepath.Join(dir, name+".png")
			run(t, bin, append(args, "--window-size=1200,1600", "--screenshot="+shot, "file://"+html)...)
			f, err := os.Open(shot)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatal(err)
			}
			// The first chart sits below the header, from y ~ 220 px: it
			// must hold coloured (non-grey) ink, the series and bars.
			if n := colored(img, image.Rect(0, 220, 1200, 700)); n < 500 {
				t.Errorf("first chart has %d coloured pixels; the screenshot is at %s", n, shot)
			}
		})
	}
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v: %s", bin, err, lastLines(errb.String()))
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s timed out", bin)
	}
	return out.String()
}

func lastLines(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > 3 {
		l = l[len(l)-3:]
	}
	return strings.Join(l, " | ")
}

// colored counts pixels whose channels differ: ink that is not white,
// grey or black (grid lines, text).
func colored(img image.Image, r image.Rectangle) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c0, c1, c2, _ := img.At(x, y).RGBA()
			hi, lo := max(c0, c1, c2), min(c0, c1, c2)
			if hi-lo > 0x3000 {
				n++
			}
		}
	}
	return n
}

// The seed's upload as analyze sees it: one flow, rwnd-limited, drawn as
// a time-sequence graph whose window line sits 2,896 bytes above the ACK.
func TestBuildAnalysis(t *testing.T) {
	p := build(t, "analysis-upload")
	if len(p.Table) != 1 || p.Table[0][1] != "rwnd-limited" || len(p.Charts) != 2 {
		t.Fatalf("table %v, %d charts", p.Table, len(p.Charts))
	}
	tsg := p.Charts[0]
	var ack, wnd []*float64
	for _, s := range tsg.Series {
		switch s.Label {
		case "ACK":
			ack = s.Y
		case "ACK + receive window":
			wnd = s.Y
		}
	}
	mid := len(tsg.X) / 2
	for ack[mid] == nil || wnd[mid] == nil {
		mid++
	}
	if d := *wnd[mid] - *ack[mid]; d != 2896 {
		t.Errorf("window line %g above the ACK, want 2896", d)
	}
	if !strings.Contains(p.Headlines[0], "advertises at most 2,896 bytes") {
		t.Errorf("headline %q", p.Headlines[0])
	}
	// Retransmissions appear as marks in the lossy flow.
	l := build(t, "analysis-loss")
	found := false
	for _, s := range l.Charts[0].Series {
		found = found || (s.Role == "event" && s.Label == "retransmission")
	}
	if !found {
		t.Error("no retransmission marks in the loss-limited flow")
	}
	for name, in := range map[string]string{"not json": "PK", "other schema": `{"schema":"longhaul.calc/v1"}`} {
		if _, err := BuildAnalysis(strings.NewReader(in)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
