package claude

import (
	"bytes"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/record"
)

func TestHookAnswer(t *testing.T) {
	for _, c := range []struct {
		d    record.Decision
		want string
	}{
		{record.AllowDecision(), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}` + "\n"},
		{record.DenyDecision("no shell here"), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no shell here"}}` + "\n"},
		{record.DenyDecision(""), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"` + DefaultDenyReason + `"}}` + "\n"},
		{record.ReplaceDecision([]byte(`{"command":"ls"}`)), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls"}}}` + "\n"},
		{record.AbstainDecision(), "{}\n"},
	} {
		if got := string(Kind{}.HookAnswer(c.d)); got != c.want {
			t.Errorf("%s: got %q want %q", c.d.Decision, got, c.want)
		}
	}
}

// TestHookRequest: the payload is the hook seam's request, by its
// tool_use_id; one without a tool or a call, or one two readers could read
// two ways, is refused naming the fault.
func TestHookRequest(t *testing.T) {
	req, err := Kind{}.HookRequest([]byte(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1","permission_mode":"dontAsk"}`))
	if err != nil || req.Seam != record.SeamHook || req.CallID != "toolu_1" || req.Tool != "Bash" || string(req.Input) != `{"command":"ls"}` {
		t.Errorf("the request: %+v, %v", req, err)
	}
	for payload, says := range map[string]string{
		`{"tool_name":"Bash"}`:                                                                 `names no tool_name or tool_use_id`,
		"{\"tool_name\":\"\xff\",\"tool_use_id\":\"t\"}":                                       `not UTF-8`,
		`{"tool_name":"Read","tool_name":"Bash","tool_use_id":"t"}`:                            `the key "tool_name" is given twice`,
		`{"tool_name":"Read","tool_use_id":"t","Tool_Input":{"command":"rm"},"tool_input":{}}`: `the key "Tool_Input" in the top-level object is "tool_input" spelled in another case`,
		`{"tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"ls","command":"rm"}}`:  `the key "command" is given twice in tool_input`,
	} {
		if _, err := (Kind{}).HookRequest([]byte(payload)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want an error saying %s", payload, err, says)
		}
	}
}

// FuzzHookRequest: Claude Code's payload is outside input; whatever it is,
// reading it returns a request naming a tool and a call, or an error.
func FuzzHookRequest(f *testing.F) {
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/x"},"tool_use_id":"toolu_1"}`))
	f.Add([]byte(`{"tool_name":"","tool_use_id":"x"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"tool_name":"Read","tool_name":"Bash","tool_use_id":"t"}`))
	f.Add([]byte(`{"tool_name":"Read","Tool_Name":"Bash","tool_use_id":"t","tool_input":{"a":1,"a":2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := Kind{}.HookRequest(b)
		if err == nil && (req.Tool == "" || req.CallID == "") {
			t.Fatalf("HookRequest(%q) = %+v without an error", b, req)
		}
		if err == nil && !bytes.Contains(b, []byte(req.Tool)) && !bytes.Contains(b, []byte(`\`)) {
			t.Fatalf("HookRequest(%q) named tool %q that is not in the payload", b, req.Tool)
		}
	})
}
