package meshplan

import (
	"testing"

	"github.com/longhaul/longhaul/internal/twohost"
)

// minPhase is the client's shortest phase.
func TestMinPhase(t *testing.T) {
	if minPhase != twohost.MinPhase {
		t.Errorf("minPhase %s, the client's %s", minPhase, twohost.MinPhase)
	}
}
