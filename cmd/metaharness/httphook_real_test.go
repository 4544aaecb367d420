package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// hookFault is how a stand-in decision endpoint fails the hook's request.
type hookFault struct {
	name string
	// serve answers a request; nil leaves the port closed (nothing
	// listens), so the connection is refused.
	serve http.HandlerFunc
	// timeout, when set, is put in the settings for the hook's 60 s, so
	// that the case waits seconds, not minutes.
	timeout int
	// says is what the model's error result names of the failure.
	says string
}

// hookFaults are the failures of the channel docs/wire-facts.md A9 names.
var hookFaults = []hookFault{
	{name: "refused", says: "connect ECONNREFUSED"},
	{name: "timeout", timeout: 2, says: "timed out; blocking because", serve: func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
		}
	}},
	{name: "500", says: "HTTP 500 from", serve: func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(500)
		_, _ = w.Write(claude.Kind{}.HookAnswer(record.AllowDecision()))
	}},
	{name: "401", says: "HTTP 401 from", serve: func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Unauthorized", 401) }},
	{name: "redirect", says: "HTTP 307 from", serve: func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/decide", http.StatusTemporaryRedirect)
	}},
	{name: "not-json", says: "HTTP hook must return JSON", serve: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("allow")) }},
	{name: "cut-json", says: "HTTP hook must return valid JSON", serve: func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"`))
	}},
	{name: "another-event", says: "incorrect event name", serve: func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"PostToolUse","permissionDecision":"allow"}}`))
	}},
	{name: "unknown-decision", says: "validation failed", serve: func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"yes"}}`))
	}},
	{name: "hang-up", says: "socket hang up", serve: func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = c.Close()
		}
	}},
}

// TestRealClaudeHTTPHookFailuresBlock: with the settings the claude plan
// writes, every failure of the decision channel (a refused connection, a
// timeout, a non-2xx answer, a redirect, a body that is no hook answer, a
// connection closed unanswered) blocks the call in the pinned Claude Code:
// a Read of a file in its working directory, which its own permission
// rules would let run, and a Bash that would leave a file; the model gets
// an error result naming the failure, and the run's reader of the record
// writes a DECISION_HOOK_FAILED warning for each call. The control: the
// same refused connection with onFailure taken out of the settings lets
// the Read run, so the plan's onFailure is what holds.
func TestRealClaudeHTTPHookFailuresBlock(t *testing.T) {
	bin := vendortest.Binary(t, "claude")
	for _, f := range hookFaults {
		t.Run(f.name, func(t *testing.T) {
			ran, results, warned := hookFailureRun(t, bin, f, true)
			if len(results) != 2 {
				t.Fatalf("the model saw %d tool results, want 2: %+v", len(results), results)
			}
			// Each call is blocked; the first names what failed (2.1.328
			// names a wrong hookEventName only the first time).
			for i, r := range results {
				if !r.IsError || !strings.Contains(r.Content, `blocking because onFailure is "block"`) || i == 0 && !strings.Contains(r.Content, f.says) {
					t.Errorf("call %d: the model saw %+v, want an error naming %q", i+1, r, f.says)
				}
			}
			if ran {
				t.Error("the blocked Bash call ran")
			}
			if len(warned) != 2 {
				t.Errorf("the record's warnings %q, want a %s for each call", warned, claude.WarnHookFailed)
			}
		})
	}
	t.Run("control-without-onFailure", func(t *testing.T) {
		_, results, _ := hookFailureRun(t, bin, hookFaults[0], false)
		if len(results) == 0 || results[0].IsError || !strings.Contains(results[0].Content, "Friday") {
			t.Errorf("without onFailure the refused hook's Read should have run: %+v", results)
		}
	})
}

