package probe

import (
	"bytes"
	"testing"
)

// FuzzReadTargets: a targets file from any bytes is read or refused,
// never a panic; what is read is one target per dialled address, each
// in ParseTarget's form.
func FuzzReadTargets(f *testing.F) {
	f.Add([]byte("# fra's targets\nsin.example.net:9978 sha256:3f5a000000000000000000000000000000000000000000000000000000000000\n198.51.100.7\n[2001:db8::1]:7001\n"))
	f.Add([]byte("a.example\na.example:9978\n"))
	f.Add([]byte("\n\n# nothing\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := ReadTargets(bytes.NewReader(b))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, tg := range ts {
			again, err := ParseTarget(tg.Addr)
			if err != nil || again != tg.Addr {
				t.Fatalf("target %q read, but ParseTarget gives %q, %v", tg.Addr, again, err)
			}
			if seen[tg.Addr] {
				t.Fatalf("target %q read twice", tg.Addr)
			}
			seen[tg.Addr] = true
		}
	})
}
