package gemini

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// TestBackstopLiesBetweenTheDeadlines: the hook waits past the run's own
// deadline for the call and gives up inside Gemini CLI's hook timeout.
func TestBackstopLiesBetweenTheDeadlines(t *testing.T) {
	if run := frame.DeadlineFor(HookTimeout); !(run < decide.Backstop && decide.Backstop < HookTimeout) {
		t.Errorf("backstop %v is not between the run's deadline %v and the hook timeout %v", decide.Backstop, run, HookTimeout)
	}
}

// TestEscapeMentions: every @ Gemini CLI would read as a path mention is
// escaped and named; an escaped one and a task without any stay as they
// are.
func TestEscapeMentions(t *testing.T) {
	for _, c := range []struct {
		task, want string
		found      []string
	}{
		{"read the notes", "read the notes", nil},
		{"read @notes.md, then stop", `read \@notes.md, then stop`, []string{"@notes.md"}},
		{"@a and @b/c.txt.", `\@a and \@b/c.txt.`, []string{"@a", "@b/c.txt"}},
		{`see @"my notes.md"`, `see \@"my notes.md"`, []string{`@"my notes.md"`}},
		{`already \@escaped`, `already \@escaped`, nil},
		{"mail bob@example.com", `mail bob\@example.com`, []string{"@example.com"}},
		{"a lone @ sign", "a lone @ sign", nil},
	} {
		got, found := EscapeMentions(c.task)
		if got != c.want || !slices.Equal(found, c.found) {
			t.Errorf("EscapeMentions(%q) = %q %q, want %q %q", c.task, got, found, c.want, c.found)
		}
	}
}

// TestEscapeImports: an @ a GEMINI.md import would start with (at the
// start, after white space) is escaped; one inside a word is not.
func TestEscapeImports(t *testing.T) {
	in := "@rules.md\nsee @other.md and bob@example.com\n\t@tabbed"
	want := "\\@rules.md\nsee \\@other.md and bob@example.com\n\t\\@tabbed"
	if got := EscapeImports(in); got != want {
		t.Errorf("EscapeImports = %q, want %q", got, want)
	}
}

// TestIsSlashCommand holds Gemini CLI 0.61.0's own test of a prompt.
func TestIsSlashCommand(t *testing.T) {
	for task, want := range map[string]bool{
		"/help": true, "/": true, "// a comment": false, "/* a block */": false, "fix /etc/hosts": false, " /help": false,
	} {
		if got := isSlashCommand(task); got != want {
			t.Errorf("isSlashCommand(%q) = %v", task, got)
		}
	}
}

// TestResolve: native calls resolve through the table with their subject,
// other servers' MCP tools to mcp.call, the owned server's entries through
// the contract, and anything unknown to nothing.
func TestResolve(t *testing.T) {
	res := Kind{}.Resolve(nil)
	for _, c := range []struct {
		tool, input string
		ops         []string
		subjects    []string
	}{
		{"read_file", `{"file_path":"a.txt"}`, []string{"file.read"}, []string{"file:a.txt"}},
		{"list_directory", `{}`, []string{"dir.list"}, []string{"file:."}},
		{shellTool, `{"command":"git status && rm x"}`, []string{"shell"}, []string{"proc:git"}},
		{"web_fetch", `{"prompt":"x"}`, []string{"web.read"}, nil},
		{"mcp_other_search", `{}`, []string{frame.MCPCall}, nil},
		{"mcp_metaharness_fs_read", `{}`, nil, nil}, // no contract
		{"mcp_", `{}`, nil, nil},
		{"save_memory", `{"fact":"x"}`, nil, nil},
	} {
		r := res(c.tool, json.RawMessage(c.input))
		var ops []string
		for _, o := range r.Operations {
			ops = append(ops, o.Op)
		}
		if !slices.Equal(ops, c.ops) || !slices.Equal(r.Subjects, c.subjects) {
			t.Errorf("%s %s: %v %v, want %v %v", c.tool, c.input, ops, r.Subjects, c.ops, c.subjects)
		}
	}
	if r := res("mcp_other_search", json.RawMessage(`{}`)); r.Operations[0].Server != "other" || r.Operations[0].Tool != "search" {
		t.Errorf("an MCP call names %+v", r.Operations[0])
	}
}

