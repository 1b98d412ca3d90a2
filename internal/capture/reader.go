package capture

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// LinkType is a LINKTYPE_ value from the pcap and pcapng headers
// (https://www.tcpdump.org/linktypes.html).
type LinkType uint16

// Link types Decode understands.
const (
	LinkNull      LinkType = 0   // BSD loopback: 4-byte AF_ in host byte order
	LinkEthernet  LinkType = 1   // Ethernet II
	LinkPPP       LinkType = 9   // PPP, optionally with 0xff 0x03 HDLC framing
	LinkRawDLT12  LinkType = 12  // DLT_RAW on most platforms (old files)
	LinkRawDLT14  LinkType = 14  // DLT_RAW on OpenBSD (old files)
	LinkPPPHDLC   LinkType = 50  // PPP in HDLC-like framing
	LinkPPPoE     LinkType = 51  // PPPoE session header, then PPP
	LinkRaw       LinkType = 101 // raw IPv4 or IPv6
	Link80211     LinkType = 105 // IEEE 802.11 (Wi-Fi) data frames, LLC/SNAP
	LinkRadiotap  LinkType = 127 // radiotap header, then IEEE 802.11
	LinkLoop      LinkType = 108 // OpenBSD loopback: AF_ in network byte order
	LinkLinuxSLL  LinkType = 113 // Linux cooked capture v1
	LinkIPv4      LinkType = 228 // raw IPv4
	LinkIPv6      LinkType = 229 // raw IPv6
	LinkLinuxSLL2 LinkType = 276 // Linux cooked capture v2
)

// maxRecord bounds one record's captured length. tcpdump's default snaplen
// is 262144 bytes; BIG TCP super-frames on the sending host stay below
// 512 KB. A larger length is corruption, and refusing it keeps memory
// bounded whatever the file says.
const maxRecord = 1 << 20

// bufSize is the read buffer to start with; peek grows it (up to the
// largest record with its header) when a record does not fit, so records
// are always decoded in place without a copy. Open sniffs the format
// through a bufio.Reader of sniffSize; records are then read through the
// Reader's own buffer, whose fast path (the record is in the buffer) is
// a bounds check, and which reads 1 MB at a time.
const (
	bufSize   = 1 << 20
	sniffSize = 64 << 10
)

// Packet is one captured record. Data aliases the reader's buffer and is
// valid until the next call to Next.
type Packet struct {
	// Time is the capture timestamp in nanoseconds since the Unix epoch.
	Time      int64
	CapLen    int
	OrigLen   int
	LinkType  LinkType
	Interface int // pcapng interface index; 0 for pcap
	Data      []byte
}

// ErrTruncated and ErrCorrupt classify a *CorruptError.
var (
	ErrTruncated = errors.New("truncated")
	ErrCorrupt   = errors.New("corrupt")
)

// CorruptError reports a file that ends inside a record or holds a value
// no writer produces. Packets says how many records were read before it.
type CorruptError struct {
	Offset  int64
	Packets int64
	Kind    error // ErrTruncated or ErrCorrupt
	Msg     string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("%s at byte %d (after %d packets): %s", e.Kind, e.Offset, e.Packets, e.Msg)
}

func (e *CorruptError) Unwrap() error { return e.Kind }

// FormatError reports a file that is not a capture this package reads,
// naming what it looks like and how to convert it.
type FormatError struct {
	Format string // what the file looks like, e.g. "snoop"
	Hint   string // how to get a pcap or pcapng
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s, not pcap or pcapng: %s", e.Format, e.Hint)
}

// ErrFormat matches every *FormatError with errors.Is.
var ErrFormat = errors.New("unsupported capture format")

func (e *FormatError) Is(target error) bool { return target == ErrFormat }

const convertHint = "convert it with `editcap -F pcap FILE out.pcap` (or `tshark -r FILE -F pcap -w out.pcap`)"

// Reader streams the packets of a pcap or pcapng file.
type Reader struct {
	src      io.Reader // the sniffing bufio.Reader (its buffered bytes first)
	mem      *Mapping  // a mapped file read in place: buf is all of it
	mapped   *Mapping  // the mapped file under it, in place or not (Guard)
	buf      []byte
	pos, end int   // buf[pos:end] is read and not yet consumed
	rerr     error // sticky error from src
	// base is the file offset of buf[0]: base+pos bytes are consumed
	// (offset), without a count kept per record.
	base    int64
	packets int64
	format  string
	next    func(r *Reader, p *Packet) error

	unit int64 // see Unit; 0 is 1

	// pcap
	order     byteOrder
	nanos     bool
	modified  bool
	snaplen   uint32
	linkType  LinkType
	pcapExtra int
	// etherPcap: little-endian records of Ethernet frames with no extra
	// header bytes, the kind NextSegment reads in one pass.
	etherPcap bool

	// pkt is NextSegment's record on the general path.
	pkt Packet

	// pcapng
	ifaces []iface
	lastTS int64
}

// Format names the file's format: "pcap", "pcap (nanosecond)", "pcapng",
// with " (gzip)" appended when it was compressed.
func (r *Reader) Format() string { return r.format }

