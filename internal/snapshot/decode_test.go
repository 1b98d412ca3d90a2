package snapshot

import (
	"testing"

	"github.com/longhaul/longhaul/internal/badinput"
)

func TestDecode(t *testing.T) {
	for _, c := range []struct {
		name, in string
		host     string
		page     int64
		bad      bool
	}{
		{"audit --json", `{"schema":"longhaul.audit/v1","host":{"source":"live","hostname":"far","sysctls":{},"page_size":16384}}`, "far", 16384, false},
		{"bare snapshot, no page size", `{"source":"live","hostname":"near","sysctls":{"net.ipv4.tcp_rmem":"4096 131072 6291456"}}`, "near", 4096, false},
		{"not JSON", `line 1`, "", 0, true},
		{"JSON without a snapshot", `{"schema":"longhaul.plan/v1"}`, "", 0, true},
		{"an array", `[1,2]`, "", 0, true},
	} {
		s, err := Decode([]byte(c.in))
		if c.bad {
			if err == nil || !badinput.Is(err) {
				t.Errorf("%s: err %v, want bad input", c.name, err)
			}
			continue
		}
		if err != nil || s.Hostname != c.host || s.PageSize != c.page {
			t.Errorf("%s: %+v, %v", c.name, s, err)
		}
	}
}
