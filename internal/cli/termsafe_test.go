package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileText is what a far host or a crafted file puts in a name: an OSC
// 52 clipboard write and an OSC window title (ended by BEL and by ST), CSI
// colours, a C1 CSI (U+009B, ESC [ to a VT terminal) and a carriage
// return that overwrites the line.
const hostileText = "far\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;owned\x1b\\\x1b[31;1m\u009b2J\rok"

// terminalControl names the first byte or code point of out that a
// terminal would obey as a control ("" if none): C0 but newline and tab,
// DEL, C1, or a byte that is not UTF-8 (0x80-0x9F are C1 to an 8-bit
// terminal).
func terminalControl(out string) string {
	if !utf8.ValidString(out) {
		return "a byte that is not UTF-8"
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			return fmt.Sprintf("%U", r)
		}
	}
	return ""
}

// hostileSnapshot is a real audit --json document whose hostname, kernel
// release and congestion control are hostileText.
func hostileSnapshot(t *testing.T) string {
	t.Helper()
	out, stderr, err := run(t, "audit", "--json", "--root", hosts+"ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s")
	if out == "" {
		t.Fatalf("audit --json: %v: %s", err, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	host := doc["host"].(map[string]any)
	host["hostname"] = hostileText
	host["kernel"].(map[string]any)["release"] = "5.4.0-" + hostileText
	sys := host["sysctls"].(map[string]any)
	sys["kernel.hostname"], sys["kernel.osrelease"] = hostileText, "5.4.0-"+hostileText
	sys["net.ipv4.tcp_congestion_control"] = "cubic" + hostileText
	sys["net.ipv4.tcp_available_congestion_control"] = "reno cubic" + hostileText
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "far.json")
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// runShown runs longhaul and returns all a terminal would be shown:
// stdout, stderr and the error line main prints.
func runShown(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := run(t, args...)
	var msg bytes.Buffer
	ExitCode(err, &msg)
	return stdout + stderr + msg.String()
}

// A snapshot from a far host (ssh far longhaul audit --json | longhaul
// plan --snapshot -) cannot write to the admin's terminal through the
// names it carries, in any output of plan or audit; its names are still
// shown, escaped.
func TestSnapshotNamesCannotDriveTheTerminal(t *testing.T) {
	snap := hostileSnapshot(t)
	for _, args := range [][]string{
		{"plan", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"plan", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s", "--json"},
		{"plan", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s", "--role", "client"},
		{"audit", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"audit", "--snapshot", snap},
		{"audit", "--snapshot", snap, "--json"},
		{"audit", "--snapshot", snap, "--rtt", "200ms", "--rate", "1Gbit/s", "--fail-on", "warn"},
	} {
		shown := runShown(t, args...)
		if c := terminalControl(shown); c != "" {
			t.Errorf("longhaul %s: the output carries %s:\n%q", strings.Join(args[2:], " "), c, shown)
		}
		if !strings.Contains(shown, `far\u001b]52;c;`) {
			t.Errorf("longhaul %s: the host's name is not shown escaped:\n%s", strings.Join(args[2:], " "), shown)
		}
	}
}

// Lab results whose labels (a case, a series, a column, a host) carry
// control sequences print as tables without them.
func TestLabLabelsCannotDriveTheTerminal(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "results", "testdata", "causes-quick.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	esc, _ := json.Marshal(hostileText)
	inner := strings.Trim(string(esc), `"`)
	text := string(src)
	for _, label := range []string{"random loss 0.01%", "one stream (test)", "50 ms x 100 Mbit/s", `"hostname":"vm"`, "policer at half the rate, 64 KB burst"} {
		if !strings.Contains(text, label) {
			t.Fatalf("the results no longer hold %q", label)
		}
		if strings.HasPrefix(label, `"`) {
			text = strings.ReplaceAll(text, label, `"hostname":"`+inner+`"`)
			continue
		}
		text = strings.ReplaceAll(text, label, label+inner)
	}
	name := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	shown := runShown(t, "report", "--text", name)
	if c := terminalControl(shown); c != "" {
		t.Errorf("report --text: the output carries %s:\n%q", c, shown)
	}
	if !strings.Contains(shown, `random loss 0.01%far\u001b]52;c;`) {
		t.Errorf("report --text: the label is not shown escaped:\n%s", shown)
	}
}