// TestSameCall: a call shown by Gemini CLI is the wire's when its name
// and its input as JSON.parse reads it agree; the owned server's shows
// drop null fields.
func TestSameCall(t *testing.T) {
	call := loopback.Call{Name: " read_file ", Input: json.RawMessage(`{"file_path":"a","limit":1.0}`)}
	if err := MatchLine(call, "read_file", json.RawMessage(`{"limit":1,"file_path":"a"}`)); err != nil {
		t.Errorf("the same call: %v", err)
	}
	if err := MatchLine(call, "read_file", json.RawMessage(`{"file_path":"b","limit":1}`)); err == nil {
		t.Error("another input matched")
	}
	if err := MatchLine(call, "write_file", json.RawMessage(`{"file_path":"a","limit":1}`)); err == nil {
		t.Error("another name matched")
	}
	if err := MatchLine(loopback.Call{Name: ""}, "generic_tool", nil); err != nil {
		t.Errorf("a blank name and no args: %v", err)
	}
	owned := loopback.Call{Name: OwnedPrefix + "fs_read", Input: json.RawMessage(`{"path":"a","max_bytes":null}`)}
	req := decide.Request{Seam: record.SeamOwnedTool, Tool: "fs_read", Input: json.RawMessage(`{"path":"a"}`)}
	if err := (Kind{}).MatchRequest(owned, req, nil); err != nil {
		t.Errorf("the owned server's call: %v", err)
	}
	req.Seam = record.SeamHook
	if err := (Kind{}).MatchRequest(owned, req, nil); err == nil {
		t.Error("a hook's request for an owned name matched under its bare name")
	}
}

// TestLastText: the final answer is the last completed stream's text when
// it made no call; a side call's JSON body is passed over.
func TestLastText(t *testing.T) {
	text := func(s string) loopback.Item { return loopback.Item{Kind: loopback.KindText, Text: s} }
	rs := []loopback.Response{
		{Stream: true, End: loopback.EndCompleted, Items: []loopback.Item{text("DO"), text("NE")}},
		{Stream: false, End: loopback.EndCompleted, Items: []loopback.Item{text(`{"model_choice":"flash"}`)}},
	}
	if got := lastText(rs); got == nil || *got != "DONE" {
		t.Errorf("lastText = %v", got)
	}
	rs[0].Items = append(rs[0].Items, loopback.Item{Kind: loopback.KindToolCall})
	if got := lastText(rs); got != nil {
		t.Errorf("a response that made a call gave %q", *got)
	}
}

// TestWorkspace reads the workspace Gemini CLI's session context names.
func TestWorkspace(t *testing.T) {
	ctx := "- **Workspace Directories:**\n  - /work/tree\n- **Directory Structure:**"
	if got := workspace(ctx); got != "/work/tree" {
		t.Errorf("workspace = %q", got)
	}
	for _, c := range []string{"", "- **Workspace Directories:**\n", "- **Workspace Directories:**\n  /no-dash"} {
		if got := workspace(c); got != "" {
			t.Errorf("workspace(%q) = %q", c, got)
		}
	}
}

// answering is the run as Answer sees it: what it decided and emitted.
type answering struct {
	kind.Services
	mu      sync.Mutex
	decided []decide.Request
	emitted []record.Event
	wait    bool // decide only when the request stops waiting, as the engine abandons it
}

func (a *answering) Decide(ctx context.Context, req decide.Request) record.Decision {
	a.mu.Lock()
	a.decided = append(a.decided, req)
	wait := a.wait
	a.mu.Unlock()
	if wait {
		<-ctx.Done()
		return record.DenyDecision("abandoned")
	}
	return record.AllowDecision()
}

func (a *answering) Emit(_ string, ev record.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.emitted = append(a.emitted, ev)
}

func newAnswering(owned bool) (*session, *answering) {
	run := &answering{}
	s := &session{run: run, owned: owned}
	s.named = sync.NewCond(&s.mu)
	return s, run
}

func (s *session) show(id, name, input string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, &pending{id: id, name: name, input: json.RawMessage(input)})
	s.named.Broadcast()
}

