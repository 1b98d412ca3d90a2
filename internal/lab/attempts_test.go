//go:build linux

package lab

import (
	"context"
	"errors"
	"testing"

	"github.com/longhaul/longhaul/internal/results"
)

// A run that comes out invalid is made again up to the retries, each
// attempt kept in order; a valid one ends it; errors and a cancelled
// context stop it.
func TestAttemptsRetryInvalid(t *testing.T) {
	outcomes := func(valid ...bool) func(int) (results.Run, error) {
		return func(attempt int) (results.Run, error) {
			return results.Run{Attempt: attempt, Valid: valid[attempt-1]}, nil
		}
	}
	for _, tc := range []struct {
		name    string
		retries int
		valid   []bool
		want    int // attempts kept
	}{
		{"valid first", 2, []bool{true}, 1},
		{"no retries", 0, []bool{false}, 1},
		{"valid on the third", 2, []bool{false, false, true}, 3},
		{"still invalid after all", 1, []bool{false, false, true}, 2},
	} {
		var kept []results.Run
		err := attempts(context.Background(), tc.retries, outcomes(tc.valid...), func(r results.Run) error {
			kept = append(kept, r)
			return nil
		})
		if err != nil || len(kept) != tc.want {
			t.Errorf("%s: %d attempts kept (%v), want %d", tc.name, len(kept), err, tc.want)
			continue
		}
		for i, r := range kept {
			if r.Attempt != i+1 {
				t.Errorf("%s: attempt %d kept as %d", tc.name, i+1, r.Attempt)
			}
		}
	}

	boom := errors.New("peer failed to start")
	n := 0
	err := attempts(context.Background(), 3, func(int) (results.Run, error) { n++; return results.Run{}, boom }, func(results.Run) error { return nil })
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("an error: %v after %d attempts, want it after 1", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	err = attempts(ctx, 3, func(int) (results.Run, error) { n++; cancel(); return results.Run{}, nil }, func(results.Run) error { return nil })
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("cancelled: %v after %d attempts, want Canceled after 1", err, n)
	}
	full := errors.New("disk full")
	err = attempts(context.Background(), 3, outcomes(false, true), func(results.Run) error { return full })
	if !errors.Is(err, full) {
		t.Errorf("a write that failed: %v", err)
	}
}
