package hook

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

func TestOutput(t *testing.T) {
	for _, c := range []struct {
		d    record.Decision
		want string
	}{
		{record.AllowDecision(), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}` + "\n"},
		{record.DenyDecision("no shell here"), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no shell here"}}` + "\n"},
		{record.ReplaceDecision([]byte(`{"command":"ls"}`)), `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls"}}}` + "\n"},
		{record.AbstainDecision(), ``},
	} {
		if got := string(Output(c.d)); got != c.want {
			t.Errorf("%s: got %q want %q", c.d.Decision, got, c.want)
		}
	}
}

// TestRunAsksTheRun drives the hook program against a real decision
// channel: the request it puts is the hook seam's, and the answer reaches
// Claude Code in its vocabulary; a broken payload or an absent run denies.
func TestRunAsksTheRun(t *testing.T) {
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
		}, decide.Options{})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	run := func(payload, socket string) string {
		var out strings.Builder
		if err := Run(strings.NewReader(payload), &out, socket); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	got := run(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`, sock)
	if want := `"permissionDecision":"deny","permissionDecisionReason":"not under this frame"`; !strings.Contains(got, want) {
		t.Errorf("hook printed %s, want %s", got, want)
	}
	if req := <-asked; req.Seam != record.SeamHook || req.CallID != "toolu_1" || req.Tool != "Bash" || string(req.Input) != `{"command":"ls"}` {
		t.Errorf("the request on the wire: %+v", req)
	}
	if got := run(`{"tool_name":"Bash"}`, sock); !strings.Contains(got, `"deny","permissionDecisionReason":"metaharness could not read the hook payload`) {
		t.Errorf("a payload without tool_use_id: %s", got)
	}
	// A payload two readers could read two ways is denied, naming the key.
	for payload, says := range map[string]string{
		`{"tool_name":"Read","tool_name":"Bash","tool_use_id":"t"}`:                            `the key \"tool_name\" is given twice`,
		`{"tool_name":"Read","tool_use_id":"t","Tool_Input":{"command":"rm"},"tool_input":{}}`: `the key \"Tool_Input\" in the top-level object is \"tool_input\" spelled in another case`,
		`{"tool_name":"Bash","tool_use_id":"t","tool_input":{"command":"ls","command":"rm"}}`:  `the key \"command\" is given twice in tool_input`,
	} {
		if got := run(payload, sock); !strings.Contains(got, `"deny","permissionDecisionReason":"metaharness could not read the hook payload, so nothing ran: the PreToolUse payload cannot be read: `) || !strings.Contains(got, says) {
			t.Errorf("%s: %s", payload, got)
		}
	}
	if got := run(`{"tool_name":"Bash","tool_use_id":"t"}`, filepath.Join(t.TempDir(), "gone.sock")); !strings.Contains(got, `"deny","permissionDecisionReason":"metaharness's decision channel did not answer`) {
		t.Errorf("no run listening: %s", got)
	}
}

// FuzzParseInput: Claude Code's payload is outside input; whatever it is,
// parsing returns an Input naming a tool and a call, or an error.
func FuzzParseInput(f *testing.F) {
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/x"},"tool_use_id":"toolu_1"}`))
	f.Add([]byte(`{"tool_name":"","tool_use_id":"x"}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"tool_name":"Read","tool_name":"Bash","tool_use_id":"t"}`))
	f.Add([]byte(`{"tool_name":"Read","Tool_Name":"Bash","tool_use_id":"t","tool_input":{"a":1,"a":2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInput(b)
		if err == nil && (in.ToolName == "" || in.ToolUseID == "") {
			t.Fatalf("ParseInput(%q) = %+v without an error", b, in)
		}
		if err == nil && !bytes.Contains(b, []byte(in.ToolName)) && !bytes.Contains(b, []byte(`\`)) {
			t.Fatalf("ParseInput(%q) named tool %q that is not in the payload", b, in.ToolName)
		}
	})
}
