// Package termsafe keeps text that came from a file or a far host from
// driving the terminal it is printed on: a snapshot's hostname, a lab
// label or an error quoting either could otherwise set the window title,
// write the clipboard (OSC 52), recolour or rewrite the screen.
//
// What is shown visibly instead of passed on:
//   - C0 control characters (U+0000-U+001F) but newline and tab, and DEL
//     (U+007F), as \u00XX: ESC is \u001b, CR \u000d;
//   - C1 control characters (U+0080-U+009F, which VT terminals obey as
//     ESC sequences), as \u00XX;
//   - bytes that are not valid UTF-8 (an 8-bit terminal reads 0x80-0x9F
//     as C1), as \xXX.
//
// The \u00XX form is JSON's and Go's own escape: a JSON document (where
// encoding/json passes DEL and C1 characters raw) stays valid and means
// the same after it; everything else, printable text in any script
// included, passes through byte for byte.
package termsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// String returns s with every control character but newline and tab,
// and every byte that is not valid UTF-8, written visibly (see the
// package comment).
func String(s string) string {
	if safe(s) {
		return s
	}
	b, _ := appendSafe(nil, []byte(s), true)
	return string(b)
}

// safe reports whether s needs no change: printable ASCII, newline and
// tab only (the common case, checked without allocating).
func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x7f || (c < 0x20 && c != '\n' && c != '\t') {
			return false
		}
	}
	return true
}

// appendSafe appends src, made safe, to dst. Unless final, an incomplete
// UTF-8 sequence at src's end is left out (its length is returned as
// rest) so that the next piece can complete it; with final it is written
// byte by byte as invalid.
func appendSafe(dst, src []byte, final bool) (out []byte, rest int) {
	start := 0 // src[start:i] is safe and not yet copied
	for i := 0; i < len(src); {
		c := src[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f || c == '\n' || c == '\t' {
				i++
				continue
			}
			dst = append(append(dst, src[start:i]...), '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			i++
			start = i
			continue
		}
		if !final && !utf8.FullRune(src[i:]) {
			return append(dst, src[start:i]...), len(src) - i
		}
		r, size := utf8.DecodeRune(src[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(append(dst, src[start:i]...), '\\', 'x', hex[c>>4], hex[c&15])
		case r >= 0x80 && r <= 0x9f:
			dst = append(append(dst, src[start:i]...), '\\', 'u', '0', '0', hex[r>>4], hex[r&15])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, src[start:]...), 0
}

// Writer passes a byte stream on made safe as String makes a string, so
// that a whole command's output can be filtered: the result is the same
// however the stream is cut into writes (a UTF-8 sequence split between
// two writes is held until the next one completes it; Flush writes what
// is held at the stream's end). It is safe for concurrent use; each
// Write reaches the underlying writer as one write.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending [utf8.UTFMax]byte // an incomplete UTF-8 sequence, at most 3 bytes
	np      int
	buf     []byte
}

// NewWriter returns a Writer that writes the safe form of its input to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p made safe. It reports len(p) written on success (what
// the caller gave, not the longer escaped form).
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	src := p
	if t.np > 0 {
		src = append(t.pending[:t.np:t.np], p...)
	}
	out, rest := appendSafe(t.buf[:0], src, false)
	t.np = copy(t.pending[:], src[len(src)-rest:])
	t.buf = out[:0]
	if cap(out) > 64<<10 {
		t.buf = nil // do not keep a big output's buffer for good
	}
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := t.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteRaw writes p unfiltered, after whatever the Writer holds: for the
// control sequences a program means to send (a progress line's "\r\033[K"),
// never for text that came from outside.
func (t *Writer) WriteRaw(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.flush(); err != nil {
		return 0, err
	}
	return t.w.Write(p)
}

// Flush writes an incomplete UTF-8 sequence the stream ended on, as
// invalid bytes.
func (t *Writer) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flush()
}

func (t *Writer) flush() error {
	if t.np == 0 {
		return nil
	}
	out, _ := appendSafe(nil, t.pending[:t.np], true)
	t.np = 0
	_, err := t.w.Write(out)
	return err
}

// Raw is the writer t writes to.
func (t *Writer) Raw() io.Writer { return t.w }
