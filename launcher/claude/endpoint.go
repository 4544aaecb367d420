package claude

import (
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/claude/hook"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

var _ kind.HookEndpoint = Kind{}

// HookRequest reads the PreToolUse payload Claude Code's http hook posts:
// the same payload a command hook reads on stdin (docs/wire-facts.md A9).
func (Kind) HookRequest(body []byte) (decide.Request, error) {
	in, err := hook.ParseInput(body)
	if err != nil {
		return decide.Request{}, err
	}
	return decide.Request{Seam: record.SeamHook, CallID: in.ToolUseID, Tool: in.ToolName, Input: in.ToolInput}, nil
}

// HookAnswer is the hook's answer as Claude Code reads an http hook's body:
// the command hook's stdout, and for an abstain an empty object, which
// leaves the call to Claude Code's own permission rules as a command
// hook's empty stdout does.
func (Kind) HookAnswer(d record.Decision) []byte {
	if out := hook.Output(d); out != nil {
		return out
	}
	return []byte("{}\n")
}
