package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/longhaul/longhaul/internal/pathmodel"
)

func TestCheckKey(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{"dotted", "net.ipv4.tcp_rmem", "net.ipv4.tcp_rmem", false},
		{"slashed", "net/ipv4/tcp_rmem", "net.ipv4.tcp_rmem", false},
		{"interface with dash", "net.ipv4.conf.veth-a.forwarding", "net.ipv4.conf.veth-a.forwarding", false},
		{"traversal", "net/../../etc/passwd", "", true},
		{"empty component", "net..ipv4", "", true},
		{"space inside", "net.ipv4.tcp rmem", "", true},
		{"empty", " ", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckKey(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckKey(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("CheckKey(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestReadWrite(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "net", "ipv4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tcp_rmem"), []byte("4096\t131072\t6291456\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Read(root, "net.ipv4.tcp_rmem")
	if err != nil || got != "4096 131072 6291456" {
		t.Fatalf("Read = %q, %v; want normalised triple", got, err)
	}
	if _, err := Read(root, "net.ipv4.tcp_collapse_max_bytes"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Read of a missing key: error = %v, want ErrUnknownKey", err)
	}
	if err := Write(root, "net.ipv4.tcp_rmem", "4096 131072 33554432"); err != nil {
		t.Fatal(err)
	}
	if got, _ := Read(root, "net/ipv4/tcp_rmem"); got != "4096 131072 33554432" {
		t.Errorf("after Write, Read = %q", got)
	}
	if err := Write(root, "net.ipv4.nope", "1"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Write of a missing key: error = %v, want ErrUnknownKey", err)
	}
	vals, missing, err := ReadMany(root, []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_sack"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"net.ipv4.tcp_rmem": "4096 131072 33554432"}, vals); diff != "" {
		t.Errorf("ReadMany values (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"net.ipv4.tcp_sack"}, missing); diff != "" {
		t.Errorf("ReadMany missing (-want +got):\n%s", diff)
	}
}

func TestParseTriple(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    pathmodel.Triple
		wantErr bool
	}{
		{"tabs", "4096\t131072\t6291456", pathmodel.Triple{Min: 4096, Default: 131072, Max: 6291456}, false},
		{"spaces", " 4096  16384 4194304 ", pathmodel.Triple{Min: 4096, Default: 16384, Max: 4194304}, false},
		{"two values", "4096 131072", pathmodel.Triple{}, true},
		{"not a number", "4096 lots 6291456", pathmodel.Triple{}, true},
		{"unordered", "4096 8192 4096", pathmodel.Triple{Min: 4096, Default: 8192, Max: 4096}, true},
		{"over int", "4096 131072 2147483648", pathmodel.Triple{Min: 4096, Default: 131072, Max: 2147483648}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTriple(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseTriple(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseTriple(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func FuzzParseTriple(f *testing.F) {
	for _, s := range []string{"4096 131072 6291456", "4096\t16384\t4194304", "1 2", "-1 0 1", "9999999999999999999 1 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr, err := ParseTriple(s)
		if err == nil && (tr.Min <= 0 || tr.Min > tr.Default || tr.Default > tr.Max || tr.Max > pathmodel.MaxBuffer) {
			t.Errorf("ParseTriple(%q) accepted %+v", s, tr)
		}
	})
}

func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"net.ipv4.tcp_rmem", "net/core/rmem_max", "../x", "a..b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := CheckKey(s)
		if err != nil {
			return
		}
		p, err := Path("/proc/sys", k)
		if err != nil {
			t.Fatalf("Path rejected a checked key %q: %v", k, err)
		}
		if rel, err := filepath.Rel("/proc/sys", p); err != nil || rel == ".." || len(rel) >= 3 && rel[:3] == "../" {
			t.Errorf("key %q escapes the root: %s", s, p)
		}
	})
}

// Values as the kernel writes them, and keys a kernel can have: a sign,
// leading zeros or a 100 KB key are refused with a short error line.
func TestStrictValuesAndKeys(t *testing.T) {
	for _, ok := range []string{"0", "5", "-1", "4096 131072 6291456"} {
		if _, err := ParseInts(ok, len(strings.Fields(ok))); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"+5", "0005", "-0", "5.0", "0x10", "1e3"} {
		if _, err := ParseInt(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// Values for any key, as the emitted formats check them: words pass,
	// numbers only in the kernel's form.
	for _, ok := range []string{"4096\t131072\t6291456", "reno cubic bbr", "fq_codel", "-1", "0", "18446744073709551615"} {
		if err := CheckValue(ok); err != nil {
			t.Errorf("CheckValue(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"4096 131072 0010", "0005", "+5", "-0", "0x10", "1e3", "4096\n131072", "a\x1b[2J", strings.Repeat("1", 5000)} {
		if err := CheckValue(bad); err == nil {
			t.Errorf("CheckValue(%.40q) accepted", bad)
		} else if len(err.Error()) > 300 || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %.100q of %d bytes", err, len(err.Error()))
		}
	}
	long := "net." + strings.Repeat("a", 100<<10)
	for _, err := range []error{
		func() error { _, err := CheckKey(long); return err }(),
		func() error { _, err := ParseInt(long); return err }(),
		func() error { _, err := CheckKey("net.ipv4.x\ny"); return err }(),
	} {
		if err == nil || len(err.Error()) > 300 || strings.Contains(err.Error(), "\n") {
			t.Errorf("error %.100q of %d bytes", err, len(fmt.Sprint(err)))
		}
	}
}
