package claude

import (
	"testing"
	"time"

	"github.com/metaharness/metaharness/frame"
)

// TestRunAnswersInsideTheHookTimeout: the run's own deadline for a pending
// call lies inside Claude Code's hook timeout, so that an unanswered call
// is the run's deny, never the vendor's timeout.
func TestRunAnswersInsideTheHookTimeout(t *testing.T) {
	vendor := HookTimeoutSeconds * time.Second
	if run := frame.DeadlineFor(vendor); run >= vendor {
		t.Errorf("the run's deadline %v is not inside the hook timeout %v", run, vendor)
	}
}
