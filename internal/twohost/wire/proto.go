package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"time"

	"github.com/longhaul/longhaul/internal/snapshot"
	"github.com/longhaul/longhaul/internal/twohost/testdoc"
)

// Protocol constants.
const (
	// ProtoVersion is the control protocol's version ("v" of every frame).
	ProtoVersion = 1
	// DefaultPort is the port serve listens on and test dials: one port
	// for control and data.
	DefaultPort = 9978
	// MaxPreAuthFrame caps a frame read before the peer is authenticated.
	MaxPreAuthFrame = 4 << 10
	// MaxFrame caps a frame the server reads from an authenticated client.
	MaxFrame = 64 << 10
	// MaxServerFrame caps a frame the client reads from the server (its
	// snapshot is the largest).
	MaxServerFrame = 4 << 20
	// MaxStreams is the most streams one phase may ask for.
	MaxStreams = 64
	// NonceLen and macLen are the sizes of nonces and HMAC-SHA256 tags.
	NonceLen = 32
	macLen   = 32
	// EndSlack is kept from a session's time for ending phases cleanly:
	// the server grants no phase past the session's cap less it, and a
	// client fits its phases within the same.
	EndSlack = 2 * time.Second
)

// Software names this implementation in hello and start frames.
var Software = "longhaul"

// Message types.
const (
	TypeHello     = "hello"      // server: version, nonce
	TypeAuth      = "auth"       // client: HMAC over the nonces and the purpose
	TypeWelcome   = "welcome"    // server: its HMAC over both nonces
	TypeError     = "error"      // server: why it refuses (busy, auth, caps)
	TypeStart     = "start"      // client: begin a test
	TypeAccepted  = "accepted"   // server: session, caps, snapshot
	TypePing      = "ping"       // client
	TypePong      = "pong"       // server
	TypePhase     = "phase"      // client: ask for a phase
	TypeGrant     = "grant"      // server: the phase as granted
	TypeGo        = "go"         // server, on a data connection: start moving data
	TypeSamples   = "samples"    // server: tcp_info samples of a phase
	TypePhaseDone = "phase-done" // server: a phase ended
	TypeBye       = "bye"        // client: the test is over
)

// Error codes of an error frame.
const (
	CodeAuth    = "auth"    // authentication failed
	CodeBusy    = "busy"    // retry after RetryAfterS
	CodeDenied  = "denied"  // the address is not allowed
	CodeRequest = "request" // a malformed or out-of-place message
	CodeVersion = "version" // another protocol version
	CodeCaps    = "caps"    // the request cannot fit the server's caps
)

// ErrVersion marks a frame of another protocol version.
var ErrVersion = errors.New("protocol version")

// ErrFrame marks a frame that is not a valid message.
var ErrFrame = errors.New("bad message")

// Frame is one message on the wire.
type Frame struct {
	V    int             `json:"v"`
	Type string          `json:"type"`
	Body json.RawMessage `json:"body,omitempty"`
}

// Hello is the server's first frame on every connection.
type Hello struct {
	Proto    int    `json:"proto"`
	Software string `json:"software"`
	Nonce    []byte `json:"nonce"`
}

// Purposes of a connection.
const (
	PurposeControl = "control"
	PurposeData    = "data"
)

// Auth is the client's answer to Hello.
type Auth struct {
	Purpose     string `json:"purpose"`
	ClientNonce []byte `json:"client_nonce"`
	MAC         []byte `json:"mac"`
	// Session, Phase and Stream say which stream a data connection is.
	Session string `json:"session,omitempty"`
	Phase   int    `json:"phase,omitempty"`
	Stream  int    `json:"stream,omitempty"`
}

// Welcome proves the server holds the token too.
type Welcome struct {
	MAC []byte `json:"mac"`
}

// ErrorMsg is a refusal.
type ErrorMsg struct {
	Code        string `json:"code"`
	Message     string `json:"message"`
	RetryAfterS int    `json:"retry_after_s,omitempty"`
}

