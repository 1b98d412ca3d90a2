package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
)

// A run cut short by Ctrl-C prints one clean line, not Go's "context
// canceled" in whatever step was running (issue 53); other errors are
// printed as they are.
func TestExitCodeInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, dialErr := (&net.Dialer{}).DialContext(ctx, "tcp", "127.0.0.1:1")
	for name, err := range map[string]error{
		"wrapped": fmt.Errorf("test: connect to far: %w", context.Canceled),
		"dial":    dialErr,
	} {
		var b strings.Builder
		ExitCode(err, &b)
		if b.String() != "longhaul: interrupted\n" {
			t.Errorf("%s (%v): printed %q, want \"longhaul: interrupted\\n\"", name, err, b.String())
		}
	}
	var b strings.Builder
	if code := ExitCode(errors.New("lab: no such scenario"), &b); code != exitError || b.String() != "longhaul: lab: no such scenario\n" {
		t.Errorf("another error: %d %q", code, b.String())
	}
}
