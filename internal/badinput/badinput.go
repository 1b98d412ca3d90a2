// Package badinput marks the errors a caller's input caused: a value out
// of range, a malformed file, a plan a format cannot express, a request
// the server's caps cannot fit, a peer binary to install. The command
// line asks once (Is) and exits 2 for them (the user must change what
// they gave), 1 for anything else; no package parses another's error
// text to decide.
//
// A package marks its own errors (Errorf, Wrap, New) and keeps its own
// words: the mark changes no error's text.
package badinput

import (
	"errors"
	"fmt"
)

// Error is what an error caused by bad input implements, in the manner
// of net.Error's Timeout: any type may, the mark travels through
// wrapping (fmt.Errorf's %w, errors.Join).
type Error interface {
	error
	BadInput() bool
}

type marked struct{ err error }

func (m marked) Error() string  { return m.err.Error() }
func (m marked) Unwrap() error  { return m.err }
func (m marked) BadInput() bool { return true }

// Errorf formats as fmt.Errorf does (with %w) and marks the result.
func Errorf(format string, a ...any) error { return marked{fmt.Errorf(format, a...)} }

// New is errors.New, marked: a sentinel that errors.Is matches and that
// is bad input wherever it is wrapped.
func New(text string) error { return &sentinel{text} }

type sentinel struct{ s string }

func (e *sentinel) Error() string  { return e.s }
func (e *sentinel) BadInput() bool { return true }

// Wrap marks err as bad input without changing its text; nil stays nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return marked{err}
}

// Is reports whether err, or any error it wraps, is bad input.
func Is(err error) bool {
	for err != nil {
		var b Error
		if !errors.As(err, &b) {
			return false
		}
		if b.BadInput() {
			return true
		}
		// An error that says "not bad input" hides none it wraps from
		// errors.As; look past it.
		u, ok := b.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