// hookFailureRun runs the pinned Claude Code once, unconfined, with the
// claude plan's own settings and environment pointed at a stand-in
// endpoint failing as f says (with the plan's onFailure kept, or taken
// out), against a scripted model making a Read and a Bash call. It returns
// whether the Bash ran, the tool results the model saw, and the
// DECISION_HOOK_FAILED warnings the run's reader made of the record.
func hookFailureRun(t *testing.T, bin string, f hookFault, onFailure bool) (bool, []scripted.ToolResult, []string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if f.serve == nil {
		_ = ln.Close()
	} else {
		srv := &http.Server{Handler: f.serve}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
	scratch, callerHome := t.TempDir(), t.TempDir()
	for _, d := range []string{"home", "tmp", "work"} {
		if err := os.Mkdir(filepath.Join(scratch, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	notes := filepath.Join(scratch, "work", "notes.md")
	if err := os.WriteFile(notes, []byte("the release is on Friday\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(scratch, "work", "bash-ran")
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":` + strconvQuote(notes) + `}`)}},
		{ToolCall: &scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"touch ` + marker + `"}`)}},
		{Text: "DONE"},
	}})
	t.Cleanup(up.Close)
	self, _ := os.Executable()
	plan, err := claude.Plan(&kind.Spec{Kind: "claude", Prompt: "go", Credentials: kind.CredentialsNone, ModelEndpoint: up.URL(), Decisions: "frame", Hermetic: "off"},
		&kind.World{Env: map[string]string{"HOME": callerHome}, Scratch: scratch, Binary: bin, Self: self,
			DecisionSocket: filepath.Join(scratch, "decisions.sock"), DecisionAddr: addr, DecisionToken: "test-token",
			Unconfinable: "the test runs Claude Code as the plan starts it, without the confinement"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range plan.Dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range plan.Files {
		content := file.Content
		if f.timeout > 0 {
			content = strings.Replace(content, fmt.Sprintf(`"timeout": %d`, claude.HookTimeoutSeconds), fmt.Sprintf(`"timeout": %d`, f.timeout), 1)
		}
		if !onFailure {
			content = strings.Replace(content, `"onFailure": "block",`, "", 1)
		}
		if err := os.WriteFile(file.Path, []byte(content), os.FileMode(file.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plan.Program, plan.Args...)
	cmd.Dir, cmd.Env = plan.Dir, append(plan.Env, "CLAUDE_CODE_MAX_RETRIES=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\n%s", err, stderr.String())
	}
	var results []scripted.ToolResult
	for _, r := range up.Requests() {
		results = append(results, r.ToolResults...)
	}
	var warned []string
	var rd claude.Reader
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		for _, it := range rd.Read(sc.Bytes()) {
			if w, ok := it.Event.(*record.Warning); ok && w.Code == claude.WarnHookFailed {
				warned = append(warned, w.Message)
			}
		}
	}
	_, err = os.Stat(marker)
	return err == nil, results, warned
}

// manyCalls is a session of twelve calls of the native tools: Reads,
// Bash commands and Writes, in turn, one of each Read of a file that does
// not exist; then an answer.
func manyCalls(tree string) scripted.Script {
	var turns []scripted.Turn
	call := func(name, input string) {
		turns = append(turns, scripted.Turn{ToolCall: &scripted.ToolCall{Name: name, Input: json.RawMessage(input)}})
	}
	for i := range 4 {
		call("Read", `{"file_path":`+strconvQuote(filepath.Join(tree, "notes.md"))+`}`)
		call("Bash", fmt.Sprintf(`{"command":"echo call %d","description":"say"}`, i))
		call("Write", `{"file_path":`+strconvQuote(filepath.Join(tree, fmt.Sprintf("out-%d.txt", i)))+`,"content":"x"}`)
	}
	turns[9] = scripted.Turn{ToolCall: &scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":` + strconvQuote(filepath.Join(tree, "missing.md")) + `}`)}}
	return scripted.Script{Turns: append(turns, scripted.Turn{Text: "DONE"})}
}

// goldenFrom, when set, is a metaharness binary (today's main, say) whose
// runs of TestRunClaudeManyCallsOverHTTP write the golden records instead
// of being held to them.
const goldenFrom = "METAHARNESS_HOOK_GOLDEN_FROM"

// TestRunClaudeManyCallsOverHTTP: a session of twelve calls decided
// through the decision endpoint under a frame admitting reads and the
// shell (the Writes denied), an embedder allowing all but the Writes, and
// observe: each call is one tool.requested and one tool.decided at the
// hook seam, nothing of the channel is refused or failed, the audit is
// clean, and what the record says of the calls (their events, decisions
// and results, and the census) is what the command hook's record said for
// the same script (testdata/httphook, written by a run of the binary
// before issue 38 through $METAHARNESS_HOOK_GOLDEN_FROM).
func TestRunClaudeManyCallsOverHTTP(t *testing.T) {
	for _, mode := range []string{"frame", "ask", "observe"} {
		t.Run(mode, func(t *testing.T) {
			o := newOperator(t, randomToken("sk-ant-test-REAL-"))
			o.bin = os.Getenv(goldenFrom)
			o.write("notes.md", "the release is on Friday\n")
			up := scripted.NewAnthropicServer(manyCalls(o.tree))
			defer up.Close()
			args := []string{"--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
				"--decisions", mode, "--cwd", o.tree, "--scratch-cwd", "--audit", "-p", "go"}
			var answer func(ev *record.EventLine, stdin func(string))
			switch mode {
			case "frame":
				args = append(args, "--frame", o.sealFrame("file.read", "shell"))
			case "ask":
				answer = decideAll(t, map[string]string{}, func(req *record.ToolRequested) string {
					if req.Name == "Write" {
						return `{"decision":"deny","reason":"no writes in this step"}`
					}
					return `{"decision":"allow"}`
				})
			}
			res := o.run(answer, args...)
			if res.code != 0 {
				t.Errorf("exit %d, want 0 (a clean audit)", res.code)
			}
			o.onePerCall(res, 12)
			for _, ev := range res.find("warning") {
				switch c := ev.(*record.Warning).Code; c {
				case claude.WarnHookFailed, "DECISION_CHANNEL_REFUSED", "DECISION_NOT_VENDOR":
					t.Errorf("the channel failed or refused: %s", ev.(*record.Warning).Message)
				}
			}
			got := callRecord(res)
			golden := filepath.Join("testdata", "httphook", "many-calls-"+mode+".txt")
			if o.bin != "" {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the record of the calls differs from the command hook's (%s):\n got:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// callRecord is what a run's record says of its calls, one line an event
// (the tool events, and every warning but the proxy's per-request ones,
// which name sizes and times), then the census.
func callRecord(res *runResult) string {
	var b strings.Builder
	for _, l := range res.events {
		switch ev := l.Event.(type) {
		case *record.ToolRequested:
			fmt.Fprintf(&b, "tool.requested %s %s seam=%s required=%t\n", ev.CallID, ev.Name, ev.Seam, ev.DecisionRequired)
		case *record.ToolDecided:
			fmt.Fprintf(&b, "tool.decided %s %s by=%s seam=%s reason=%q\n", ev.CallID, ev.Decision.Decision, ev.DecidedBy, ev.Seam, ev.Decision.Reason)
		case *record.ToolResult:
			fmt.Fprintf(&b, "tool.result %s error=%t\n", ev.CallID, ev.IsError != nil && *ev.IsError)
		case *record.Warning:
			if ev.Code != "LOOPBACK_REQUEST" {
				fmt.Fprintf(&b, "warning %s\n", ev.Code)
			}
		case *record.SessionEnded:
			c, _ := json.Marshal(ev.Census)
			fmt.Fprintf(&b, "census %s\n", c)
		}
	}
	return b.String()
}
