package apply

import (
	"bytes"
	"testing"

	"github.com/longhaul/longhaul/internal/rtnl"
)

// FuzzDecodeJournal: any bytes either fail the checksum/parse with an
// error or give a journal that encodes back to a journal that decodes the
// same; never a panic.
func FuzzDecodeJournal(f *testing.F) {
	good, _ := encodeJournal(&Journal{Schema: JournalSchema, ID: "0001", State: StateApplied,
		Sysctls: []SysctlStep{{"net.ipv4.tcp_rmem", "4096\t131072\t6291456\n", "4096 131072 62914560"}},
		Routes:  []RouteStep{{Before: rtnl.Route{Family: "inet", Dst: "203.0.113.0/24"}, After: rtnl.Route{Family: "inet", Dst: "203.0.113.0/24", Gateway: "10.0.0.1", Dev: "eth0", InitCwnd: 20}}},
		Files:   []FileStep{{Path: "/etc/sysctl.d/90-longhaul.conf", Mode: 0o644, After: []byte("x = 1\n"), NewDirs: []string{"/etc/sysctl.d"}}}})
	f.Add(good)
	f.Add([]byte(trailer + "00\n"))
	f.Add([]byte("{}\n" + trailer + sumHex([]byte("{}\n")) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := decodeJournal(data)
		if err != nil {
			return
		}
		again, err := encodeJournal(j)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		j2, err := decodeJournal(again)
		if err != nil {
			t.Fatalf("decode of re-encoded journal: %v", err)
		}
		if b1, _ := encodeJournal(j2); !bytes.Equal(b1, again) {
			t.Fatalf("journal does not round-trip")
		}
	})
}

// FuzzNetworkd: the .network [Match] reader and the drop-in splitter take
// any file without panicking, and a drop-in they render splits back into
// the same sections.
func FuzzNetworkd(f *testing.F) {
	f.Add([]byte("[Match]\nName=eth0\n\n[Network]\nDHCP=yes\n"), "eth0")
	f.Add([]byte("[Match]\nName=!en* wl?0\nName=\n"), "wlan0")
	f.Add([]byte(header("0001", "s", "x")+"\n[Route]\nDestination=203.0.113.0/24\nGateway=_dhcp4\nInitialCongestionWindow=20\n\n[Route]\nGateway=10.0.0.1\n"), "eth0")
	f.Add([]byte("[Route\nDestination=\n[Route]]\n"), "[")
	f.Fuzz(func(t *testing.T, data []byte, dev string) {
		_ = matchesName(data, dev)
		keys, blocks := routeBlocks(data)
		if len(keys) != len(blocks) {
			t.Fatalf("%d keys for %d blocks", len(keys), len(blocks))
		}
		if !ours(data) {
			return
		}
		out, err := renderNetworkdDropIn(data, "f", "0002", "s", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		k2, b2 := routeBlocks(out)
		if len(k2) != len(keys) {
			t.Fatalf("sections %q became %q", keys, k2)
		}
		for _, k := range keys {
			if b2[k] != blocks[k] {
				t.Fatalf("section %q: %q became %q", k, blocks[k], b2[k])
			}
		}
	})
}
