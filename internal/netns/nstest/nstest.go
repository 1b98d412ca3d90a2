// Package nstest provides throwaway network namespaces for tests.
package nstest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/longhaul/longhaul/internal/netns"
)

// Prefix starts the name of every namespace created by New.
const Prefix = "lhtest-"

// New creates a throwaway network namespace named "lhtest-<random>" for
// t and registers a cleanup that deletes it when t and its subtests
// finish, whether they passed or not. If the process lacks the privilege
// to create namespaces (CAP_SYS_ADMIN, normally: not root), New calls
// t.Skip instead of failing. It returns the namespace name.
func New(t testing.TB) string {
	t.Helper()
	name := RandomName(t)
	if err := netns.Create(name); err != nil {
		if errors.Is(err, netns.ErrNotPermitted) {
			t.Skipf("skipping: creating network namespaces needs CAP_SYS_ADMIN (run the tests as root): %v", err)
		}
		t.Fatalf("nstest: %v", err)
	}
	t.Cleanup(func() {
		if err := netns.Delete(name); err != nil {
			t.Errorf("nstest: cleanup: %v", err)
		}
	})
	return name
}

// RandomName returns an unused-looking name "lhtest-<16 hex digits>"
// without creating anything; useful for prefixes and negative tests.
func RandomName(t testing.TB) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("nstest: random name: %v", err)
	}
	return Prefix + hex.EncodeToString(b[:])
}
