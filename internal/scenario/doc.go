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
	"github.com/longhaul/longhaul/internal/badinput"
)

// inputf is an error caused by the caller's input: an unknown scenario,
// a parameter out of range, a pattern that matches no case. Bad input:
// the CLI exits 2 on it.
func inputf(format string, a ...any) error { return badinput.Errorf(format, a...) }
