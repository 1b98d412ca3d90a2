// Package capture reads packet captures as a stream and decodes the TCP
// segments in them, without allocating per packet.
//
// # Files
//
// [Open] sniffs the first bytes: pcap (both byte orders, microsecond and
// nanosecond timestamps, the Kuznetzov "modified" variant), pcapng (any
// number of sections and interfaces, per-interface link type, if_tsresol
// and if_tsoffset) and either of them gzip-compressed. Anything else is an
// [*FormatError] that names the format and the command that converts it
// (editcap -F pcap). A record cut short or a length that cannot be right is
// a [*CorruptError] carrying the byte offset and the packets read before
// it, so callers can report what they analysed so far.
//
// A regular file can be mapped instead ([MapFile]): [Open] then reads its
// records in place, with no read calls and no copies, and [Reader.Guard]
// turns the fault of a file truncated while mapped into a truncation
// error. Pipes, and gzip, are read as streams.
//
// # Link types and network layer
//
// [Decode] takes a record's link type and bytes and fills a [Segment]:
// Ethernet with any number of 802.1Q/802.1ad tags and PPPoE sessions, raw
// IP (LINKTYPE_RAW 101 and the DLT_RAW values 12 and 14 old libpcaps
// wrote, LINKTYPE_IPV4/IPV6), Linux cooked SLL and SLL2, BSD null and
// loopback, PPP (with and without HDLC framing) and PPPoE; IPv4 with
// options and fragments (only first fragments carry a TCP header), IPv6
// with extension headers (hop-by-hop with a jumbo payload, routing,
// fragment, destination options, AH).
//
// Payload lengths come from the IP header, not from the captured bytes,
// so captures cut at a small snaplen (tcpdump -s 128) still count every
// byte. Offload super-frames captured on the sending host (TSO/GSO and
// BIG TCP, where an IPv4 total length of 0 or an IPv6 jumbo payload says
// "longer than 64 KB") take their length from the record's original
// length.
//
// [ParseOptions] decodes the TCP options a flow analysis needs: MSS,
// window scale, SACK-permitted, SACK blocks and timestamps (RFC 9293,
// RFC 7323, RFC 2018).
package capture
