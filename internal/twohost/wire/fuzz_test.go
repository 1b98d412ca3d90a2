package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// decodeAny decodes a frame's body by its type, as the server and the
// client do, and validates it.
func decodeAny(f Frame) error {
	switch f.Type {
	case TypeHello:
		var v Hello
		return Decode(f, f.Type, &v)
	case TypeAuth:
		var v Auth
		return Decode(f, f.Type, &v)
	case TypeWelcome:
		var v Welcome
		return Decode(f, f.Type, &v)
	case TypeError:
		var v ErrorMsg
		return Decode(f, f.Type, &v)
	case TypeStart:
		var v Start
		return Decode(f, f.Type, &v)
	case TypeAccepted:
		var v Accepted
		return Decode(f, f.Type, &v)
	case TypePing, TypePong:
		var v Ping
		return Decode(f, f.Type, &v)
	case TypePhase:
		var v PhaseReq
		return Decode(f, f.Type, &v)
	case TypeGrant:
		var v Grant
		return Decode(f, f.Type, &v)
	case TypeSamples:
		var v Samples
		return Decode(f, f.Type, &v)
	case TypePhaseDone:
		var v PhaseDone
		return Decode(f, f.Type, &v)
	}
	return ErrFrame
}

// FuzzReadFrame feeds arbitrary bytes to the frame decoder and the body
// decoders: an error or a valid message, never a panic, never more than
// the limit read, and a decoded frame encodes again to an equal frame.
func FuzzReadFrame(f *testing.F) {
	var b bytes.Buffer
	_ = WriteMsg(&b, TypeHello, Hello{Proto: 1, Software: "longhaul", Nonce: make([]byte, 32)})
	f.Add(b.Bytes())
	b.Reset()
	_ = WriteMsg(&b, TypeAuth, Auth{Purpose: PurposeData, ClientNonce: make([]byte, 32), MAC: make([]byte, 32), Session: "0123456789abcdef0123456789abcdef", Phase: 1, Stream: 2})
	f.Add(b.Bytes())
	b.Reset()
	_ = WriteMsg(&b, TypePhase, PhaseReq{Name: PhaseCapacity, Streams: 8, DurationS: 12.5})
	f.Add(b.Bytes())
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &countReader{r: bytes.NewReader(data)}
		fr, err := ReadFrame(r, MaxPreAuthFrame)
		if r.n > 4+MaxPreAuthFrame {
			t.Fatalf("read %d bytes past the limit", r.n)
		}
		if err != nil {
			if !errors.Is(err, ErrFrame) && !errors.Is(err, ErrVersion) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		_ = decodeAny(fr)
		var out bytes.Buffer
		if err := WriteMsg(&out, fr.Type, fr.Body); err != nil {
			t.Fatal(err)
		}
		again, err := ReadFrame(&out, MaxFrame)
		if err != nil || again.Type != fr.Type {
			t.Fatalf("re-encoded frame: %v %q", err, again.Type)
		}
	})
}

type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
