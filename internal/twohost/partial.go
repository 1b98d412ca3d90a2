//go:build linux

package twohost

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/longhaul/longhaul/internal/twohost/judge"
	"github.com/longhaul/longhaul/internal/twohost/wire"
	"github.com/longhaul/longhaul/internal/units"
)

// PartialError ends a test at a phase that did not run to its end (the
// server stopped answering: starved of CPU, say) after others were
// measured: Run returns their measurements beside it, to be judged and
// written, and the note (Note) names what is missing.
type PartialError struct {
	Phase   string   // the phase that failed
	Missing []string // it and the phases planned after it
	Err     error
}

func (e *PartialError) Error() string { return fmt.Sprintf("test: %s phase: %v", e.Phase, e.Err) }

func (e *PartialError) Unwrap() error { return e.Err }

// Note is the sentence a test's document carries for the phases it
// lacks.
func (e *PartialError) Note() string {
	what := "the " + e.Missing[0] + " phase"
	if n := len(e.Missing); n > 1 {
		what = "the " + strings.Join(e.Missing[:n-1], ", ") + " and " + e.Missing[n-1] + " phases"
	}
	return fmt.Sprintf("not measured: %s; the test ended at the %s phase (%v); the phases before it are judged as they ran", what, e.Phase, e.Err)
}

// partial is Run's answer to a phase that failed: with phases measured
// before it, them and a PartialError; with none, the error alone.
func partial(raw *judge.Raw, rest []wire.PhaseReq, err error) (*judge.Raw, error) {
	name := phaseLabel(rest[0])
	if len(raw.Phases) == 0 {
		return nil, fmt.Errorf("test: %s phase: %w", name, err)
	}
	e := &PartialError{Phase: name, Err: err}
	for _, p := range rest {
		e.Missing = append(e.Missing, phaseLabel(p))
	}
	return raw, e
}

// phaseLabel names a phase as a note says it: the download with a
// congestion control or a pace a loss probe asked names them.
func phaseLabel(p wire.PhaseReq) string {
	switch {
	case p.CC != "":
		return p.Name + " (" + p.CC + ")"
	case p.RateBps > 0 && p.Name == wire.PhaseDownload:
		return p.Name + " (paced at " + units.FormatRate(p.RateBps) + ")"
	}
	return p.Name
}

// silentError is a frame the server did not send in time.
type silentError struct {
	typ    string
	within time.Duration
}

func (e silentError) Error() string {
	return fmt.Sprintf("no %s from the server within %s", e.typ, units.FormatDuration(e.within))
}

// silentServer says what a server's silence within a phase means: a
// server that answered before and no longer does is starved of CPU (or
// stopped), not refusing; what is not silence is left as it is.
func silentServer(err error, what string) error {
	var s silentError
	if errors.As(err, &s) {
		return fmt.Errorf("the server did not answer %s within %s: it may be overloaded (CPU)", what, units.FormatDuration(s.within))
	}
	return err
}

// streamHandshake says what a phase's stream's failed handshake means:
// the server answered the control connection's, so silence is its being
// too busy, not its not being longhaul serve.
func streamHandshake(err error, i int, within time.Duration) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("stream %d: the server did not answer its handshake within %s: it may be overloaded (CPU)", i, units.FormatDuration(within))
	}
	return fmt.Errorf("stream %d: %w", i, err)
}