// Unit is the unit of the file's timestamps in nanoseconds: 1000 for a
// microsecond pcap, 1 for a nanosecond pcap and for pcapng (each of
// its interfaces has its own resolution). Every Packet.Time is a
// multiple of it.
func (r *Reader) Unit() int64 {
	return max(r.unit, 1)
}

// Next reads the next packet into p. It returns io.EOF at a clean end of
// the file, a *CorruptError for a broken or truncated record.
func (r *Reader) Next(p *Packet) error {
	err := r.next(r, p)
	if err == nil {
		r.packets++
	}
	return err
}

// Open sniffs the start of rd and returns a Reader for it. rd is read
// through a buffer, a *Mapping in place (see MapFile); gzip input is
// decompressed on the fly.
func Open(rd io.Reader) (*Reader, error) {
	m, _ := rd.(*Mapping)
	if m != nil {
		if r, gz, err := openMapped(m); !gz {
			return r, err
		}
		// gzip: decompressed as it is read, below.
		return m.openStream(rd)
	}
	return openStream(rd)
}

// openStream opens a capture read through a buffer.
func openStream(rd io.Reader) (*Reader, error) {
	br := bufio.NewReaderSize(rd, sniffSize)
	gz := false
	head, err := br.Peek(8)
	if len(head) == 0 && err != nil && err != io.EOF {
		// Not an empty file: the read failed (or was interrupted).
		return nil, fmt.Errorf("capture: %w", err)
	}
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: gzip: %w", err)
		}
		br = bufio.NewReaderSize(zr, sniffSize)
		gz = true
		head, _ = br.Peek(8)
	}
	r := &Reader{src: br, buf: make([]byte, bufSize)}
	if err := r.sniff(br, head); err != nil {
		return nil, err
	}
	if gz {
		r.format += " (gzip)"
	}
	return r, nil
}

// openMapped opens a mapped file to read in place; gz says it is
// gzip-compressed instead (to be read as a stream).
func openMapped(m *Mapping) (r *Reader, gz bool, err error) {
	err = m.guard(func() error {
		b := m.data
		if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
			gz = true
			return nil
		}
		r = &Reader{buf: b, mem: m, mapped: m}
		// sniffOther looks at most 512 bytes in.
		return r.sniff(bufio.NewReaderSize(bytes.NewReader(b[:min(len(b), 512)]), 512), b[:min(len(b), 8)])
	}, nil)
	if err != nil || gz {
		return nil, gz, err
	}
	return r, false, nil
}

// sniff opens the format that head (the first bytes) shows.
func (r *Reader) sniff(br *bufio.Reader, head []byte) error {
	var err error
	switch {
	case len(head) == 0:
		return &FormatError{"an empty file", "capture with tcpdump -w FILE (or tshark -w FILE)"}
	case len(head) >= 4 && isPcapMagic(head[:4]):
		err = r.openPcap()
	case len(head) >= 4 && bytes.Equal(head[:4], []byte{0x0a, 0x0d, 0x0d, 0x0a}):
		err = r.openPcapng()
	default:
		return sniffOther(br, head)
	}
	return err
}

// isClassicPeek recognises the classic (Macintosh) EtherPeek/AiroPeek
// header as Wireshark does: a master header of version 5, 6 or 7 and
// status 0, then a secondary header whose 12 reserved bytes are zero.
func isClassicPeek(br *bufio.Reader) bool {
	h, _ := br.Peek(50)
	if len(h) < 50 || h[0] < 5 || h[0] > 7 || h[1] != 0 {
		return false
	}
	for _, b := range h[38:50] {
		if b != 0 {
			return false
		}
	}
	return true
}

// sniffOther names a format we do not read.
func sniffOther(br *bufio.Reader, head []byte) error {
	has := func(p string) bool { return bytes.HasPrefix(head, []byte(p)) }
	switch {
	case has("snoop\x00\x00\x00"):
		return &FormatError{"a snoop file (Solaris)", convertHint}
	case has("GMBU"), has("RTSS"):
		return &FormatError{"a Microsoft Network Monitor file", convertHint}
	case has("XCP\x00"):
		return &FormatError{"a NetXRay/Sniffer file", convertHint}
	case has("TRSNIFF"):
		return &FormatError{"a Sniffer file", convertHint}
	case has("Observe"):
		return &FormatError{"a Network Instruments Observer file", convertHint}
	case has("\x7fver"):
		return &FormatError{"an EtherPeek/AiroPeek/OmniPeek tagged file", convertHint}
	case isClassicPeek(br):
		return &FormatError{"a classic EtherPeek/AiroPeek file (version 5-7)", convertHint}
	case has("\x28\xb5\x2f\xfd"):
		return &FormatError{"a zstd-compressed file", "decompress it first (zstd -d FILE) or write it without compression"}
	case has("\x04\x22\x4d\x18"):
		return &FormatError{"an lz4-compressed file", "decompress it first (lz4 -d FILE)"}
	case has("\xfd7zXZ\x00"):
		return &FormatError{"an xz-compressed file", "decompress it first (xz -d FILE)"}
	case has("BZh"):
		return &FormatError{"a bzip2-compressed file", "decompress it first (bzip2 -d FILE)"}
	case has("PK\x03\x04"):
		return &FormatError{"a zip archive", "unzip it first"}
	}
	text, _ := br.Peek(512)
	if isText(text) {
		return &FormatError{"a text file (tcpdump or tshark output?)", "longhaul needs the binary capture: write it with tcpdump -w FILE or tshark -w FILE"}
	}
	return &FormatError{fmt.Sprintf("an unknown format (starts % x)", head[:min(len(head), 4)]),
		"if it is ERF, snoop, NetMon or another capture format, " + convertHint}
}

