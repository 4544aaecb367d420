// Package hook is the BeforeTool hook program a gemini run installs (the
// hidden internal-gemini-hook verb). Gemini CLI starts it before every
// native tool call and fails open when a hook crashes, prints no JSON or
// times out, so an allow is worth nothing on its own: the run's admin
// policy denies every native call that does not carry the run's allow
// marker, and only this program adds the marker, to a call the run
// allowed (Marked). It is a package of its own, importing neither the
// launcher nor the MCP and proxy libraries, so that the process Gemini CLI
// starts for every call runs it before their package initialisation (see
// internal/earlyentry).
package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/record"
)

// Verb is the hidden verb Gemini CLI starts the hook as.
const Verb = "internal-gemini-hook"

// Args are the hook's arguments after its program's name, for the run
// whose decision channel listens at socket.
func Args(socket string) []string { return []string{Verb, "--socket", socket} }

// PendingCallID stands in for the call id the hook's payload does not
// carry: the session names the call (Gemini CLI's tool_use line) before
// the run decides it.
const PendingCallID = "gemini-hook-call"

// MarkerKey is the input field the allow marker travels in, on every
// native tool but the shell; ShellTool's marker travels in its dir_path,
// which Gemini CLI's policy engine carries into the checks of each part of
// a compound command (a && b, a | b) where an extra field is dropped.
const (
	MarkerKey  = "metaharness_allow"
	ShellTool  = "run_shell_command"
	shellDir   = "dir_path"
	markerStem = ".metaharness-allow-"
)

// Marker is the run's allow marker: a function of its decision socket's
// path (which lies in the run's own scratch tree), so that this program
// and the run's plan make the same one and nothing else need carry it.
func Marker(socket string) string {
	sum := sha256.Sum256([]byte("metaharness gemini allow\x00" + socket))
	return hex.EncodeToString(sum[:16])
}

// ShellDir is a dir_path that names dir (the cwd when "") and carries the
// marker: dir/.metaharness-allow-MARKER/.., which Gemini CLI resolves to
// dir itself.
func ShellDir(dir, marker string) string {
	if dir == "" {
		dir = "."
	}
	return strings.TrimSuffix(dir, "/") + "/" + markerStem + marker + "/.."
}

// ShellDirPattern and MarkerPattern are the admin policy's argsPattern
// for a marked call: the regular expression Gemini CLI holds the call's
// arguments, stringified, to.
func ShellDirPattern(marker string) string {
	return `"` + shellDir + `":"[^"]*/\` + markerStem + marker + `/\.\."`
}

// MarkerPattern: see ShellDirPattern.
func MarkerPattern(marker string) string { return `"` + MarkerKey + `":"` + marker + `"` }

// Run is the hook: it reads Gemini CLI's BeforeTool payload from stdin,
// asks the run's decision channel at socket, and writes the answer to
// stdout, always as JSON and always with exit status 0. Every failure is a
// deny with the reason; the only error returned is one writing stdout.
func Run(stdin io.Reader, stdout io.Writer, socket string) (int, error) {
	_, err := stdout.Write(answer(stdin, decide.Dial(socket), Marker(socket)))
	return 0, err
}

func answer(stdin io.Reader, asker decide.Asker, marker string) []byte {
	payload, err := io.ReadAll(io.LimitReader(stdin, decide.MaxInput))
	if err != nil {
		return Output(record.DenyDecision("metaharness could not read the hook payload, so nothing ran: "+err.Error()), "", nil, "")
	}
	in, err := ParseInput(payload)
	if err != nil {
		return Output(record.DenyDecision("metaharness could not read the hook payload, so nothing ran: "+err.Error()), "", nil, "")
	}
	if Forged(in.ToolName, in.ToolInput) {
		return Output(record.DenyDecision("metaharness denied this call: its input carries the run's allow marker, which only metaharness's hook adds"), "", nil, "")
	}
	// No deadline of our own: the channel's backstop lies between the
	// run's deadline and the hook's timeout.
	d, err := asker.Ask(context.Background(), decide.Request{
		Seam: record.SeamHook, CallID: PendingCallID, Tool: in.ToolName, Input: in.ToolInput,
	})
	if err != nil {
		return Output(record.DenyDecision("metaharness's decision channel did not answer, so nothing ran: "+err.Error()), "", nil, "")
	}
	return Output(d, in.ToolName, in.ToolInput, marker)
}

// Input is the part of Gemini CLI's BeforeTool payload the seam reads. It
// carries no call id.
type Input struct {
	Event     string          `json:"hook_event_name"`
	SessionID string          `json:"session_id"`
	Cwd       string          `json:"cwd"`
	ToolName  string          `json:"tool_name"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// ParseInput reads the hook's stdin.
func ParseInput(b []byte) (*Input, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("the BeforeTool payload is not UTF-8")
	}
	var in Input
	if err := jsonscan.Decode(b, &in, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("the BeforeTool payload cannot be read: %w", err)
	}
	if in.ToolName == "" || in.Event != "BeforeTool" {
		return nil, fmt.Errorf("the payload is not a BeforeTool event naming a tool")
	}
	if t := bytes.TrimSpace(in.ToolInput); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("the BeforeTool payload's tool_input is not an object")
	}
	return &in, nil
}

// Forged reports whether a call's input already carries an allow marker:
// only this program adds one, so the model wrote it.
func Forged(tool string, input json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return false
	}
	for k := range m {
		if strings.EqualFold(k, MarkerKey) {
			return true
		}
	}
	var dir string
	return json.Unmarshal(m[shellDir], &dir) == nil && strings.Contains(dir, markerStem)
}

// Marked is a native call's input with the allow marker added: in
// dir_path for the shell, else as MarkerKey. An MCP tool (mcp_…) is never
// marked: the admin policy decides those by their server.
func Marked(tool string, input json.RawMessage, marker string) (json.RawMessage, error) {
	if strings.HasPrefix(tool, "mcp_") {
		return input, nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("the input is not an object")
	}
	if tool == ShellTool {
		dir, _ := m[shellDir].(string)
		m[shellDir] = ShellDir(dir, marker)
	} else {
		m[MarkerKey] = marker
	}
	return json.Marshal(m)
}

// DefaultDenyReason stands in for a blank deny reason: the model is always
// told why.
const DefaultDenyReason = "metaharness denied this call and gave no further reason"

// Output renders a decision as the hook's stdout: an allow (or a replace:
// an allow with the new input) as Gemini CLI's allow whose tool_input is
// the input marked; a deny with its reason; abstain as no decision, which
// leaves the call to the admin policy (a native call without the marker is
// denied there).
func Output(d record.Decision, tool string, input json.RawMessage, marker string) []byte {
	var out map[string]any
	switch d.Decision {
	case record.Allow, record.Replace:
		if d.Decision == record.Replace {
			input = d.Input
		}
		marked, err := Marked(tool, input, marker)
		if err != nil {
			return Output(record.DenyDecision("metaharness could not mark the allowed call: "+err.Error()), "", nil, "")
		}
		out = map[string]any{"decision": "allow", "hookSpecificOutput": map[string]any{
			"hookEventName": "BeforeTool", "tool_input": json.RawMessage(marked)}}
	case record.Deny:
		reason := d.Reason
		if strings.TrimSpace(reason) == "" {
			reason = DefaultDenyReason
		}
		out = map[string]any{"decision": "deny", "reason": reason}
	default:
		out = map[string]any{}
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}