// Start begins a test.
type Start struct {
	Software string `json:"software"`
	// PlannedS is how long the client expects its test to take, in
	// seconds, handshakes to bye (TestLength): the server tells clients
	// it turns away as busy to come back when it ends, not at the
	// session's --max-duration cap. Added after v1: older clients omit
	// it (0), and the cap stands. At most MaxPlannedS.
	PlannedS float64 `json:"planned_s,omitempty"`
}

// MaxPlannedS bounds Start.PlannedS: a day, as --max-duration.
const MaxPlannedS = 86400

// Accepted starts a session.
type Accepted struct {
	Session  string             `json:"session"`
	Caps     testdoc.Caps       `json:"caps"`
	Snapshot *snapshot.Snapshot `json:"snapshot"`
}

// Ping and Pong measure the RTT over the control connection.
type Ping struct {
	Seq int `json:"seq"`
}

// Phase names.
const (
	PhaseDownload = testdoc.PhaseDownload // the server sends
	PhaseUpload   = testdoc.PhaseUpload   // the client sends
	PhaseCapacity = testdoc.PhaseCapacity // the server sends on N streams
	PhaseUDP      = testdoc.PhaseUDP      // the server paces datagrams (udpwire.go)
)

// PhaseReq asks for a phase.
type PhaseReq struct {
	Name      string  `json:"name"`
	Streams   int     `json:"streams"`
	DurationS float64 `json:"duration_s"`
	RateBps   float64 `json:"rate_bps,omitempty"`
	// CC asks the server to send with this congestion control (a
	// download or capacity phase); a server that does not know the field
	// ignores it and grants none.
	CC string `json:"cc,omitempty"`
}

// Grant is a phase as the server allows it.
type Grant struct {
	Phase     int     `json:"phase"`
	Name      string  `json:"name"`
	Streams   int     `json:"streams"`
	DurationS float64 `json:"duration_s"`
	RateBps   float64 `json:"rate_bps,omitempty"` // 0: unpaced
	MaxBytes  int64   `json:"max_bytes"`
	// CC is the congestion control the server's sockets send with, when
	// the client asked for one and the server has it; "" its default.
	CC string `json:"cc,omitempty"`
	// Token and DatagramBytes are a datagram run's (PhaseUDP): the
	// client's hello carries the token; each datagram's payload is
	// DatagramBytes.
	Token         []byte `json:"token,omitempty"`
	DatagramBytes int    `json:"datagram_bytes,omitempty"`
}

// Samples carries tcp_info samples of the server's sockets in a phase.
type Samples struct {
	Phase   int          `json:"phase"`
	Samples []WireSample `json:"samples"`
}

