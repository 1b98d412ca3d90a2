package tun

import (
	"encoding/binary"
)

// AppendRun appends to dst a frame carrying only segments first ..
// first+count-1 of the super-packet frame, and returns the extended slice.
// frame is not modified, so several runs can be cut from one buffer. With
// enough capacity in dst it does not allocate. See the package
// documentation for the rules (they follow tcp_gso_segment,
// __udp_gso_segment, inet_gso_segment and ipv6_gso_segment). On error dst
// is returned unchanged.
func AppendRun(dst, frame []byte, first, count int) ([]byte, error) {
	info, err := Inspect(frame)
	if err != nil {
		return dst, err
	}
	return info.AppendRun(dst, frame, first, count)
}

// AppendRun is AppendRun for a frame already inspected: i must be what
// Inspect returned for frame.
func (i Info) AppendRun(dst, frame []byte, first, count int) ([]byte, error) {
	n := i.NumSegs
	switch {
	case len(frame) != VirtioNetHdrLen+i.IPLen || i.HeaderLen > i.IPLen || n < 1:
		return dst, malformed("frame of %d bytes does not match its Info (IP length %d)", len(frame), i.IPLen)
	case count < 1 || first < 0 || first > n-count:
		return dst, malformed("run of %d segments from %d is outside the %d segments of the frame", count, first, n)
	case first == 0 && count == n:
		// The whole frame survives: pass it on unchanged.
		return append(dst, frame...), nil
	case i.Hdr.Flags&FlagNeedsCsum == 0:
		return dst, unsupported("cannot split a %s super-packet without NEEDS_CSUM", GSOTypeString(i.Hdr.GSOType))
	case i.Proto != ProtoTCP && i.Proto != ProtoUDP:
		return dst, malformed("cannot split protocol %d", i.Proto)
	}
	last := first + count - 1
	payOff := first * i.SegSize
	payLen := (count-1)*i.SegSize + i.SegPayload(last)
	hl := i.HeaderLen
	ipMin, l4Min := 20, 8
	if i.IPVersion == 6 {
		ipMin = 40
	}
	if i.Proto == ProtoTCP {
		l4Min = 20
	}
	if i.IPHeaderLen < ipMin || i.L4HeaderLen < l4Min || i.IPHeaderLen+i.L4HeaderLen != hl ||
		i.SegSize < 1 || payLen < 0 || hl+payOff+payLen > i.IPLen {
		return dst, malformed("Info does not describe a splittable frame")
	}

	start := len(dst)
	dst = append(dst, frame[:VirtioNetHdrLen+hl]...)
	dst = append(dst, frame[VirtioNetHdrLen+hl+payOff:VirtioNetHdrLen+hl+payOff+payLen]...)
	out := dst[start:]

	// virtio_net_hdr: a single segment is a plain packet (GSO_NONE), which
	// the kernel also makes of a GSO frame whose payload fits in gso_size.
	// hdr_len is set to the real header length (the kernel hands out
	// skb_headlen, which may include payload).
	h := i.Hdr
	if count == 1 {
		h.GSOType, h.GSOSize = GSONone, 0
	}
	h.HdrLen = uint16(hl)
	h.put(out)

	ip := out[VirtioNetHdrLen:]
	ipLen := hl + payLen
	if i.IPVersion == 4 {
		// inet_gso_segment: tot_len per segment, id incremented per
		// segment (no SKB_GSO_TCP_FIXEDID from a virtio header), header
		// checksum recomputed (ip_send_check).
		binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
		binary.BigEndian.PutUint16(ip[4:], binary.BigEndian.Uint16(ip[4:])+uint16(first))
		binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:i.IPHeaderLen]))
	} else {
		// ipv6_gso_segment: payload_len per segment (extension headers
		// are copied unchanged).
		binary.BigEndian.PutUint16(ip[4:], uint16(ipLen-40))
	}

	l4 := ip[i.IPHeaderLen:]
	l4Len := uint16(ipLen - i.IPHeaderLen)
	switch i.Proto {
	case ProtoTCP:
		// tcp_gso_segment: seq advances by gso_size per segment; FIN and
		// PSH stay on the last segment only, CWR on the first only; the
		// pseudo-header partial checksum is adjusted from the old TCP
		// length to the new one.
		binary.BigEndian.PutUint32(l4[4:], binary.BigEndian.Uint32(l4[4:])+uint32(payOff))
		if last < n-1 {
			l4[13] &^= TCPFlagFIN | TCPFlagPSH
		}
		if first > 0 {
			l4[13] &^= TCPFlagCWR
		}
		oldLen := uint16(i.IPLen - i.IPHeaderLen)
		binary.BigEndian.PutUint16(l4[16:], adjustLen(binary.BigEndian.Uint16(l4[16:]), oldLen, l4Len))
	case ProtoUDP:
		// __udp_gso_segment: uh->len per segment and the partial checksum
		// adjusted from the old uh->len to the new one.
		oldLen := binary.BigEndian.Uint16(l4[4:])
		binary.BigEndian.PutUint16(l4[4:], l4Len)
		binary.BigEndian.PutUint16(l4[6:], adjustLen(binary.BigEndian.Uint16(l4[6:]), oldLen, l4Len))
	}
	return dst, nil
}
