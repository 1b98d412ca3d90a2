// Package scenario is the pure half of the lab: it expands an experiment
// (the field reports' buffers, initcwnd, longrtt and upload, and verify's
// plan against a baseline) into the cases to run, predicts each run with
// the path model from the settings read back, and says what the results
// mean in sentences. Nothing here touches the host: what expansion needs
// to know about it comes in [Facts], built from a snapshot by
// [FactsFrom]. Package lab runs the cases; package report draws them.
//
// # Data flow
//
//	Params + Facts -> Expand -> Scenario{Cases} -> (lab runs each) -> State
//	State + measured metrics -> Model -> predictions beside the measurement
//	results summaries -> Headlines
package scenario

import (
	"errors"
	"fmt"
)

// ErrInput matches (errors.Is) every error caused by the caller's input:
// an unknown scenario, a parameter out of range, a pattern that matches
// no case. The CLI exits 2 on them.
var ErrInput = errors.New("bad scenario input")

// inputError is an input error whose text is the problem alone.
type inputError string

func (e inputError) Error() string        { return string(e) }
func (e inputError) Is(target error) bool { return target == ErrInput }

func inputf(format string, a ...any) error { return inputError(fmt.Sprintf(format, a...)) }