// PhaseDone ends a phase: what the server sent or received.
type PhaseDone struct {
	Phase   int     `json:"phase"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	// Datagrams is how many a datagram run sent.
	Datagrams int64 `json:"datagrams,omitempty"`
	// Reason: "duration", "bytes-cap", "peer-closed", "error", "no hello".
	Reason string `json:"reason"`
	// CPU is what the server process ran and waited for a CPU over the
	// phase (added after v1: omitted by servers that predate it, or that
	// cannot measure it).
	CPU *testdoc.CPUUse `json:"cpu,omitempty"`
}

var sessionRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Validate checks a decoded body; every body type has one.
func (h Hello) Validate() error {
	if len(h.Nonce) != NonceLen || len(h.Software) > 100 {
		return fmt.Errorf("%w: hello: nonce of %d bytes", ErrFrame, len(h.Nonce))
	}
	return nil
}

// Validate checks the auth frame's shape (not the MAC).
func (a Auth) Validate() error {
	switch {
	case a.Purpose != PurposeControl && a.Purpose != PurposeData:
		return fmt.Errorf("%w: auth: purpose %.20q", ErrFrame, a.Purpose)
	case len(a.ClientNonce) != NonceLen || len(a.MAC) != macLen:
		return fmt.Errorf("%w: auth: nonce or mac of the wrong size", ErrFrame)
	case a.Purpose == PurposeData && (!sessionRE.MatchString(a.Session) || a.Phase < 1 || a.Phase > 100 || a.Stream < 0 || a.Stream >= MaxStreams):
		return fmt.Errorf("%w: auth: data connection without a valid session, phase and stream", ErrFrame)
	case a.Purpose == PurposeControl && (a.Session != "" || a.Phase != 0 || a.Stream != 0):
		return fmt.Errorf("%w: auth: control connection with data fields", ErrFrame)
	}
	return nil
}

// Validate checks the welcome's size.
func (w Welcome) Validate() error {
	if len(w.MAC) != macLen {
		return fmt.Errorf("%w: welcome: mac of %d bytes", ErrFrame, len(w.MAC))
	}
	return nil
}

// Validate checks an error frame.
func (e ErrorMsg) Validate() error {
	if e.Code == "" || len(e.Message) > 1000 || e.RetryAfterS < 0 || e.RetryAfterS > 86400 {
		return fmt.Errorf("%w: error frame", ErrFrame)
	}
	return nil
}

// Validate checks a start frame.
func (s Start) Validate() error {
	if len(s.Software) > 100 {
		return fmt.Errorf("%w: start: software name too long", ErrFrame)
	}
	if !(s.PlannedS >= 0 && s.PlannedS <= MaxPlannedS) {
		return fmt.Errorf("%w: start: planned length must be 0..%d s", ErrFrame, MaxPlannedS)
	}
	return nil
}

// Validate checks the server's accept.
func (a Accepted) Validate() error {
	if !sessionRE.MatchString(a.Session) || a.Snapshot == nil || !(a.Caps.MaxDurationS > 0) || a.Caps.MaxBytes <= 0 || a.Caps.MaxStreams < 1 {
		return fmt.Errorf("%w: accepted: missing session, snapshot or caps", ErrFrame)
	}
	return nil
}

// Validate checks a ping or pong.
func (p Ping) Validate() error {
	if p.Seq < 0 {
		return fmt.Errorf("%w: ping: negative sequence", ErrFrame)
	}
	return nil
}

// Validate checks a phase request.
func (p PhaseReq) Validate() error {
	switch {
	case p.Name != PhaseDownload && p.Name != PhaseUpload && p.Name != PhaseCapacity && p.Name != PhaseUDP:
		return fmt.Errorf("%w: phase: unknown phase %.20q", ErrFrame, p.Name)
	case p.Name == PhaseUDP && (p.Streams != 1 || !finitePos(p.RateBps) || p.CC != ""):
		return fmt.Errorf("%w: phase: a datagram run has 1 stream, a rate and no congestion control", ErrFrame)
	case p.Streams < 1 || p.Streams > MaxStreams:
		return fmt.Errorf("%w: phase: streams must be 1..%d", ErrFrame, MaxStreams)
	case !finitePos(p.DurationS) || p.DurationS > 86400:
		return fmt.Errorf("%w: phase: duration must be 0..86400 s", ErrFrame)
	case p.RateBps < 0 || math.IsNaN(p.RateBps) || math.IsInf(p.RateBps, 0):
		return fmt.Errorf("%w: phase: bad rate", ErrFrame)
	case p.CC != "" && !ccRE.MatchString(p.CC):
		return fmt.Errorf("%w: phase: congestion control %.20q is not a name", ErrFrame, p.CC)
	}
	return nil
}

// ccRE is a congestion control's name as the kernel lists them.
var ccRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,15}$`)

// Validate checks a grant.
func (g Grant) Validate() error {
	bad := len(g.Token) != 0 || g.DatagramBytes != 0
	if g.Name == PhaseUDP {
		bad = len(g.Token) != UDPTokenLen || g.DatagramBytes < UDPMinSize || g.DatagramBytes > UDPMaxSize
	}
	if bad {
		return fmt.Errorf("%w: grant: token or datagram size", ErrFrame)
	}
	return PhaseReq{Name: g.Name, Streams: g.Streams, DurationS: g.DurationS, RateBps: g.RateBps, CC: g.CC}.Validate()
}

