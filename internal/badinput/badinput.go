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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
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

// JSON says what is wrong with a JSON document in the document's words,
// not Go's (json: cannot unmarshal string into Go struct field
// testDoc.phases of type []results.Sample): the field's path, what it
// holds and what was expected; or where the syntax breaks; or that it
// ends early. The result is marked; nil stays nil.
func JSON(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the document"
		} else {
			field = "field " + strings.TrimPrefix(field, ".")
		}
		return marked{fmt.Errorf("%s holds %s where %s was expected", field, jsonKind(te.Value), goKind(te.Type))}
	case errors.As(err, &se):
		return marked{fmt.Errorf("not valid JSON at byte %d: %v", se.Offset, err)}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return marked{errors.New("the JSON ends early (cut short, or empty)")}
	}
	return marked{err}
}

// jsonKind names the kind of JSON value encoding/json reports.
func jsonKind(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "string":
		return "a string"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number"):
		return "a number (" + strings.TrimSpace(strings.TrimPrefix(v, "number")) + ")"
	}
	return v
}

// goKind names what a Go type reads from JSON.
func goKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number of 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another kind of value"
}
