package claude

import (
	"testing"
	"time"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
)

// TestBackstopLiesBetweenTheDeadlines: the hook waits past the run's own
// deadline for the call and gives up inside Claude Code's hook timeout.
func TestBackstopLiesBetweenTheDeadlines(t *testing.T) {
	vendor := HookTimeoutSeconds * time.Second
	if run := frame.DeadlineFor(vendor); !(run < decide.Backstop && decide.Backstop < vendor) {
		t.Errorf("backstop %v is not between the run's deadline %v and the hook timeout %v", decide.Backstop, run, vendor)
	}
}
