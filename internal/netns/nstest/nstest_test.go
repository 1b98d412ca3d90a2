package nstest_test

import (
	"strings"
	"testing"

	"github.com/longhaul/longhaul/internal/netns"
	"github.com/longhaul/longhaul/internal/netns/nstest"
)

func TestNewCreatesAndCleansUp(t *testing.T) {
	var name string
	t.Run("sub", func(t *testing.T) {
		name = nstest.New(t)
		if !strings.HasPrefix(name, nstest.Prefix) {
			t.Errorf("name %q lacks prefix %q", name, nstest.Prefix)
		}
		if !netns.Exists(name) {
			t.Errorf("namespace %q does not exist", name)
		}
		if err := netns.Do(name, func() error { return nil }); err != nil {
			t.Errorf("Do: %v", err)
		}
	})
	if name == "" {
		t.Skip("sub-test skipped (no privileges)")
	}
	if netns.Exists(name) {
		t.Errorf("namespace %q survived its test", name)
		netns.Delete(name)
	}
}

func TestRandomNameUnique(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		n := nstest.RandomName(t)
		if seen[n] {
			t.Fatalf("duplicate name %q", n)
		}
		seen[n] = true
		if len(n) > 64 {
			t.Fatalf("name %q too long", n)
		}
	}
}
