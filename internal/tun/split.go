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
	whole, err := i.checkRun(frame, first, count)
	switch {
	case err != nil:
		return dst, err
	case whole:
		// The whole frame survives: pass it on unchanged.
		return append(dst, frame...), nil
	}
	last := first + count - 1
	payOff := first * i.SegSize
	payLen := (count-1)*i.SegSize + i.SegPayload(last)
	if err := i.checkLayout(payOff, payLen); err != nil {
		return dst, err
	}
	hl := i.HeaderLen
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
	i.fixIP(ip, ipLen, first)
	i.fixL4(ip[i.IPHeaderLen:], uint16(ipLen-i.IPHeaderLen), first, last, payOff)
	return dst, nil
}

// checkRun checks that frame is the one i describes, that the run lies
// within its segments and that it can be cut; whole reports a run of every
// segment, which needs no cutting.
func (i *Info) checkRun(frame []byte, first, count int) (whole bool, err error) {
	n := i.NumSegs
	switch {
	case len(frame) != VirtioNetHdrLen+i.IPLen || i.HeaderLen > i.IPLen || n < 1:
		return false, malformed("frame of %d bytes does not match its Info (IP length %d)", len(frame), i.IPLen)
	case count < 1 || first < 0 || first > n-count:
		return false, malformed("run of %d segments from %d is outside the %d segments of the frame", count, first, n)
	case first == 0 && count == n:
		return true, nil
	case i.Hdr.Flags&FlagNeedsCsum == 0:
		return false, unsupported("cannot split a %s super-packet without NEEDS_CSUM", GSOTypeString(i.Hdr.GSOType))
	case i.Proto != ProtoTCP && i.Proto != ProtoUDP:
		return false, malformed("cannot split protocol %d", i.Proto)
	}
	return false, nil
}

// checkLayout checks that the headers i describes are complete and that
// the payload bytes [payOff, payOff+payLen) lie within the frame.
func (i *Info) checkLayout(payOff, payLen int) error {
	ipMin, l4Min := 20, 8
	if i.IPVersion == 6 {
		ipMin = 40
	}
	if i.Proto == ProtoTCP {
		l4Min = 20
	}
	if i.IPHeaderLen < ipMin || i.L4HeaderLen < l4Min || i.IPHeaderLen+i.L4HeaderLen != i.HeaderLen ||
		i.SegSize < 1 || payLen < 0 || i.HeaderLen+payOff+payLen > i.IPLen {
		return malformed("Info does not describe a splittable frame")
	}
	return nil
}

// fixIP rewrites the IP header of a run starting at segment first whose
// IP packet is ipLen bytes long.
func (i *Info) fixIP(ip []byte, ipLen, first int) {
	if i.IPVersion == 4 {
		// inet_gso_segment: tot_len per segment, id incremented per
		// segment (no SKB_GSO_TCP_FIXEDID from a virtio header), header
		// checksum recomputed (ip_send_check).
		binary.BigEndian.PutUint16(ip[2:], uint16(ipLen))
		binary.BigEndian.PutUint16(ip[4:], binary.BigEndian.Uint16(ip[4:])+uint16(first))
		binary.BigEndian.PutUint16(ip[10:], ipv4HeaderChecksum(ip[:i.IPHeaderLen]))
		return
	}
	// ipv6_gso_segment: payload_len per segment (extension headers are
	// copied unchanged).
	binary.BigEndian.PutUint16(ip[4:], uint16(ipLen-40))
}

// fixL4 rewrites the TCP or UDP header of a run of segments first..last
// whose payload starts payOff bytes into the original and whose L4
// length is l4Len.
func (i *Info) fixL4(l4 []byte, l4Len uint16, first, last, payOff int) {
	switch i.Proto {
	case ProtoTCP:
		// tcp_gso_segment: seq advances by gso_size per segment; FIN and
		// PSH stay on the last segment only, CWR on the first only; the
		// pseudo-header partial checksum is adjusted from the old TCP
		// length to the new one.
		binary.BigEndian.PutUint32(l4[4:], binary.BigEndian.Uint32(l4[4:])+uint32(payOff))
		if last < i.NumSegs-1 {
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
}
