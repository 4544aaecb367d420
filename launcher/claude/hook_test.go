package claude

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

// TestHookAsksTheRun drives the hook program against a real decision
// channel: the request it puts is the hook seam's, and the answer reaches
// Claude Code in its vocabulary; a broken payload or an absent run denies.
func TestHookAsksTheRun(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan decide.Request, 1)
	served := make(chan error, 1)
	go func() {
		served <- decide.Serve(ctx, ln, func(_ context.Context, req decide.Request) record.Decision {
			asked <- req
			return record.DenyDecision("not under this frame")
		})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	hook := func(payload, socket string) string {
		var out strings.Builder
		if err := Hook(strings.NewReader(payload), &out, socket); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	got := hook(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`, sock)
	if want := `"permissionDecision":"deny","permissionDecisionReason":"not under this frame"`; !strings.Contains(got, want) {
		t.Errorf("hook printed %s, want %s", got, want)
	}
	if req := <-asked; req.Seam != record.SeamHook || req.CallID != "toolu_1" || req.Tool != "Bash" || string(req.Input) != `{"command":"ls"}` {
		t.Errorf("the request on the wire: %+v", req)
	}
	if got := hook(`{"tool_name":"Bash"}`, sock); !strings.Contains(got, `"deny","permissionDecisionReason":"metaharness could not read the hook payload`) {
		t.Errorf("a payload without tool_use_id: %s", got)
	}
	if got := hook(`{"tool_name":"Bash","tool_use_id":"t"}`, filepath.Join(t.TempDir(), "gone.sock")); !strings.Contains(got, `"deny","permissionDecisionReason":"metaharness's decision channel did not answer`) {
		t.Errorf("no run listening: %s", got)
	}
}

// TestBackstopLiesBetweenTheDeadlines: the hook waits past the run's own
// deadline for the call and gives up inside Claude Code's hook timeout.
func TestBackstopLiesBetweenTheDeadlines(t *testing.T) {
	vendor := HookTimeoutSeconds * time.Second
	if run := frame.DeadlineFor(vendor); !(run < decide.Backstop && decide.Backstop < vendor) {
		t.Errorf("backstop %v is not between the run's deadline %v and the hook timeout %v", decide.Backstop, run, vendor)
	}
}
