package badinput

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

type notBad struct{ err error }

func (n notBad) Error() string  { return "outer: " + n.err.Error() }
func (n notBad) Unwrap() error  { return n.err }
func (n notBad) BadInput() bool { return false }

func TestIs(t *testing.T) {
	sentinel := New("no host state")
	cases := []struct {
		name string
		err  error
		want bool
		text string
	}{
		{"nil", nil, false, ""},
		{"plain", errors.New("disk on fire"), false, "disk on fire"},
		{"an I/O error wrapped", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), false, "reading: unexpected EOF"},
		{"Errorf", Errorf("plan: flows must be at least 1"), true, "plan: flows must be at least 1"},
		{"Errorf wrapping a plain error", Errorf("--snapshot: %w", io.EOF), true, "--snapshot: EOF"},
		{"wrapped twice", fmt.Errorf("test: %w", fmt.Errorf("caps: %w", Errorf("too long"))), true, "test: caps: too long"},
		{"Wrap keeps the text", Wrap(errors.New("unknown command \"x\"")), true, "unknown command \"x\""},
		{"sentinel wrapped", fmt.Errorf("%w: /tmp/x has no proc/sys", sentinel), true, "no host state: /tmp/x has no proc/sys"},
		{"joined", errors.Join(errors.New("a"), Errorf("b")), true, "a\nb"},
		{"a type that says no, around one that says yes", notBad{Errorf("inner")}, true, "outer: inner"},
		{"a type that says no", notBad{errors.New("inner")}, false, "outer: inner"},
	}
	for _, c := range cases {
		if got := Is(c.err); got != c.want {
			t.Errorf("%s: Is = %v, want %v", c.name, got, c.want)
		}
		if c.err != nil && c.err.Error() != c.text {
			t.Errorf("%s: text %q, want %q", c.name, c.err.Error(), c.text)
		}
	}
	if Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	if !errors.Is(fmt.Errorf("x: %w", sentinel), sentinel) || errors.Is(New("no host state"), sentinel) {
		t.Error("a sentinel is matched by identity")
	}
}

// JSON errors read in the document's words, marked, with no Go type or
// package name in them.
func TestJSON(t *testing.T) {
	type sample struct {
		T float64 `json:"t"`
	}
	type doc struct {
		Phases []struct {
			Samples []sample `json:"samples"`
		} `json:"phases"`
		N uint `json:"n"`
	}
	cases := []struct{ in, want string }{
		{`{"phases":[{"samples":"x"}]}`, "field phases.samples holds a string where a list was expected"},
		{`{"phases":[{"samples":[{"t":"x"}]}]}`, "field phases.samples.t holds a string where a number was expected"},
		{`{"n":-1}`, "field n holds a number (-1) where a whole number of 0 or more was expected"},
		{`[1]`, "the document holds a list where an object was expected"},
		{`{"phases":`, "the JSON ends early (cut short, or empty)"},
		{`{"phases":x}`, "not valid JSON at byte 11: invalid character 'x' looking for beginning of value"},
	}
	for _, c := range cases {
		var d doc
		err := JSON(json.NewDecoder(strings.NewReader(c.in)).Decode(&d))
		if err == nil || err.Error() != c.want || !Is(err) {
			t.Errorf("%s: %v (bad input %v), want %q", c.in, err, Is(err), c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "badinput.")) {
			t.Errorf("%s: Go's words in %q", c.in, err)
		}
	}
	if JSON(nil) != nil {
		t.Error("JSON(nil) is not nil")
	}
}
