package iperf3

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// An exchange is the control connection of one iperf3 test, message by
// message in the order the bytes crossed a recording proxy: the readable
// form of testdata/*.exchange. Bulk data connections are not recorded.
type exchange struct {
	comments []string
	msgs     []xmsg
}

// xmsg is one control message: from "c" (client to server) or "s".
// kind is cookie, state, json, errors (SERVER_ERROR's tail), raw (bytes
// that fit no message) or eof.
type xmsg struct {
	from  string
	kind  string
	state int8
	text  string // cookie characters, the JSON document, or raw bytes
	ints  []int32
}

func (m xmsg) String() string {
	switch m.kind {
	case "state":
		return fmt.Sprintf("%s state %d %s", m.from, m.state, stateName(m.state))
	case "errors":
		var s []string
		for _, v := range m.ints {
			s = append(s, strconv.Itoa(int(v)))
		}
		return fmt.Sprintf("%s errors %s", m.from, strings.Join(s, " "))
	case "eof":
		return m.from + " eof"
	case "raw":
		return fmt.Sprintf("%s raw %q", m.from, m.text)
	}
	return fmt.Sprintf("%s %s %s", m.from, m.kind, m.text)
}

// tokenizer splits one direction's bytes into messages. It relies on a
// property of the protocol: no state is 0, and every length prefix under
// 16 MiB starts with a 0 byte, so the first byte tells which comes next.
type tokenizer struct {
	from      string
	buf       []byte
	gotCookie bool
}

// next returns the messages complete in buf; at end (the direction closed)
// a partial message is returned as raw.
func (t *tokenizer) next(end bool) []xmsg {
	var out []xmsg
	for len(t.buf) > 0 {
		if t.from == "c" && !t.gotCookie {
			if len(t.buf) < cookieLen {
				break
			}
			out = append(out, xmsg{from: "c", kind: "cookie", text: strings.TrimRight(string(t.buf[:cookieLen]), "\x00")})
			t.buf = t.buf[cookieLen:]
			t.gotCookie = true
			continue
		}
		b := t.buf[0]
		if b == 0 {
			if len(t.buf) < 4 {
				break
			}
			n := int(binary.BigEndian.Uint32(t.buf))
			if len(t.buf) < 4+n {
				break
			}
			out = append(out, xmsg{from: t.from, kind: "json", text: string(t.buf[4 : 4+n])})
			t.buf = t.buf[4+n:]
			continue
		}
		if t.from == "s" && int8(b) == stateServerError {
			if len(t.buf) < 9 && !end {
				break
			}
			out = append(out, xmsg{from: "s", kind: "state", state: stateServerError})
			tail := t.buf[1:min(9, len(t.buf))]
			m := xmsg{from: "s", kind: "errors"}
			for len(tail) >= 4 {
				m.ints = append(m.ints, int32(binary.BigEndian.Uint32(tail)))
				tail = tail[4:]
			}
			if len(m.ints) > 0 {
				out = append(out, m)
			}
			t.buf = t.buf[1+4*len(m.ints):]
			continue
		}
		out = append(out, xmsg{from: t.from, kind: "state", state: int8(b)})
		t.buf = t.buf[1:]
	}
	if end && len(t.buf) > 0 {
		out = append(out, xmsg{from: t.from, kind: "raw", text: string(t.buf)})
		t.buf = nil
	}
	return out
}

func (x *exchange) write(path string) error {
	var b strings.Builder
	for _, c := range x.comments {
		fmt.Fprintf(&b, "# %s\n", c)
	}
	for _, m := range x.msgs {
		b.WriteString(m.String())
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func readExchange(t testing.TB, path string) *exchange {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	x := &exchange{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, maxResultsJSON+1024)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if c, ok := strings.CutPrefix(line, "# "); ok {
			x.comments = append(x.comments, c)
			continue
		}
		from, rest, _ := strings.Cut(line, " ")
		kind, val, _ := strings.Cut(rest, " ")
		m := xmsg{from: from, kind: kind}
		switch kind {
		case "state":
			num, _, _ := strings.Cut(val, " ")
			n, err := strconv.Atoi(num)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			m.state = int8(n)
		case "errors":
			for _, f := range strings.Fields(val) {
				n, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("%s: %q: %v", path, line, err)
				}
				m.ints = append(m.ints, int32(n))
			}
		case "raw":
			s, err := strconv.Unquote(val)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			m.text = s
		default:
			m.text = val
		}
		x.msgs = append(x.msgs, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return x
}
