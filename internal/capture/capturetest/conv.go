package capturetest

import (
	"net/netip"
	"time"

	"github.com/longhaul/longhaul/internal/capture"
)

// Side names one end of a Conv.
type Side int

// The two ends of a conversation.
const (
	Client Side = 0
	Server Side = 1
)

// Conv writes a TCP conversation into a Writer: it keeps each side's next
// sequence number, the window it advertises and its IP ID, so a test
// says "the client sends 1448 bytes" and "the server acknowledges all of
// it" instead of spelling out numbers.
type Conv struct {
	W *Writer
	// Wrap puts the IP packet into a link-layer frame (default Ether).
	Wrap func(ip []byte) []byte
	Addr [2]netip.AddrPort
	Now  time.Time
	ISN  [2]uint32
	Next [2]uint32 // next sequence number each side sends
	Rcvd [2]uint32 // what each side acknowledges
	Win  [2]uint16 // raw window field each side advertises
	IPID [2]uint16
	// TS adds timestamp options with a 1 ms clock to every segment.
	TS bool
	// Snaplen > 0 cuts every record to that many bytes (tcpdump -s).
	Snaplen int
}

// NewConv starts a conversation between client and server ("ip:port")
// at a fixed time, with ISNs near the wrap to exercise 32-bit arithmetic.
func NewConv(w *Writer, client, server string) *Conv {
	c := &Conv{
		W:    w,
		Wrap: func(ip []byte) []byte { return Ether(ip) },
		Addr: [2]netip.AddrPort{netip.MustParseAddrPort(client), netip.MustParseAddrPort(server)},
		Now:  time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
		ISN:  [2]uint32{0xffff0000, 1000},
		Win:  [2]uint16{65535, 65535},
		IPID: [2]uint16{100, 5000},
	}
	c.Next, c.Rcvd = c.ISN, [2]uint32{c.ISN[1], c.ISN[0]}
	return c
}

// Advance moves the clock forward.
func (c *Conv) Advance(d time.Duration) *Conv { c.Now = c.Now.Add(d); return c }

// Emit writes seg from side (addresses, IP ID and timestamps filled in
// when zero) and returns it.
func (c *Conv) Emit(from Side, seg TCP) TCP {
	seg.Src, seg.Dst = c.Addr[from], c.Addr[1-from]
	if seg.IPID == 0 {
		c.IPID[from]++
		seg.IPID = c.IPID[from]
	}
	if c.TS {
		ms := uint32(c.Now.UnixMilli())
		seg.Options = Opts(append([]byte(nil), seg.Options...)).TS(ms, ms-1)
	}
	frame := c.Wrap(seg.IP())
	n := len(frame)
	if c.Snaplen > 0 && n > c.Snaplen {
		frame = frame[:c.Snaplen]
	}
	c.W.PacketOn(0, c.Now, frame, n)
	return seg
}

// Handshake writes SYN, SYN-ACK (after rtt1) and ACK (after rtt2), the
// two halves of the handshake as seen at the capture point. Nil options
// mean none.
func (c *Conv) Handshake(synOpts, synAckOpts Opts, rtt1, rtt2 time.Duration) {
	c.Emit(Client, TCP{Seq: c.ISN[0], Flags: capture.FlagSYN, Window: c.Win[0], Options: synOpts})
	c.Advance(rtt1)
	c.Emit(Server, TCP{Seq: c.ISN[1], Ack: c.ISN[0] + 1, Flags: capture.FlagSYN | capture.FlagACK, Window: c.Win[1], Options: synAckOpts})
	c.Advance(rtt2)
	c.Next = [2]uint32{c.ISN[0] + 1, c.ISN[1] + 1}
	c.Rcvd = [2]uint32{c.ISN[1] + 1, c.ISN[0] + 1}
	c.Emit(Client, TCP{Seq: c.Next[0], Ack: c.Rcvd[0], Flags: capture.FlagACK, Window: c.Win[0]})
}

// Data sends n new bytes from side and returns their first sequence
// number.
func (c *Conv) Data(from Side, n int) uint32 {
	seq := c.Next[from]
	c.Emit(from, TCP{Seq: seq, Ack: c.Rcvd[from], Flags: capture.FlagACK | capture.FlagPSH, Window: c.Win[from], Payload: n})
	c.Next[from] += uint32(n)
	return seq
}

// Resend sends n bytes from seq again (a retransmission, new IP ID).
func (c *Conv) Resend(from Side, seq uint32, n int) {
	c.Emit(from, TCP{Seq: seq, Ack: c.Rcvd[from], Flags: capture.FlagACK, Window: c.Win[from], Payload: n})
}

// Ack sends a pure ACK from side acknowledging the peer's data up to
// upto, with optional SACK edges (left, right pairs).
func (c *Conv) Ack(from Side, upto uint32, sack ...uint32) {
	c.Rcvd[from] = upto
	var o Opts
	if len(sack) > 0 {
		o = o.SACK(sack...)
	}
	c.Emit(from, TCP{Seq: c.Next[from], Ack: upto, Flags: capture.FlagACK, Window: c.Win[from], Options: o})
}

// AckAll acknowledges everything the peer sent.
func (c *Conv) AckAll(from Side) { c.Ack(from, c.Next[1-from]) }

// Reset resets the connection from side (a bare RST at its snd.nxt).
func (c *Conv) Reset(from Side) {
	c.Emit(from, TCP{Seq: c.Next[from], Flags: capture.FlagRST})
}

// Fin closes side's half of the connection.
func (c *Conv) Fin(from Side) {
	c.Emit(from, TCP{Seq: c.Next[from], Ack: c.Rcvd[from], Flags: capture.FlagACK | capture.FlagFIN, Window: c.Win[from]})
	c.Next[from]++
}
