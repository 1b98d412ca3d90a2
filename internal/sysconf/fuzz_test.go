package sysconf

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/.

func FuzzParseSysctlFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data string) {
		as, probs := ParseSysctlFile("fuzz.conf", strings.NewReader(data))
		lines := strings.Count(data, "\n") + 1
		if len(as)+len(probs) > lines {
			t.Fatalf("%d assignments and %d problems from %d lines", len(as), len(probs), lines)
		}
		prev := 0
		for _, a := range as {
			if a.Key == "" {
				t.Fatalf("empty key in %+v", a)
			}
			if a.Key != strings.TrimSpace(a.Key) || strings.ContainsFunc(a.Key, unicode.IsSpace) {
				t.Fatalf("key %q contains white space", a.Key)
			}
			if strings.Contains(a.Key, "=") {
				t.Fatalf("key %q contains '='", a.Key)
			}
			if a.Value != strings.Join(strings.Fields(a.Value), " ") {
				t.Fatalf("value %q not normalised", a.Value)
			}
			if a.Glob != strings.ContainsAny(a.Key, "*?[") {
				t.Fatalf("Glob = %v for key %q", a.Glob, a.Key)
			}
			if a.File != "fuzz.conf" || a.Line <= prev || a.Line > lines {
				t.Fatalf("bad position %s:%d (previous line %d, %d lines)", a.File, a.Line, prev, lines)
			}
			prev = a.Line
		}
		for _, p := range probs {
			if !strings.HasPrefix(p, "fuzz.conf:") || strings.Contains(p, "\n") {
				t.Fatalf("bad problem %q", p)
			}
		}
		// Effective and Conflicts must agree with the assignments.
		c := Config{Assignments: as}
		eff := c.Effective()
		for _, a := range as {
			if _, ok := eff[a.Key]; !ok {
				t.Fatalf("key %q missing from Effective()", a.Key)
			}
		}
		for i, cf := range c.Conflicts() {
			if len(cf.Assignments) < 2 {
				t.Fatalf("conflict %q has %d assignments", cf.Key, len(cf.Assignments))
			}
			if last := cf.Assignments[len(cf.Assignments)-1]; last != eff[cf.Key] {
				t.Fatalf("conflict %q ends with %+v, Effective has %+v", cf.Key, last, eff[cf.Key])
			}
			if i > 0 && c.Conflicts()[i-1].Key >= cf.Key {
				t.Fatalf("conflicts not sorted at %q", cf.Key)
			}
		}
	})
}

func FuzzParseMeminfo(f *testing.F) {
	f.Fuzz(func(t *testing.T, data string) {
		m, err := parseMeminfo(strings.NewReader(data))
		if err != nil {
			if m != nil {
				t.Fatalf("non-nil map with error %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// Writing the result back without units must parse to the same map.
		var b strings.Builder
		for k, v := range m {
			if k == "" || k != strings.TrimSpace(k) || strings.Contains(k, ":") {
				t.Fatalf("bad key %q", k)
			}
			fmt.Fprintf(&b, "%s: %d\n", k, v)
		}
		again, err := parseMeminfo(strings.NewReader(b.String()))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", b.String(), err)
		}
		if len(again) != len(m) {
			t.Fatalf("re-parse has %d keys, want %d", len(again), len(m))
		}
		for k, v := range m {
			if again[k] != v {
				t.Fatalf("re-parse %s = %d, want %d", k, again[k], v)
			}
		}
	})
}

func FuzzParseKernelRelease(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKernelRelease(s)
		if err != nil {
			if k != (Kernel{}) {
				t.Fatalf("non-zero Kernel %+v with error %v", k, err)
			}
			if !strings.HasPrefix(err.Error(), "sysconf: ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		if k.Release == "" || k.Release != strings.TrimSpace(s) {
			t.Fatalf("Release = %q for input %q", k.Release, s)
		}
		if k.Major < 0 || k.Minor < 0 || k.Patch < 0 {
			t.Fatalf("negative component in %+v", k)
		}
		if !k.AtLeast(k.Major, k.Minor) {
			t.Fatalf("%+v not AtLeast itself", k)
		}
		if k.Minor > 0 && !k.AtLeast(k.Major, k.Minor-1) {
			t.Fatalf("%+v not AtLeast an older minor", k)
		}
		if k.Major > 0 && !k.AtLeast(k.Major-1, k.Minor+1) {
			t.Fatalf("%+v not AtLeast an older major", k)
		}
		canon := fmt.Sprintf("%d.%d.%d", k.Major, k.Minor, k.Patch)
		again, err := ParseKernelRelease(canon)
		if err != nil {
			t.Fatalf("re-parse %q: %v", canon, err)
		}
		if again.Major != k.Major || again.Minor != k.Minor || again.Patch != k.Patch {
			t.Fatalf("re-parse %q = %+v, want %+v", canon, again, k)
		}
	})
}
