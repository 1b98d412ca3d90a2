package tun

import "encoding/binary"

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
