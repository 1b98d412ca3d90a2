package tun

import (
	"encoding/binary"
	"net/netip"
)

// Internet checksum helpers (RFC 1071). Sums are kept in a uint64
// accumulator of 16-bit big-endian words and folded with end-around carry,
// so a folded sum is 0 only when every word was 0, as in the kernel's
// csum_fold.

// csumAdd adds the big-endian 16-bit words of b to acc (an odd trailing
// byte is padded with zero).
func csumAdd(acc uint64, b []byte) uint64 {
	for len(b) >= 8 {
		acc += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		acc += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		acc += uint64(b[0]) << 8
	}
	return acc
}

// csumFold folds acc to 16 bits with end-around carry.
func csumFold(acc uint64) uint16 {
	for acc > 0xffff {
		acc = (acc >> 16) + (acc & 0xffff)
	}
	return uint16(acc)
}

// pseudoHeaderSum returns the folded (not complemented) sum of the TCP/UDP
// pseudo-header for src, dst, proto and the L4 length: exactly what the
// kernel stores in the checksum field of a CHECKSUM_PARTIAL packet
// (~tcp_v4_check(len, saddr, daddr, 0), ~csum_ipv6_magic(...)).
func pseudoHeaderSum(src, dst netip.Addr, proto uint8, l4len int) uint16 {
	var acc uint64
	if src.Is4() {
		a, b := src.As4(), dst.As4()
		acc = csumAdd(acc, a[:])
		acc = csumAdd(acc, b[:])
	} else {
		a, b := src.As16(), dst.As16()
		acc = csumAdd(acc, a[:])
		acc = csumAdd(acc, b[:])
	}
	acc += uint64(proto) + uint64(uint32(l4len)>>16) + uint64(uint16(l4len))
	return csumFold(acc)
}

// adjustLen replaces oldLen by newLen in a folded partial sum, the way
// tcp_gso_segment (csum_add(check, ~oldlen + newlen)) and
// __udp_gso_segment (csum16_add(csum16_sub(check, uh->len), newlen)) do.
func adjustLen(check uint16, oldLen, newLen uint16) uint16 {
	return csumFold(uint64(check) + uint64(^oldLen) + uint64(newLen))
}

// ipv4HeaderChecksum returns the checksum of an IPv4 header whose checksum
// field (bytes 10-11) is treated as zero (ip_send_check).
func ipv4HeaderChecksum(h []byte) uint16 {
	acc := csumAdd(0, h[:10])
	acc = csumAdd(acc, h[12:])
	return ^csumFold(acc)
}