// TestAnswerNamesEachRequestByTheRecord: a request is decided under the id
// of the oldest call on the record with its tool and input not asked about
// yet, waiting for the line when it is behind; one the record never shows
// is denied at once and counted (DECISION_NOT_ON_RECORD); the hook asking
// about an owned tool abstains (its own seam decides it).
func TestAnswerNamesEachRequestByTheRecord(t *testing.T) {
	s, run := newAnswering(true)
	s.show("read_file__1", "read_file", `{"file_path":"a"}`)
	s.show("read_file__2", "read_file", `{"file_path":"a"}`)
	s.show("mcp_metaharness_fs_read__3", OwnedPrefix+"fs_read", `{"path":"a","max_bytes":null}`)
	ctx := context.Background()
	hook := func(tool, input string) record.Decision {
		return s.Answer(ctx, decide.Request{Seam: record.SeamHook, CallID: "gemini-hook-call", Tool: tool, Input: json.RawMessage(input)})
	}
	for range 2 {
		if d := hook("read_file", `{"file_path":"a"}`); d.Decision != record.Allow {
			t.Fatalf("a call on the record: %+v", d)
		}
	}
	if d := s.Answer(ctx, decide.Request{Seam: record.SeamOwnedTool, Tool: "fs_read", Input: json.RawMessage(`{"path":"a"}`)}); d.Decision != record.Allow {
		t.Fatalf("the owned server's call: %+v", d)
	}
	if d := hook(OwnedPrefix+"fs_read", `{"path":"a"}`); d.Decision != record.Abstain {
		t.Errorf("the hook asked about an owned tool: %+v", d)
	}
	var ids []string
	for _, r := range run.decided {
		ids = append(ids, r.CallID)
	}
	if want := []string{"read_file__1", "read_file__2", "mcp_metaharness_fs_read__3"}; !slices.Equal(ids, want) {
		t.Errorf("decided under %v, want %v", ids, want)
	}
	// A line behind its request: the request waits for it.
	got := make(chan record.Decision, 1)
	go func() { got <- hook(shellTool, `{"command":"ls"}`) }()
	time.Sleep(50 * time.Millisecond)
	s.show("run_shell_command__4", shellTool, `{"command":"ls"}`)
	if d := <-got; d.Decision != record.Allow || run.decided[len(run.decided)-1].CallID != "run_shell_command__4" {
		t.Errorf("a request before its line: %+v", d)
	}
	// Once the record has ended, a request it never showed is denied at once.
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	d := hook("read_file", `{"file_path":"a"}`) // both asked already
	if d.Decision != record.Deny || !strings.Contains(d.Reason, "shows no call of read_file") || s.RequestsNotOnRecord() != 1 {
		t.Errorf("a request the record does not show: %+v (%d counted)", d, s.RequestsNotOnRecord())
	}
	if w, ok := run.emitted[len(run.emitted)-1].(*record.Warning); !ok || w.Code != attest.DecisionNotOnRecord {
		t.Errorf("emitted %+v", run.emitted)
	}
	// A stopped run's request does not wait.
	s2, _ := newAnswering(false)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if d := s2.Answer(cctx, decide.Request{Seam: record.SeamHook, Tool: "read_file", Input: json.RawMessage(`{}`)}); d.Decision != record.Deny {
		t.Errorf("a stopped run: %+v", d)
	}
}

// TestResultEndsTheWait: a request still waiting when the record shows its
// call's result (Gemini CLI went on without the hook's answer) stops
// waiting (Decide returns, the engine having abandoned the call) before
// giveUp returns.
func TestResultEndsTheWait(t *testing.T) {
	s, run := newAnswering(false)
	run.wait = true
	s.show("run_shell_command__1", shellTool, `{"command":"ls"}`)
	got := make(chan record.Decision, 1)
	go func() {
		got <- s.Answer(context.Background(), decide.Request{Seam: record.SeamHook, Tool: shellTool, Input: json.RawMessage(`{"command":"ls"}`)})
	}()
	for {
		s.mu.Lock()
		n := len(s.asking)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.giveUp("run_shell_command__1")
	select {
	case d := <-got:
		if d.Decision != record.Deny {
			t.Errorf("the abandoned request: %+v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request still waits after the call's result")
	}
	s.giveUp("run_shell_command__1") // nothing waits: at once
}