// Validate checks a samples frame.
func (s Samples) Validate() error {
	if s.Phase < 1 || len(s.Samples) > 10000 {
		return fmt.Errorf("%w: samples", ErrFrame)
	}
	return nil
}

// Validate checks a phase-done frame.
func (d PhaseDone) Validate() error {
	if d.Phase < 1 || d.Bytes < 0 || d.Datagrams < 0 || d.Seconds < 0 || math.IsNaN(d.Seconds) {
		return fmt.Errorf("%w: phase-done", ErrFrame)
	}
	if c := d.CPU; c != nil && (!(c.RunS >= 0) || !(c.WaitS >= 0) || math.IsInf(c.RunS, 0) || math.IsInf(c.WaitS, 0)) {
		return fmt.Errorf("%w: phase-done: cpu", ErrFrame)
	}
	return nil
}

func finitePos(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }

// WriteMsg writes one frame with body (nil for none).
func WriteMsg(w io.Writer, typ string, body any) error {
	f := Frame{V: ProtoVersion, Type: typ}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		f.Body = b
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	buf := make([]byte, 4, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	_, err = w.Write(append(buf, b...))
	return err
}

// ReadFrame reads one frame of at most limit bytes. A frame of another
// protocol version is ErrVersion; a frame that is not a message is
// ErrFrame. It never reads more than 4+limit bytes.
func ReadFrame(r io.Reader, limit int) (Frame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Frame{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > uint32(limit) {
		return Frame{}, fmt.Errorf("%w: frame of %d bytes (limit %d)", ErrFrame, n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return Frame{}, err
	}
	var f Frame
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&f); err != nil {
		return Frame{}, fmt.Errorf("%w: %v", ErrFrame, err)
	}
	if dec.More() {
		return Frame{}, fmt.Errorf("%w: trailing data after the message", ErrFrame)
	}
	if f.V != ProtoVersion {
		return f, fmt.Errorf("%w %d (this longhaul speaks %d)", ErrVersion, f.V, ProtoVersion)
	}
	if f.Type == "" || len(f.Type) > 32 {
		return f, fmt.Errorf("%w: no message type", ErrFrame)
	}
	return f, nil
}

// validator is a body with a shape check.
type validator interface{ Validate() error }

// Decode decodes f's body into v after checking f's type is want, then
// validates it.
func Decode[T validator](f Frame, want string, v *T) error {
	if f.Type != want {
		return fmt.Errorf("%w: got %.32q, want %q", ErrFrame, f.Type, want)
	}
	if len(f.Body) == 0 {
		return fmt.Errorf("%w: %s without a body", ErrFrame, want)
	}
	if err := json.Unmarshal(f.Body, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrFrame, want, err)
	}
	return (*v).Validate()
}

// AsError returns the refusal an error frame carries, or nil if f is not
// one.
func AsError(f Frame) *RemoteError {
	if f.Type != TypeError {
		return nil
	}
	var e ErrorMsg
	if err := Decode(f, TypeError, &e); err != nil {
		return &RemoteError{Code: CodeRequest, Message: "malformed error frame from the server"}
	}
	return &RemoteError{Code: e.Code, Message: e.Message, RetryAfterS: e.RetryAfterS}
}

// RemoteError is the server's refusal, as an error.
type RemoteError struct {
	Code        string
	Message     string
	RetryAfterS int
}

func (e *RemoteError) Error() string {
	if e.Code == CodeBusy {
		return fmt.Sprintf("the server is busy: %s; retry after %d s", e.Message, e.RetryAfterS)
	}
	return fmt.Sprintf("the server refused (%s): %s", e.Code, e.Message)
}
