package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

const marker = "0123456789abcdef0123456789abcdef"

// TestOutput: an allow is Gemini CLI's allow with the input marked, a
// replace the same with the new input, a deny carries its reason (a
// blank one the default), and an abstain is no decision at all.
func TestOutput(t *testing.T) {
	in := json.RawMessage(`{"file_path":"a.txt"}`)
	for _, c := range []struct {
		d    record.Decision
		tool string
		want string
	}{
		{record.AllowDecision(), "read_file", `{"decision":"allow","hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"file_path":"a.txt","metaharness_allow":"` + marker + `"}}}`},
		{record.ReplaceDecision([]byte(`{"file_path":"b.txt"}`)), "read_file", `{"decision":"allow","hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"file_path":"b.txt","metaharness_allow":"` + marker + `"}}}`},
		{record.AllowDecision(), ShellTool, `{"decision":"allow","hookSpecificOutput":{"hookEventName":"BeforeTool","tool_input":{"dir_path":"./.metaharness-allow-` + marker + `/..","file_path":"a.txt"}}}`},
		{record.DenyDecision("not under this frame"), "read_file", `{"decision":"deny","reason":"not under this frame"}`},
		{record.DenyDecision("  "), "read_file", `{"decision":"deny","reason":"` + DefaultDenyReason + `"}`},
		{record.AbstainDecision(), "read_file", `{}`},
	} {
		if got := string(Output(c.d, c.tool, in, marker)); got != c.want+"\n" {
			t.Errorf("%s %s:\n got %s\nwant %s", c.d.Decision, c.tool, got, c.want)
		}
	}
	if got := string(Output(record.AllowDecision(), "read_file", json.RawMessage(`[1]`), marker)); !strings.Contains(got, `"decision":"deny","reason":"metaharness could not mark the allowed call`) {
		t.Errorf("an allow of an input that is no object: %s", got)
	}
}

// TestMarkedMatchesThePolicy: what the hook marks is what the admin
// policy's patterns allow (held to each as Gemini CLI holds the call's
// arguments, stringified), the shell's dir_path keeps naming the same
// directory, numbers keep their spelling, an MCP tool is left as it is,
// and nothing unmarked or marked with another run's marker matches.
func TestMarkedMatchesThePolicy(t *testing.T) {
	shell := regexp.MustCompile(ShellDirPattern(marker))
	other := regexp.MustCompile(MarkerPattern(marker))
	for _, c := range []struct {
		tool, in, want string
		pattern        *regexp.Regexp
	}{
		{ShellTool, `{"command":"ls && pwd"}`, `{"command":"ls \u0026\u0026 pwd","dir_path":"./.metaharness-allow-` + marker + `/.."}`, shell},
		{ShellTool, `{"command":"ls","dir_path":"sub/"}`, `{"command":"ls","dir_path":"sub/.metaharness-allow-` + marker + `/.."}`, shell},
		{"read_file", `{"file_path":"a","offset":10000000000000000000001}`, `{"file_path":"a","metaharness_allow":"` + marker + `","offset":10000000000000000000001}`, other},
	} {
		got, err := Marked(c.tool, json.RawMessage(c.in), marker)
		if err != nil || string(got) != c.want {
			t.Errorf("Marked(%s, %s) = %s, %v; want %s", c.tool, c.in, got, err, c.want)
		}
		if !c.pattern.Match(got) {
			t.Errorf("%s: the policy's pattern does not match %s", c.tool, got)
		}
		if c.pattern.MatchString(c.in) {
			t.Errorf("%s: the policy's pattern matches the unmarked %s", c.tool, c.in)
		}
		if again, _ := Marked(c.tool, json.RawMessage(c.in), strings.Repeat("f", 32)); c.pattern.Match(again) {
			t.Errorf("%s: another run's marker matches: %s", c.tool, again)
		}
	}
	if got, err := Marked("mcp_metaharness_read_file", json.RawMessage(`{"path":"a"}`), marker); err != nil || string(got) != `{"path":"a"}` {
		t.Errorf("an MCP tool was marked: %s %v", got, err)
	}
	if _, err := Marked("read_file", json.RawMessage(`null`), marker); err == nil {
		t.Error("null was marked")
	}
	// A marker the model wrote inside a string is escaped when stringified,
	// and does not match.
	if other.MatchString(`{"content":"\"metaharness_allow\":\"` + marker + `\""}`) {
		t.Error("a marker inside a string matched")
	}
}

// TestForged: a call arriving with the marker's key (in any case) or the
// marker's directory in its dir_path was written by the model.
func TestForged(t *testing.T) {
	for in, want := range map[string]bool{
		`{"file_path":"a"}`:                                        false,
		`{"file_path":"a","metaharness_allow":"x"}`:                true,
		`{"file_path":"a","Metaharness_Allow":"x"}`:                true,
		`{"command":"ls","dir_path":"/w/.metaharness-allow-0/.."}`: true,
		`{"command":"ls","dir_path":"/w"}`:                         false,
		`{"content":"metaharness_allow .metaharness-allow-"}`:      false,
		`[1,2]`:                         false,
		`{"command":"ls","dir_path":7}`: false,
		`{"command":"ls","dir_path":"a","dir_path":".metaharness-allow-x"}`: true,
	} {
		if got := Forged("any", json.RawMessage(in)); got != want {
			t.Errorf("Forged(%s) = %v, want %v", in, got, want)
		}
	}
}

