package main

import (
	"fmt"
	"testing"
)

// rateCase runs a ground-truth case whose verdict is right at a rate,
// not always: the causes matrix asks for 9 of 10 runs by test and 8 of
// 10 by analyze and flows (bench/causes.md), so one wrong run is one sample of
// that rate, not a failure. run makes one run and returns why its
// verdict is wrong ("" right). A wrong first run is followed by two more,
// and both must be right. A case right in 9 runs of 10 then fails 1.9%
// of the time, one right in 8 of 10 6.4%, one right in half of them
// 37.5%; a case that is never right fails every time.
//
// Only the verdict goes through here: run reports anything else wrong
// (a number off, a missing line) with t.Errorf or t.Fatalf as usual.
func rateCase(t *testing.T, run func(try int) (wrong string)) {
	t.Helper()
	first := run(1)
	if first == "" {
		return
	}
	t.Logf("run 1 wrong: %s; two more runs, both must be right", first)
	for try := 2; try <= 3; try++ {
		if wrong := run(try); wrong != "" {
			t.Fatalf("run %d wrong as well: %s (run 1: %s)", try, wrong, first)
		}
	}
}

// tryName is the name of what run try of a case keeps (a capture):
// the case's own for the first run, "-N" after it for a run made again.
func tryName(name string, try int) string {
	if try > 1 {
		return fmt.Sprintf("%s-%d", name, try)
	}
	return name
}
