package tcpflow

import "github.com/longhaul/longhaul/internal/capture"

// stackOf guesses the TCP stack of an end from the order of the options
// in its SYN or SYN-ACK (as p0f does with more): Linux writes MSS,
// SACK-permitted, timestamps, NOP, window scale; Windows MSS, NOP, window
// scale, NOP, NOP, SACK-permitted; macOS and FreeBSD MSS, NOP, window
// scale, NOP, NOP, timestamps, SACK-permitted; Solaris NOP, NOP,
// timestamps, MSS, NOP, window scale. "" when unknown: the fixes then
// name Linux settings only as Linux's.
func stackOf(o *capture.Options) string {
	l, n := o.Layout, o.NKinds
	top := func(k uint8) uint64 { // the first k kinds
		if n < k {
			return 0
		}
		return l >> (8 * uint64(n-k))
	}
	switch {
	case top(5) == 0x0204080103, n == 6 && l == 0x020101040103:
		return "linux"
	case n == 6 && l == 0x020103010104:
		return "windows"
	case top(7) == 0x02010301010804:
		return "bsd"
	case top(6) == 0x010108020103:
		return "solaris"
	}
	return ""
}
