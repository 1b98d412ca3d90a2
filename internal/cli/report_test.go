package cli

import (
	"os"
	"path/filepath"
	"regexp"
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

// Two parts of one lab matrix make one report and one set of tables;
// parts of different experiments, or a file not from the lab, do not.
func TestReportMergesLabParts(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "results", "testdata", "causes-quick.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var parts []string
	for _, p := range []string{"part1", "part2"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, filepath.Join(dir, p, "results.jsonl"))
		if err := os.WriteFile(parts[len(parts)-1], src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, err := run(t, append([]string{"report", "--text"}, parts...)...)
	if err != nil {
		t.Fatalf("report --text: %v: %s", err, stderr)
	}
	// Each part has a valid random-loss and policer run (test named the
	// policer, not the random loss): both parts' runs are counted.
	for _, want := range []string{"Named right, per case and tool", "policer at half the rate, 64 KB burst  2/2", "random loss 0.01%                      0/2"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tables lack %q:\n%s", want, stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^all +4 runs +2/4 `).MatchString(stdout) {
		t.Errorf("the total is not of both parts' 4 valid runs:\n%s", stdout)
	}
	out := filepath.Join(dir, "merged", "causes.html")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run(t, append([]string{"report", "-o", out}, parts...)...); err != nil {
		t.Fatalf("report -o: %v: %s", err, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"all","4 runs","2/4"`) {
		t.Errorf("the merged report's score is not of both parts' 4 valid runs")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{parts, "name the report of 2 results files with -o"},
		{[]string{parts[0], filepath.Join("..", "report", "testdata", "buffers-quick.jsonl"), "--text"}, "results of different experiments: part 2 is scenario \"buffers\""},
		{[]string{filepath.Join("..", "report", "testdata", "analysis-loss.json"), "--text"}, "take results written by longhaul lab"},
		{[]string{parts[0], "--text", "-o", out}, "give -o or --text, not both"},
	} {
		_, stderr, err := run(t, append([]string{"report"}, c.args...)...)
		if err == nil || !strings.Contains(stderr+err.Error(), c.want) {
			t.Errorf("report %v: %v, %s; want %q", c.args, err, stderr, c.want)
		}
	}
}
