package claude

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

var _ kind.HookEndpoint = Kind{}

// hookPayload is the part of Claude Code's PreToolUse payload the seam
// reads, as its http hook posts it (docs/wire-facts.md A9). tool_use_id is
// the transcript's tool_use id, which is the call_id.
type hookPayload struct {
	Event     string          `json:"hook_event_name"`
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
}

// HookRequest reads the PreToolUse payload as a decision request at the
// hook seam. The payload is read by the strict reader: a key given twice
// or in another case is a payload refused, never one read two ways.
func (Kind) HookRequest(body []byte) (decide.Request, error) {
	// Claude Code writes UTF-8; a decoder would turn a stray byte into
	// U+FFFD, a tool name the payload never had.
	if !utf8.Valid(body) {
		return decide.Request{}, fmt.Errorf("the PreToolUse payload is not UTF-8")
	}
	var in hookPayload
	if err := jsonscan.Decode(body, &in, jsonscan.Options{}); err != nil {
		return decide.Request{}, fmt.Errorf("the PreToolUse payload cannot be read: %w", err)
	}
	if in.ToolName == "" || in.ToolUseID == "" {
		return decide.Request{}, fmt.Errorf("the PreToolUse payload names no tool_name or tool_use_id")
	}
	return decide.Request{Seam: record.SeamHook, CallID: in.ToolUseID, Tool: in.ToolName, Input: in.ToolInput}, nil
}

// DefaultDenyReason stands in for a blank deny reason: the model is always
// told why.
const DefaultDenyReason = "metaharness denied this call and gave no further reason"

// HookAnswer renders a decision as the body Claude Code reads from its
// http hook: an allow grants past its own permission rules, a replace is
// an allow with the new input, a deny carries its reason; an abstain is an
// empty object, which leaves the call to Claude Code's own permission
// rules.
func (Kind) HookAnswer(d record.Decision) []byte {
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
		return []byte("{}\n")
	}
	b, _ := json.Marshal(map[string]out{"hookSpecificOutput": o})
	return append(b, '\n')
}
