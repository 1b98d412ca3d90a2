package sysconf

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sampleMeminfo = `MemTotal:       16318240 kB
MemFree:         1022128 kB
MemAvailable:   10543876 kB
Buffers:          618528 kB
Cached:          8802212 kB
SwapTotal:             0 kB
Hugepagesize:       2048 kB
HugePages_Total:       0
HugePages_Free:        0
Committed_AS:   12345678 kB
`

func TestParseMeminfo(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    map[string]int64
		wantErr string
	}{
		{
			name:  "typical",
			input: sampleMeminfo,
			want: map[string]int64{
				"MemTotal":        16318240 * 1024,
				"MemFree":         1022128 * 1024,
				"MemAvailable":    10543876 * 1024,
				"Buffers":         618528 * 1024,
				"Cached":          8802212 * 1024,
				"SwapTotal":       0,
				"Hugepagesize":    2048 * 1024,
				"HugePages_Total": 0,
				"HugePages_Free":  0,
				"Committed_AS":    12345678 * 1024,
			},
		},
		{
			name:  "blank lines and CRLF tolerated",
			input: "\nMemTotal: 4 kB\r\n\nHugePages_Rsvd: 7\r\n",
			want:  map[string]int64{"MemTotal": 4096, "HugePages_Rsvd": 7},
		},
		{
			name:  "empty input",
			input: "",
			want:  map[string]int64{},
		},
		{
			name:    "missing colon",
			input:   "MemTotal 16318240 kB\n",
			wantErr: `line 1: want "Key: value [kB]", got "MemTotal 16318240 kB"`,
		},
		{
			name:    "missing value",
			input:   "MemTotal: 1 kB\nMemFree:\n",
			wantErr: `line 2: want "Key: value [kB]", got "MemFree:"`,
		},
		{
			name:    "not a number",
			input:   "MemTotal: lots kB\n",
			wantErr: `line 1: MemTotal value "lots": invalid syntax`,
		},
		{
			name:    "unknown unit",
			input:   "MemTotal: 16 MB\n",
			wantErr: `line 1: MemTotal: unknown unit "MB"`,
		},
		{
			name:    "kB overflow",
			input:   "MemTotal: 9223372036854775807 kB\n",
			wantErr: `line 1: MemTotal value 9223372036854775807 kB: value out of range`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMeminfo(strings.NewReader(tt.input))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("ParseMeminfo error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseMeminfo: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseMeminfo mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadMemTotal(t *testing.T) {
	tests := []struct {
		name    string
		tree    tree
		want    int64
		wantErr string // after the root prefix
	}{
		{name: "typical", tree: tree{"/meminfo": sampleMeminfo}, want: 16318240 * 1024},
		{name: "no MemTotal", tree: tree{"/meminfo": "MemFree: 1 kB\n"}, wantErr: "/meminfo: no MemTotal line"},
		{name: "malformed", tree: tree{"/meminfo": "MemTotal: x kB\n"}, wantErr: `/meminfo: line 1: MemTotal value "x": invalid syntax`},
		{name: "missing file", tree: tree{"/stat": ""}, wantErr: "/meminfo: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.tree)
			got, err := ReadMemTotal(root)
			if tt.wantErr != "" {
				if err == nil || !strings.HasSuffix(err.Error(), root+tt.wantErr) || !strings.HasPrefix(err.Error(), "sysconf: ") {
					t.Fatalf("ReadMemTotal error = %v, want sysconf: ... %s%s", err, root, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadMemTotal: %v", err)
			}
			if got != tt.want {
				t.Errorf("ReadMemTotal = %d, want %d", got, tt.want)
			}
		})
	}
}
