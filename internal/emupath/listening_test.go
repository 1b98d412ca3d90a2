package emupath

import (
	"strings"
	"testing"
)

func TestParseListening(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 020012C6:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 020012C6:1F90 010012C6:A1B2 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0
`
	for port, want := range map[int]int{0: 2, 8080: 1, 8081: 1, 5201: 0} {
		got, err := parseListening(strings.NewReader(table), port)
		if err != nil || got != want {
			t.Errorf("port %d: %d, %v; want %d", port, got, err, want)
		}
	}
}
