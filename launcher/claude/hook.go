package claude

import (
	"encoding/json"
	"fmt"

	"github.com/metaharness/metaharness/record"
)

// HookInput is the part of Claude Code's PreToolUse payload the seam reads.
// tool_use_id is the transcript's tool_use id, which is the call_id.
type HookInput struct {
	Event     string          `json:"hook_event_name"`
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
}

// ParseHookInput reads the hook's stdin.
func ParseHookInput(b []byte) (*HookInput, error) {
	var in HookInput
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("the PreToolUse payload is not JSON: %w", err)
	}
	if in.ToolName == "" || in.ToolUseID == "" {
		return nil, fmt.Errorf("the PreToolUse payload names no tool_name or tool_use_id")
	}
	return &in, nil
}

// DefaultDenyReason stands in for a blank deny reason: the model is always
// told why.
const DefaultDenyReason = "metaharness denied this call and gave no further reason"

// HookOutput renders a decision as the hook's stdout. Abstain is no bytes
// at all, which leaves the call to Claude Code's own permission rules; an
// allow grants past them; a replace is an allow with the new input.
func HookOutput(d record.Decision) []byte {
	type out struct {
		Event        string          `json:"hookEventName"`
		Decision     string          `json:"permissionDecision"`
		Reason       string          `json:"permissionDecisionReason,omitempty"`
		UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	}
	o := out{Event: "PreToolUse"}
	switch d.Decision {
	case record.Allow:
		o.Decision = "allow"
	case record.Replace:
		o.Decision, o.UpdatedInput = "allow", d.Input
	case record.Deny:
		o.Decision, o.Reason = "deny", d.Reason
		if o.Reason == "" {
			o.Reason = DefaultDenyReason
		}
	default:
		return nil
	}
	b, _ := json.Marshal(map[string]out{"hookSpecificOutput": o})
	return append(b, '\n')
}
