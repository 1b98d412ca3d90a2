package snapshot

import (
	"encoding/json"
	"testing"
)

// FuzzDecode: a snapshot from any bytes (plan --snapshot and audit
// --snapshot read what a far host sends) is decoded or refused, never a
// panic, and what is decoded encodes and decodes again.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"host":{"hostname":"far","sysctls":{"net.ipv4.tcp_rmem":"4096 131072 6291456"},"page_size":4096}}`))
	f.Add([]byte(`{"hostname":"bare","sysctls":{"net.ipv4.tcp_wmem":"4096 16384 4194304"}}`))
	f.Add([]byte(`{"host":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		if s == nil || s.PageSize == 0 {
			t.Fatalf("decoded %+v without a page size", s)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("a decoded snapshot does not encode: %v", err)
		}
		if _, err := Decode(again); err != nil && s.Sysctls != nil {
			t.Fatalf("a decoded snapshot does not decode again: %v\n%s", err, again)
		}
	})
}
