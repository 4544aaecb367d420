package main

import (
	"context"
	"io"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// hookCmd is the PreToolUse hook a claude run installs: it hands the call to
// the run's decision channel and prints the answer in Claude Code's hook
// vocabulary. It always exits 0: a failure is a deny with the reason, never
// a hook error the vendor might read as "go ahead".
type hookCmd struct {
	Socket string `required:"" help:"The run's decision channel."`
}

// hookBackstop is how long the hook waits for the run: past the engine's
// own deadline (55 s) and inside Claude Code's hook timeout (60 s).
const hookBackstop = 57 * time.Second

func (c *hookCmd) run(e *env) (exit.Code, error) {
	d := c.decide(e.stdin)
	_, err := e.stdout.Write(claude.HookOutput(d))
	return exit.OK, err
}

func (c *hookCmd) decide(stdin io.Reader) record.Decision {
	payload, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
	if err != nil {
		return record.DenyDecision("metaharness could not read the hook payload, so nothing ran: " + err.Error())
	}
	in, err := claude.ParseHookInput(payload)
	if err != nil {
		return record.DenyDecision("metaharness could not read the hook payload, so nothing ran: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookBackstop)
	defer cancel()
	d, err := mcpserve.DialDecider(c.Socket).Decide(ctx, mcpserve.DecisionRequest{
		Seam: "hook", CallID: in.ToolUseID, Tool: in.ToolName, Input: in.ToolInput,
	})
	if err != nil {
		return record.DenyDecision("metaharness's decision channel did not answer, so nothing ran: " + err.Error())
	}
	return d
}
