package secret

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if tok, err := ReadToken(write("good", "f00dfeedf00dfeedf00d\n")); err != nil || string(tok) != "f00dfeedf00dfeedf00d" {
		t.Errorf("good token: %q %v", tok, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ path, want string }{
		"too short": {write("short", "secret\n"), "at least 16"},
		"two words": {write("two", "f00dfeedf00d feedf00dfeed\n"), "one word"},
		"empty":     {write("empty", ""), "at least 16"},
		"too large": {write("large", strings.Repeat("a", 5000)), "larger than 4096"},
		"/dev/zero": {"/dev/zero", "not a regular file (a device)"},
		"a FIFO":    {fifo, "not a regular file (a FIFO)"},
		"directory": {dir, "not a regular file (a directory)"},
		"missing":   {filepath.Join(dir, "nope"), "no such file"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadToken(c.path); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v; want one line with %q", name, err, c.want)
			}
		case <-time.After(2 * time.Second):
			t.Errorf("%s: still reading after 2 s (the process would not even see SIGINT)", name)
		}
	}
}

func TestServerTLSBoundedAndTLS13(t *testing.T) {
	if _, _, err := ServerTLS("/dev/zero", "/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero as a certificate: %v", err)
	}
	c, err := ClientTLS("sha256:" + strings.Repeat("ab", 32))
	if err != nil || c.MinVersion != 0x0304 {
		t.Errorf("client: %v, min version %#x", err, c.MinVersion)
	}
}
