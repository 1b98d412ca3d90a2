//go:build linux

package cli

import (
	"context"
	"io"
	"strings"
	"testing"
)

// Ctrl-C before the first interval: --watch ends quietly (it printed
// "context canceled"); one interval says it was interrupted.
func TestFlowsInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, []string{"flows", "--watch"}, io.Discard, io.Discard); err != nil {
		if strings.Contains(err.Error(), "sock_diag") {
			t.Skip(err)
		}
		t.Errorf("flows --watch interrupted: %v", err)
	}
	err := Run(ctx, []string{"flows"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "context canceled") {
		t.Errorf("flows interrupted: %v", err)
	}
}
