package tun

import (
	"fmt"
	"strings"
)

// OffloadString names the TUN_F_* flags in o.
func OffloadString(o uint) string {
	names := []struct {
		f uint
		s string
	}{{TunFCsum, "csum"}, {TunFTSO4, "tso4"}, {TunFTSO6, "tso6"}, {TunFTSOECN, "tso_ecn"}, {TunFUFO, "ufo"}, {TunFUSO4, "uso4"}, {TunFUSO6, "uso6"}}
	var parts []string
	for _, n := range names {
		if o&n.f != 0 {
			parts = append(parts, n.s)
			o &^= n.f
		}
	}
	if o != 0 {
		parts = append(parts, fmt.Sprintf("%#x", o))
	}
	return strings.Join(parts, "|")
}