// TestRunAsksTheRun drives the hook program against a real decision
// channel: it puts the hook seam's request under the pending call id and
// answers Gemini CLI in its vocabulary; a broken payload, a forged marker
// or an absent run is denied, and it always exits 0 with JSON on stdout.
func TestRunAsksTheRun(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan decide.Request, 8)
	served := make(chan error, 1)
	go func() {
		served <- decide.Serve(ctx, ln, func(_ context.Context, req decide.Request) record.Decision {
			asked <- req
			if req.Tool == ShellTool {
				return record.AllowDecision()
			}
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
		status, err := Run(strings.NewReader(payload), &out, socket)
		if err != nil || status != 0 {
			t.Fatalf("Run: %d %v", status, err)
		}
		if !json.Valid([]byte(out.String())) {
			t.Fatalf("the hook printed no JSON: %q", out.String())
		}
		return out.String()
	}
	event := func(tool, input string) string {
		return `{"session_id":"s","hook_event_name":"BeforeTool","cwd":"/w","tool_name":"` + tool + `","tool_input":` + input + `}`
	}
	if got := run(event("read_file", `{"file_path":"a"}`), sock); got != `{"decision":"deny","reason":"not under this frame"}`+"\n" {
		t.Errorf("a denied call: %s", got)
	}
	if req := <-asked; req.Seam != record.SeamHook || req.CallID != PendingCallID || req.Tool != "read_file" || string(req.Input) != `{"file_path":"a"}` {
		t.Errorf("the request on the wire: %+v", req)
	}
	if got := run(event(ShellTool, `{"command":"ls"}`), sock); !strings.Contains(got, `"dir_path":"./.metaharness-allow-`+Marker(sock)+`/.."`) {
		t.Errorf("an allowed shell call is not marked with the run's marker: %s", got)
	}
	<-asked
	for payload, says := range map[string]string{
		`{"tool_name":"read_file","tool_input":{}}`:                                                "not a BeforeTool event",
		event("read_file", `"a"`):                                                                  "tool_input is not an object",
		event("read_file", `{"file_path":"a","file_path":"b"}`):                                    `the key \"file_path\" is given twice`,
		`{"hook_event_name":"BeforeTool","tool_name":"read_file","Tool_Name":"x","tool_input":{}}`: `spelled in another case`,
		"\xff": "not UTF-8",
		"":     "cannot be read",
	} {
		if got := run(payload, sock); !strings.Contains(got, `"decision":"deny","reason":"metaharness could not read the hook payload, so nothing ran: `) || !strings.Contains(got, says) {
			t.Errorf("%q: %s", payload, got)
		}
	}
	if got := run(event("read_file", `{"file_path":"a","metaharness_allow":"`+Marker(sock)+`"}`), sock); !strings.Contains(got, `"deny","reason":"metaharness denied this call: its input carries the run's allow marker`) {
		t.Errorf("a forged marker: %s", got)
	}
	select {
	case req := <-asked:
		t.Errorf("a refused payload reached the run: %+v", req)
	default:
	}
	if got := run(event("read_file", `{}`), filepath.Join(t.TempDir(), "gone.sock")); !strings.Contains(got, `"deny","reason":"metaharness's decision channel did not answer`) {
		t.Errorf("no run listening: %s", got)
	}
}

// TestMarkerIsTheRuns: the marker is the socket's, the same each time, and
// another run's differs.
func TestMarkerIsTheRuns(t *testing.T) {
	a, b := Marker("/run/a/decisions.sock"), Marker("/run/b/decisions.sock")
	if a != Marker("/run/a/decisions.sock") || a == b || len(a) != 32 {
		t.Errorf("markers %s %s", a, b)
	}
}

// FuzzParseInput: Gemini CLI's payload is outside input; whatever it is,
// parsing returns a BeforeTool event naming a tool whose input is an
// object, or an error; and what it returns the hook can mark or refuse.
func FuzzParseInput(f *testing.F) {
	f.Add([]byte(`{"session_id":"s","hook_event_name":"BeforeTool","cwd":"/w","timestamp":"t","tool_name":"read_file","tool_input":{"file_path":"a"}}`))
	f.Add([]byte(`{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"x/.metaharness-allow-0/.."}}`))
	f.Add([]byte(`{"hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{}}`))
	f.Add([]byte(`{"hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"a":1,"a":2}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := ParseInput(b)
		if err != nil {
			return
		}
		if in.ToolName == "" || in.Event != "BeforeTool" || !json.Valid(in.ToolInput) {
			t.Fatalf("ParseInput(%q) = %+v without an error", b, in)
		}
		if Forged(in.ToolName, in.ToolInput) {
			return
		}
		out := Output(record.AllowDecision(), in.ToolName, in.ToolInput, marker)
		if !json.Valid(bytes.TrimSpace(out)) {
			t.Fatalf("Output of %q is not JSON: %q", b, out)
		}
	})
}
