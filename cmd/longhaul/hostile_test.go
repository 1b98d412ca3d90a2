package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The documented pipeline `ssh far longhaul audit --json | longhaul plan
// --snapshot - --emit FORMAT`, with a far host that lies about its name:
// every format is refused (exit 2) and nothing is written to stdout (a
// newline in the name put a live kernel.core_pattern line into sysctl.d
// and a play into the playbook).
func TestHostileSnapshotThroughThePipeline(t *testing.T) {
	bin := binary(t)
	doc := farSnapshot(t, bin)
	doc["host"].(map[string]any)["hostname"] = "far\nkernel.core_pattern=|/bin/sh -c reboot\n- hosts: all"
	snap, _ := json.Marshal(doc)
	for _, format := range []string{"sysctl.d", "ansible", "tuned", "k8s", "k8s-pod", "networkd", "nm", "nmstate"} {
		cmd := exec.Command(bin, "plan", "--snapshot", "-", "--rtt", "200ms", "--rate", "1Gbit/s", "--dst", "203.0.113.0/24", "--emit", format)
		cmd.Stdin = bytes.NewReader(snap)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		_ = cmd.Run()
		if cmd.ProcessState.ExitCode() != 2 || o.Len() != 0 || strings.Count(e.String(), "\n") != 1 {
			t.Errorf("--emit %s: exit %d, %d bytes written, stderr %q", format, cmd.ProcessState.ExitCode(), o.Len(), e.String())
		}
	}
}

// farSnapshot is the snapshot `longhaul audit --json` gives of a fixture
// host, decoded for a test to make it lie before piping it on.
func farSnapshot(t *testing.T, bin string) map[string]any {
	t.Helper()
	out, errOut, code := exe(t, bin, "audit", "--json", "--root", "../../testdata/hosts/ubuntu-2004", "--rtt", "200ms", "--rate", "1Gbit/s")
	if code > 3 || out == "" {
		t.Fatalf("audit: exit %d: %s", code, errOut)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}
