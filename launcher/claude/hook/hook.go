// Package hook is the PreToolUse hook program a claude run installs (the
// hidden internal-hook verb). It is a package of its own, importing neither
// the launcher nor the MCP and proxy libraries, so that the process Claude
// Code starts for every call can run it before their package initialisation
// (see internal/earlyentry).
package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/record"
)

// maxPayload bounds the PreToolUse payload read from the hook's stdin
// (it carries the call's input, which for Write holds a whole file).
const maxPayload = decide.MaxInput

// Args are the hook's arguments after its program's name, for the run
// whose decision channel listens at socket.
func Args(socket string) []string { return []string{"internal-hook", "--socket", socket} }

// Run is the hook: it reads Claude Code's payload from stdin, asks the
// run's decision channel at socket, and writes the answer to stdout in the
// hook's vocabulary. Every failure is a deny with the reason, never a hook
// error the vendor might read as "go ahead"; the only error returned is
// one writing stdout.
func Run(stdin io.Reader, stdout io.Writer, socket string) error {
	_, err := stdout.Write(Output(decision(stdin, decide.Dial(socket))))
	return err
}

func decision(stdin io.Reader, asker decide.Asker) record.Decision {
	payload, err := io.ReadAll(io.LimitReader(stdin, maxPayload))
	if err != nil {
		return record.DenyDecision("metaharness could not read the hook payload, so nothing ran: " + err.Error())
	}
	in, err := ParseInput(payload)
	if err != nil {
		return record.DenyDecision("metaharness could not read the hook payload, so nothing ran: " + err.Error())
	}
	// No deadline of our own: the channel's backstop lies between the
	// run's deadline and claude.HookTimeoutSeconds.
	d, err := asker.Ask(context.Background(), decide.Request{
		Seam: record.SeamHook, CallID: in.ToolUseID, Tool: in.ToolName, Input: in.ToolInput,
	})
	if err != nil {
		return record.DenyDecision("metaharness's decision channel did not answer, so nothing ran: " + err.Error())
	}
	return d
}

// Input is the part of Claude Code's PreToolUse payload the seam reads.
// tool_use_id is the transcript's tool_use id, which is the call_id.
type Input struct {
	Event     string          `json:"hook_event_name"`
	SessionID string          `json:"session_id"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
	ToolUseID string          `json:"tool_use_id"`
}

// ParseInput reads the hook's stdin.
func ParseInput(b []byte) (*Input, error) {
	// Claude Code writes UTF-8; a decoder would turn a stray byte into
	// U+FFFD, a tool name the payload never had.
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("the PreToolUse payload is not UTF-8")
	}
	var in Input
	if err := jsonscan.Decode(b, &in, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("the PreToolUse payload cannot be read: %w", err)
	}
	if in.ToolName == "" || in.ToolUseID == "" {
		return nil, fmt.Errorf("the PreToolUse payload names no tool_name or tool_use_id")
	}
	return &in, nil
}

// DefaultDenyReason stands in for a blank deny reason: the model is always
// told why.
const DefaultDenyReason = "metaharness denied this call and gave no further reason"

// Output renders a decision as the hook's stdout. Abstain is no bytes
// at all, which leaves the call to Claude Code's own permission rules; an
// allow grants past them; a replace is an allow with the new input.
func Output(d record.Decision) []byte {
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
