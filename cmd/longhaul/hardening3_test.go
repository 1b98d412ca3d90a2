package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

// The README's pipe `ssh far longhaul audit --json | longhaul plan
// --snapshot -`, with a far host whose name, kernel release and
// congestion control carry an OSC 52 clipboard write, an OSC title, CSI
// colours and a C1 CSI: nothing of it reaches the admin's terminal as a
// control, on stdout, on stderr or in the error line, whichever command
// reads the snapshot.
func TestFarSnapshotCannotWriteToTheTerminal(t *testing.T) {
	bin := binary(t)
	out, errOut, code := exe(t, bin, "audit", "--json", "--root", "../../testdata/hosts/ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s")
	if code > 3 || out == "" {
		t.Fatalf("audit: exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	const evil = "far\x1b]52;c;cm0gLXJmIH4K\x07\x1b]2;owned\x07\x1b[41m\u009b2J"
	host := doc["host"].(map[string]any)
	host["hostname"] = evil
	host["kernel"].(map[string]any)["release"] = "6.1.0-" + evil
	sys := host["sysctls"].(map[string]any)
	sys["kernel.hostname"], sys["kernel.osrelease"], sys["net.ipv4.tcp_congestion_control"] = evil, "6.1.0-"+evil, "cubic"+evil
	snap, _ := json.Marshal(doc)
	for _, args := range [][]string{
		{"plan", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"audit", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s"},
		{"plan", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24", "--emit", "sysctl.d"},
	} {
		cmd := exec.Command(bin, args...)
		cmd.Stdin = bytes.NewReader(snap)
		stdout, stderr, code := runCmd(t, cmd)
		shown := stdout + stderr
		if code > 3 || shown == "" {
			t.Errorf("%v: exit %d, nothing shown", args, code)
		}
		if !utf8.ValidString(shown) {
			t.Errorf("%v: output is not UTF-8: %q", args, shown)
			continue
		}
		for _, r := range shown {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
				t.Errorf("%v: the output carries %U:\n%q", args, r, shown)
				break
			}
		}
		if strings.Contains(strings.Join(args, " "), "emit") {
			continue // refused: the name is not one a host can have
		}
		if !strings.Contains(shown, `far\u001b]52;c;`) {
			t.Errorf("%v: the far host's name is not shown, escaped:\n%s", args, shown)
		}
	}
}
