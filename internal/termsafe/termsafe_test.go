package termsafe

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"plain host-1.example\n\tok":                   "plain host-1.example\n\tok",
		"far\x1b]52;c;ZWNobyBoaQ==\a":                  `far\u001b]52;c;ZWNobyBoaQ==\u0007`,
		"\x1b[31mred\x1b[0m":                           `\u001b[31mred\u001b[0m`,
		"cr\rover":                                     `cr\u000dover`,
		"nul\x00del\x7f":                               `nul\u0000del\u007f`,
		"c1 csi \u009b31m and nel \u0085":              `c1 csi \u009b31m and nel \u0085`,
		"raw c1 byte \x9b31m":                          `raw c1 byte \x9b31m`,
		"cut \xe2\x82":                                 `cut \xe2\x82`,
		"Zürich, 東京, ✓, U+00A0:\u00a0":                 "Zürich, 東京, ✓, U+00A0:\u00a0",
		"overlong \xc0\xaf and surrogate \xed\xa0\x80": `overlong \xc0\xaf and surrogate \xed\xa0\x80`,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// clean reports the first byte or code point of out a terminal would obey
// as a control.
func clean(out []byte) error {
	if !utf8.Valid(out) {
		return errors.New("not valid UTF-8")
	}
	for _, r := range string(out) {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f) {
			return errors.New("a control character: " + string(r))
		}
	}
	return nil
}

// split writes data through a Writer cut at the given points.
func split(data []byte, cuts []byte) []byte {
	var out bytes.Buffer
	w := NewWriter(&out)
	rest := data
	for _, c := range cuts {
		n := min(int(c)%8, len(rest))
		w.Write(rest[:n])
		rest = rest[n:]
	}
	w.Write(rest)
	w.Flush()
	return out.Bytes()
}

func TestWriterSplitUTF8(t *testing.T) {
	in := []byte("ab\u00e9\u6771\U0001F600\u009b\x1b[0m\xe2\x82")
	want := String(string(in))
	for i := 0; i <= len(in); i++ {
		for j := i; j <= len(in); j++ {
			var out bytes.Buffer
			w := NewWriter(&out)
			for _, p := range [][]byte{in[:i], in[i:j], in[j:]} {
				if n, err := w.Write(p); n != len(p) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			w.Flush()
			if out.String() != want {
				t.Errorf("cut at %d, %d: %q, want %q", i, j, out.String(), want)
			}
		}
	}
}

// WriteRaw sends a program's own control sequence after what was held.
func TestWriteRaw(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("\x1b[2J\xe6\x9d"))
	w.WriteRaw([]byte("\r\x1b[K"))
	w.Write([]byte("x"))
	if want := `\u001b[2J\xe6\x9d` + "\r\x1b[Kx"; out.String() != want {
		t.Errorf("%q, want %q", out.String(), want)
	}
}

// encoding/json's output passes unchanged where it escaped the controls
// itself, and stays the same JSON value where it did not (DEL, C1).
func TestJSONStaysJSON(t *testing.T) {
	for _, s := range []string{"host\x1b]0;title\a\r\n\t\x00", "del\x7f c1\u0085\u009b", "bad \xff utf-8", "ünïcode ✓"} {
		raw, err := json.Marshal(map[string]string{"hostname": s})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w := NewWriter(&out)
		w.Write(raw)
		w.Flush()
		var back, want map[string]string
		if err := json.Unmarshal(out.Bytes(), &back); err != nil {
			t.Fatalf("%q: not JSON after the filter: %v: %s", s, err, out.Bytes())
		}
		json.Unmarshal(raw, &want)
		if back["hostname"] != want["hostname"] {
			t.Errorf("%q: %q after the filter, %q before", s, back["hostname"], want["hostname"])
		}
		if err := clean(out.Bytes()); err != nil {
			t.Errorf("%q: %v", s, err)
		}
		if bytes.ContainsAny([]byte(s), "\x7f\u0085\u009b") == false && !bytes.Equal(out.Bytes(), raw) {
			t.Errorf("%q: changed: %s, was %s", s, out.Bytes(), raw)
		}
	}
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte("far\x1b]52;c;aGk=\a\x1b[31m\u009b\xe2\x82\xac\xff"), []byte{1, 2, 3})
	f.Add([]byte("\xf0\x9f\x98\x80\xc2\x9b"), []byte{1, 1, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		got := split(data, cuts)
		if err := clean(got); err != nil {
			t.Fatalf("%q -> %q: %v", data, got, err)
		}
		if want := String(string(data)); string(got) != want {
			t.Fatalf("%q cut %v: %q, String gives %q", data, cuts, got, want)
		}
		if utf8.Valid(data) && safe(string(data)) && string(got) != string(data) {
			t.Fatalf("%q changed to %q", data, got)
		}
	})
}