func isText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			return false
		}
	}
	return true
}

// peek returns the next n bytes without consuming them; a short read is
// io.ErrUnexpectedEOF.
func (r *Reader) peek(n int) ([]byte, error) {
	if r.end-r.pos >= n {
		return r.buf[r.pos : r.pos+n], nil
	}
	return r.fill(n)
}

// fill reads until n bytes are buffered, or the source ends.
func (r *Reader) fill(n int) ([]byte, error) {
	if r.mem != nil {
		return r.fillMapped(n)
	}
	switch {
	case n > len(r.buf):
		// Only a record larger than the buffer (at most maxRecord plus
		// its header) grows it.
		nb := make([]byte, n+64<<10)
		r.end = copy(nb, r.buf[r.pos:r.end])
		r.base += int64(r.pos)
		r.buf, r.pos = nb, 0
	case len(r.buf)-r.pos < n:
		r.end = copy(r.buf, r.buf[r.pos:r.end])
		r.base += int64(r.pos)
		r.pos = 0
	}
	for empty := 0; r.end-r.pos < n && r.rerr == nil; {
		m, err := r.src.Read(r.buf[r.end:])
		r.end += m
		if err != nil {
			r.rerr = err
		}
		if m == 0 && err == nil {
			if empty++; empty > 100 {
				r.rerr = io.ErrNoProgress
			}
		}
	}
	return r.filled(n)
}

// filled returns the n bytes at pos, or those there are with the error
// that cut them short.
func (r *Reader) filled(n int) ([]byte, error) {
	if r.end-r.pos < n {
		b := r.buf[r.pos:r.end]
		if r.rerr == io.EOF {
			return b, io.ErrUnexpectedEOF
		}
		return b, r.rerr
	}
	return r.buf[r.pos : r.pos+n], nil
}

// fillMapped makes the next n bytes of a mapped file available, a
// megabyte at a time: each step checks for an interruption and releases
// the pages behind (Mapping.advance).
func (r *Reader) fillMapped(n int) ([]byte, error) {
	if r.rerr == nil {
		if err := r.mem.advance(r.pos); err != nil {
			r.rerr = err
		} else {
			r.end = min(len(r.buf), max(r.pos+n, r.end+bufSize))
			if r.end == len(r.buf) {
				r.rerr = io.EOF
			}
		}
	}
	return r.filled(n)
}

// discard consumes n bytes that peek returned.
func (r *Reader) discard(n int) {
	r.pos += min(n, r.end-r.pos)
}

// offset is the number of bytes consumed.
func (r *Reader) offset() int64 { return r.base + int64(r.pos) }

// truncated builds the error for a record cut short.
func (r *Reader) truncated(format string, a ...any) error {
	return &CorruptError{Offset: r.offset(), Packets: r.packets, Kind: ErrTruncated, Msg: fmt.Sprintf(format, a...)}
}

func (r *Reader) corrupt(format string, a ...any) error {
	return &CorruptError{Offset: r.offset(), Packets: r.packets, Kind: ErrCorrupt, Msg: fmt.Sprintf(format, a...)}
}

// ioErr maps a read error: a short read is truncation, anything else is
// returned as it is (an I/O error); a gzip stream that does not decode
// (its header, its checksum, its deflate data) is corruption.
func (r *Reader) ioErr(err error, what string, need, got int) error {
	if err == io.ErrUnexpectedEOF {
		return r.truncated("%s needs %d bytes, %d present", what, need, got)
	}
	var flateErr flate.CorruptInputError
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &flateErr) {
		return r.corrupt("gzip: %v", err)
	}
	// An I/O error (or an interruption) is not corruption: say where it
	// happened and keep it matchable (errors.Is).
	return fmt.Errorf("capture: reading byte %d (after %d packets): %w", r.offset(), r.packets, err)
}

type byteOrder bool

const (
	little byteOrder = false
	big    byteOrder = true
)

func (o byteOrder) u16(b []byte) uint16 {
	if o == big {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return uint16(b[1])<<8 | uint16(b[0])
}

func (o byteOrder) u32(b []byte) uint32 {
	if o == big {
		return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	}
	return uint32(b[3])<<24 | uint32(b[2])<<16 | uint32(b[1])<<8 | uint32(b[0])
}

func (o byteOrder) u64(b []byte) uint64 {
	if o == big {
		return uint64(o.u32(b))<<32 | uint64(o.u32(b[4:]))
	}
	return uint64(o.u32(b[4:]))<<32 | uint64(o.u32(b))
}
