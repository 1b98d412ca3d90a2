// Package tun does the frame I/O and frame surgery of the emulator's data
// plane: reading and writing GSO super-packets on TUN devices with virtio
// network headers, describing them for the link model (package linkemu),
// and cutting out the segments the model dropped.
//
// # Frame format
//
// A TUN device created with IFF_TUN|IFF_NO_PI|IFF_VNET_HDR and configured
// by New exchanges frames of a 10-byte struct virtio_net_hdr followed by
// one IP packet (IPv4 or IPv6, no link-layer header):
//
//	offset 0  flags        NEEDS_CSUM (1), DATA_VALID (2)
//	       1  gso_type     NONE 0, TCPV4 1, TCPV6 4, UDP_L4 5, | ECN 0x80
//	       2  hdr_len      header length hint (little-endian)
//	       4  gso_size     payload bytes per segment (the MSS)
//	       6  csum_start   offset of the L4 header in the IP packet
//	       8  csum_offset  offset of the checksum field in it (16 TCP, 6 UDP)
//	      10  IP packet, up to 64 KiB
//
// The 16-bit fields are little-endian: New sets TUNSETVNETLE, and little
// endian is also the legacy native order on x86 (tun_is_little_endian).
// TUNSETVNETHDRSZ is 10, the plain header without num_buffers.
//
// With TUN_F_CSUM|TUN_F_TSO4|TUN_F_TSO6 (and TUN_F_USO4|TUN_F_USO6 where the
// kernel accepts them, Linux 6.2 and later) the kernel hands the reader
// what a NIC with TSO would get (virtio_net_hdr_from_skb): a TCP
// super-packet of up to 64 KiB whose headers are those of its first
// segment with the IP length of the whole packet, gso_size the MSS,
// NEEDS_CSUM set and the TCP checksum field holding only the pseudo-header
// sum (addresses, protocol and the L4 length of the whole super-packet,
// folded, not complemented). hdr_len is skb_headlen, a linearity hint that
// may include payload, so Inspect derives the header length from the
// headers themselves. The wire form of a super-packet of payload P is
// ceil(P / gso_size) segments, each carrying the same header bytes; a
// frame whose payload fits in gso_size is a single segment whatever its
// gso_type (virtio_net_hdr_to_skb: "too small packets are not really GSO
// ones"). On this project's test VM (kernel 6.18) all five offload flags
// were accepted and the largest frame seen in a bulk transfer at MTU 1500
// was 65222 bytes: 10 + 20 IPv4 + 32 TCP + 45 x 1448.
//
// Writing works the same way in reverse: the kernel accepts a super-packet
// with NEEDS_CSUM as CHECKSUM_PARTIAL and the local TCP receiver takes it
// whole, trusting the checksum. A frame written without NEEDS_CSUM and
// without DATA_VALID is verified by the receiver (a bad checksum counts in
// Tcp InCsumErrors), which the integration tests use to check checksums
// against the real kernel.
//
// # Why virtio headers and offloads
//
// Measured on the project's 2-core VM (see the emulator notes): a
// userspace path moving one 1500-byte packet per read/write reached
// 1.2-1.9 Gbit/s using 1.1-1.3 cores; with IFF_VNET_HDR + TUNSETOFFLOAD,
// passing TSO super-packets whole, 9.8-13.3 Gbit/s using about one core,
// 7-8x the throughput. At a 1 Gbit/s emulated rate the same change cut the
// emulator's CPU from 70-89% to 15-29% of a core (about 3.5x). So the data
// plane passes super-packets through untouched and splits one only when
// the model drops part of it (a lost segment, or a queue limit that falls
// inside it); dropping whole super-packets instead would make loss some
// 45x burstier than on a real link. The TUN txqueuelen must also be
// raised (10000 in the tests): a lagging reader drops silently there.
//
// # Device I/O
//
// New takes an already open TUN queue (created, in the right namespace,
// by whoever owns the topology), configures it and keeps a non-blocking
// duplicate registered with Go's netpoller: Read and Write park the
// goroutine rather than block its thread, and Close wakes a pending Read,
// which returns an error wrapping os.ErrClosed. Read needs a buffer of
// MaxFrameLen bytes, since the kernel silently truncates longer frames.
// Dev is the interface the data plane should depend on; package tuntest
// provides a channel-based fake.
//
// # Inspect
//
// Inspect parses a frame without modifying it or allocating: virtio
// header, IPv4 (with options) or IPv6 (with hop-by-hop, routing and
// destination options headers), TCP or UDP. It returns an Info with the
// header length, the per-segment payloads (FillPacket turns them into a
// linkemu.Packet, reusing its slice) and the fields AppendRun needs. Malformed
// frames are rejected with errors wrapping ErrMalformed: truncated headers,
// IHL < 5, a TCP data offset < 5, an IP length that does not match the
// bytes read, an unknown gso_type, a gso_type that does not match the
// packet, gso_size 0, checksum offsets outside the packet, and what
// virtio_net_hdr_to_skb and tcp_gso_segment reject (csum_start not at the
// transport header of a super-packet, csum_offset not the TCP/UDP checksum,
// UDP_L4 without NEEDS_CSUM or of more than 128 segments). UFO (gso_type
// UDP, IP fragmentation) is refused with ErrUnsupported.
//
// # Split rules
//
// AppendRun produces, for a run of consecutive segments to keep
// (first segment k, count c) of a super-packet with MSS m, the frame a
// TSO engine would have produced had the super-packet held only those
// segments. Segmenting the result yields byte for byte the same wire
// segments as segmenting the original and dropping the others (the tests
// check this with a software segmenter). The rules are the kernel's
// software GSO:
//
//   - Header bytes are copied from the super-packet and the payload is
//     bytes [k*m, k*m + len) of the original payload (skb_segment).
//   - The virtio header keeps NEEDS_CSUM, csum_start and csum_offset; a
//     run of one segment becomes a plain packet (gso_type NONE, gso_size
//     0), a longer run keeps gso_type and gso_size; hdr_len is set to the
//     real header length.
//   - IPv4: tot_len is the new length, the ID is the original ID + k
//     (inet_gso_segment numbers segments id, id+1, ... since a virtio
//     header never carries SKB_GSO_TCP_FIXEDID; a GSO output starts at the
//     ID of its first segment: "id += gso_segs"), and the header checksum
//     is recomputed (ip_send_check). Options are copied unchanged.
//   - IPv6: payload_len is the new length minus 40 (ipv6_gso_segment);
//     extension headers are copied unchanged.
//   - TCP (tcp_gso_segment): seq advances by k*m; FIN and PSH are kept
//     only by the run that contains the last segment ("th->fin = th->psh =
//     0" on every segment but the last); CWR only by the run that contains
//     the first segment ("th->cwr &= ecn_cwr_mask", AccECN aside, which a
//     virtio header cannot express here); the checksum field, the
//     pseudo-header partial sum, is adjusted from the old TCP length to the
//     new one ("newcheck = ~csum_fold(csum_add(csum_unfold(th->check),
//     delta))" with delta = new length - old length), which equals the
//     pseudo-header sum computed afresh for the new length.
//   - UDP_L4 (__udp_gso_segment): uh->len is the new length and the
//     partial checksum is adjusted from the old uh->len to the new one
//     ("csum16_add(csum16_sub(uh->check, uh->len), newlen)").
//
// A run covering the whole super-packet is returned unchanged. Splitting
// requires NEEDS_CSUM (always present on what the kernel hands out);
// otherwise the functions return ErrUnsupported. Outputs go to
// caller-provided buffers: with enough capacity AppendRun does not
// allocate.
package tun
