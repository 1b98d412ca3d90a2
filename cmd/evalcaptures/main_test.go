package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
	ct "github.com/longhaul/longhaul/internal/capture/capturetest"
)

// A corpus of one built capture: the evaluator finds the flow, accepts
// or rejects its verdict as the labels say, and counts what is absent
// or changed.
func TestEvaluate(t *testing.T) {
	c := ct.NewConv(ct.NewWriter(ct.Format{}, capture.LinkEthernet), "198.18.0.1:50000", "198.18.0.2:80")
	c.Handshake(ct.Opts{}.MSS(1460).SACKOK().WScale(7), ct.Opts{}.MSS(1460).SACKOK().WScale(7), 20*time.Millisecond, 50*time.Microsecond)
	c.Data(ct.Client, 300)
	c.Advance(20 * time.Millisecond)
	c.AckAll(ct.Server)
	c.Advance(300 * time.Millisecond)
	c.Data(ct.Server, 2000)
	c.Advance(20 * time.Millisecond)
	c.AckAll(ct.Client)
	root := t.TempDir()
	file := filepath.Join(root, "owner+repo", "caps", "one.pcap")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, c.W.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.W.Bytes())
	sha := hex.EncodeToString(sum[:])
	line := func(path, sha, expect, wrong string) string {
		return strings.Join([]string{"owner/repo", "0000", path, sha, "198.18.0.2:80>198.18.0.1:50000", expect, "-", wrong, "-", "built"}, "\t")
	}
	manifest := filepath.Join(root, "m.tsv")
	body := "# comment\n" + strings.Join([]string{
		line("caps/one.pcap", sha, "app-limited", "unknown"),
		line("caps/one.pcap", sha, "rwnd-limited", "app-limited"),
		line("caps/absent.pcap", sha, "app-limited", "-"),
		line("caps/one.pcap", sha, "slow-start", "-"),
	}, "\n") + "\n"
	if err := os.WriteFile(manifest, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	labels, err := readManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := run(&out, labels, root, false, false)
	got := out.String()
	if code != 1 || !strings.Contains(got, "score: 1/3 flows accepted (33.3%), 1 wrong, 0 with invariant violations, 1 labels whose capture is absent") {
		t.Errorf("exit %d, output:\n%s", code, got)
	}
	if !strings.Contains(got, "WRONG verdict app-limited") || !strings.Contains(got, "verdict app-limited not accepted") {
		t.Errorf("misses not listed:\n%s", got)
	}
	// A file that changed is not judged against labels written for another.
	if err := os.WriteFile(file, append(c.W.Bytes(), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	run(&out, labels[:1], root, false, false)
	if !strings.Contains(out.String(), "another version of the file") {
		t.Errorf("changed file not caught:\n%s", out.String())
	}
}

func TestManifestErrors(t *testing.T) {
	f := filepath.Join(t.TempDir(), "m.tsv")
	if err := os.WriteFile(f, []byte("a\tb\tc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readManifest(f); err == nil || !strings.Contains(err.Error(), "want 10") {
		t.Errorf("error %v, want one naming the field count", err)
	}
}

// The manifest in the repository parses and names at least 60 flows from
// at least 4 sources.
func TestRepositoryManifest(t *testing.T) {
	labels, err := readManifest(filepath.Join("..", "..", "testdata", "corpus", "manifest.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]bool{}
	for _, l := range labels {
		sources[l.source] = true
		if len(l.expect) != 1 || len(l.sha) != 64 || l.why == "" {
			t.Errorf("line %d: want one expected verdict, a sha256 and a reason", l.line)
		}
	}
	if len(labels) < 60 || len(sources) < 4 {
		t.Errorf("%d flows from %d sources, want >= 60 from >= 4", len(labels), len(sources))
	}
}
