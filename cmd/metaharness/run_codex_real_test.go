package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// newCodexOperator is an operator whose ~/.local/bin/codex is the pinned
// Codex's native binary.
func newCodexOperator(t *testing.T, token string) *operator {
	return newOperatorFor(t, token, "codex", vendortest.CodexNative(t))
}

// TestRunCodexCatalogueUnderAFrame: (a) on the real Codex through
// app-server, a catalogue tool the frame admits runs and its result
// reaches the model; one outside the frame is denied, an entry with no
// operation as UNCOVERED_TOOL, and the model is told why; (i) through
// loopback the scripted server saw only the real token, which no child
// process, scratch file, stream line or stderr line held; the audited exit
// code is the audit verdict.
func TestRunCodexCatalogueUnderAFrame(t *testing.T) {
	token := randomToken("sk-test-REAL-")
	o := newCodexOperator(t, token)
	watch := &secretWatch{t: t, token: token, pid: make(chan int, 1), placeholderVar: "METAHARNESS_LOOPBACK_KEY", homeVar: "CODEX_HOME"}
	o.write("hello.txt", "hello from the operator's tree\n")
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "read_file", Input: json.RawMessage(`{"path":"hello.txt","max_bytes":null}`)}},
		{ToolCall: &scripted.ToolCall{Name: "fs_write", Input: json.RawMessage(`{"path":"out.txt","text":"x"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "fetch_url", Input: json.RawMessage(`{"url":"https://example.com"}`)}},
		{Text: "DONE"},
	}}, scripted.OnRequest(watch.look))
	defer up.Close()

	retain := t.TempDir()
	defer captureCodexC2(t, retain, "catalogue-under-a-frame")
	res := o.runWatched(watch.started, nil, "--retain-dir", retain, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--frame", o.sealFrame("file.read"), "--cwd", o.tree, "--scratch-cwd", "--audit",
		"-p", "read hello.txt")
	t.Logf("events:\n%s", res.stdout)
	catalogueUnderAFrame(t, o, res, up, watch)
	if !strings.Contains(string(res.stderr), "audit verdict: ok (exit 0)") {
		t.Errorf("the audit verdict is not ok:\n%s", res.stderr)
	}
	if end := res.find("session.ended"); len(end) == 1 {
		if fa := end[0].(*record.SessionEnded).FinalAnswer; fa == nil || fa.Text != "DONE" {
			t.Errorf("final answer %+v, want DONE", fa)
		}
	}
}

// TestRunCodexWithAThousandEntries: a catalogue of 1000 entries under
// 64-character names reaches the real Codex whole: thread/start declares
// every one as a dynamic tool, every request offers the model all of them,
// and a call to the last is answered by the run.
func TestRunCodexWithAThousandEntries(t *testing.T) {
	token := randomToken("sk-test-REAL-")
	o := newCodexOperator(t, token)
	cat, last := o.thousandEntries()
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: last, Input: json.RawMessage(`{"path":"hello.txt"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--decisions", "observe", "--cwd", o.tree, "--scratch-cwd", "-p", "read hello.txt")
	o.thousandthPerformed(res, up.Requests(), last)
}

// captureCodexC2 copies a codex run's retained transcript into the C2
// vectors under METAHARNESS_CAPTURE_C2 (see captureC2).
func captureCodexC2(t *testing.T, retain, name string) { captureKindC2(t, retain, "codex", name) }

// captureKindC2 copies a run's retained transcript into kind's C2 vectors
// under METAHARNESS_CAPTURE_C2 (see captureC2).
func captureKindC2(t *testing.T, retain, kind, name string) {
	if os.Getenv("METAHARNESS_CAPTURE_C2") == "" || t.Failed() {
		return
	}
	b, err := os.ReadFile(filepath.Join(retain, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "conformance", "testdata", "c2", kind)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".in.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunCodexAskModeNativeTools: (b) with no catalogue, codex's own
// commands ask approval; in ask mode the embedder, on stdin, denies one
// (decline: nothing runs, the model is told and the turn goes on) and
// allows another (accept: it runs, its output reaches the model). Both
// travel the control_request seam. The --context file reaches the model as
// the thread's developer instructions, the channel session.started names.
func TestRunCodexAskModeNativeTools(t *testing.T) {
	token := randomToken("sk-test-REAL-")
	o := newCodexOperator(t, token)
	o.write("notes.md", "the release is on Friday\n")
	o.git("init", "-q")
	o.git("add", "notes.md")
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":"touch pwned"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":"cat notes.md"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	asked := map[string]string{}
	retain := t.TempDir()
	defer captureCodexC2(t, retain, "ask-mode-native-tools")
	res := o.run(decideAll(t, asked, func(req *record.ToolRequested) string {
		if strings.Contains(string(req.Input), "touch") {
			return `{"decision":"deny","reason":"no writes in this step"}`
		}
		return `{"decision":"allow"}`
	}), "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--model", "gpt-5.5",
		"--decisions", "ask", "--cwd", o.tree, "--context", "notes.md", "--retain-dir", retain, "-p", "look around")
	t.Logf("events:\n%s", res.stdout)
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	if len(asked) != 2 {
		t.Fatalf("the embedder was asked about %v, want both commands", asked)
	}
	if _, err := os.Stat(filepath.Join(o.tree, "pwned")); err == nil {
		t.Error("the declined command ran")
	}
	// The declined call's output (codex's "rejected") reaches the model
	// followed by the deny's reason as a user message, which a decline
	// alone would not carry; then the allowed command's output.
	reqs := up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the model was asked %d times, want 3", len(reqs))
	}
	if users := reqs[1].UserTexts; !strings.Contains(string(reqs[1].Body), "rejected") || len(users) == 0 || !strings.Contains(users[len(users)-1], "no writes in this step") {
		t.Errorf("after the declined call the model saw users %q (rejected in the body: %v), want the deny's reason last", users, strings.Contains(string(reqs[1].Body), "rejected"))
	}
	if results := reqs[2].ToolResults; len(results) != 1 || !strings.Contains(results[0].Content, "the release is on Friday") {
		t.Errorf("tool results the model saw after the allowed call: %+v", results)
	}
	res.commandsOK(t)
	if got := res.decisions(); got != "embedder/control_request/deny embedder/control_request/allow" {
		t.Errorf("decisions %v", got)
	}
	o.onePerCall(res, 2)
	started := res.find("session.started")[0].(*record.SessionStarted)
	if len(started.ContextFiles) != 1 || started.ContextFiles[0].Channel != "developer-instructions" || started.ContextFiles[0].Path != "notes.md" {
		t.Errorf("context_files %+v", started.ContextFiles)
	}
	first := up.Requests()[0]
	if !strings.Contains(string(first.Body), `context-file-1 path=\"notes.md\"`) {
		t.Error("the context file did not reach the model")
	}
}

// commandLine is one metaharness.command/1 line.
func commandLine(id, name, fields string) string {
	return `{"format":"metaharness.command/1","id":"` + id + `","command":"` + name + `"` + fields + `}`
}

// onHold signals once the scripted model is holding turn 0's stream open.
func onHold() (scripted.Option, chan struct{}) {
	held := make(chan struct{}, 1)
	return scripted.OnRequest(func(r scripted.Request) {
		if r.Turn == 0 {
			select {
			case held <- struct{}{}:
			default:
			}
		}
	}), held
}

// results maps each command.result to its outcome.
func (r *runResult) results() map[string]record.CommandOutcome {
	out := map[string]record.CommandOutcome{}
	for _, ev := range r.find("command.result") {
		cr := ev.(*record.CommandResult)
		out[cr.ID] = cr.Outcome
	}
	return out
}

// TestRunCodexSteer: (c) a steer sent while the model's answer streams
// reaches the model: codex abandons the held stream and asks again with the
// steer text as a user message, and the turn completes. message.inject
// takes the same way. A steer before any turn runs gets one clear result
// under its id, TOO_LATE, and reaches nobody.
func TestRunCodexSteer(t *testing.T) {
	o := newCodexOperator(t, randomToken("sk-test-REAL-"))
	hold, held := onHold()
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{Text: "thinking it over", HoldMS: 60_000},
		// Held too, so that the inject finds the turn still running.
		{Text: "still thinking", HoldMS: 3_000},
		{Text: "DONE"},
	}}, hold)
	defer up.Close()
	early := make(chan struct{})
	res := o.runWatched(func(int) { close(early) }, func(ev *record.EventLine, stdin func(string)) {
		switch ev.Event.(type) {
		case *record.Warning:
			if ev.Event.(*record.Warning).Code != "VENDOR_WARNING" {
				return
			}
			// The first line: no turn runs yet.
			stdin(commandLine("too-early", "steer", `,"text":"nobody hears this"`))
		case *record.TurnStarted:
			go func() {
				<-held
				stdin(commandLine("s1", "steer", `,"text":"STEER please also say hello"`))
				stdin(commandLine("i1", "message.inject", `,"text":"INJECT and goodbye"`))
			}()
		}
	}, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--catalogue", o.catalogue(),
		"--model", "gpt-5.5", "-p", "take your time")
	t.Logf("events:\n%s", res.stdout)
	<-early
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	got := res.results()
	if got["s1"].Result != "ok" || got["i1"].Result != "ok" {
		t.Errorf("steer and inject results %+v %+v, want ok", got["s1"], got["i1"])
	}
	if r := got["too-early"]; r.Result != "refused" || r.Refused == nil || r.Refused.Code != "TOO_LATE" || !strings.Contains(r.Refused.Reason, "no codex turn running") && !strings.Contains(r.Refused.Reason, "none is") {
		t.Errorf("the early steer: %+v, want TOO_LATE", r)
	}
	reqs := up.Requests()
	if len(reqs) < 2 || !reqs[0].Abandoned {
		t.Fatalf("%d requests, the first abandoned %v; want the held stream abandoned for the steer", len(reqs), len(reqs) > 0 && reqs[0].Abandoned)
	}
	last := strings.Join(reqs[len(reqs)-1].UserTexts, "\n")
	for _, want := range []string{"STEER please also say hello", "INJECT and goodbye"} {
		if !strings.Contains(last, want) {
			t.Errorf("the model's last request lacks %q: %q", want, reqs[len(reqs)-1].UserTexts)
		}
	}
	for _, r := range reqs {
		if strings.Contains(string(r.Body), "nobody hears this") {
			t.Error("the refused steer reached the model")
		}
	}
}

// catalogue writes the read catalogue into the operator's home.
func (o *operator) catalogue() string {
	p := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(p, []byte(readCatalogue), 0o644); err != nil {
		o.t.Fatal(err)
	}
	return p
}

// TestRunCodexInterrupt: (d) interrupt while the model's answer streams
// becomes turn/interrupt: the turn ends interrupted, the session with it,
// its one command.result is ok, and the run exits 3 (the task did not
// finish) with the stream complete.
func TestRunCodexInterrupt(t *testing.T) {
	o := newCodexOperator(t, randomToken("sk-test-REAL-"))
	hold, held := onHold()
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{{Text: "never sent", HoldMS: 60_000}}}, hold)
	defer up.Close()
	res := o.run(func(ev *record.EventLine, stdin func(string)) {
		if _, ok := ev.Event.(*record.TurnStarted); ok {
			go func() {
				<-held
				stdin(commandLine("x1", "interrupt", `,"reason":"enough"`))
			}()
		}
	}, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--catalogue", o.catalogue(), "--model", "gpt-5.5", "-p", "go")
	t.Logf("events:\n%s", res.stdout)
	if r := res.results()["x1"]; r.Result != "ok" {
		t.Errorf("interrupt: %+v, want ok", r)
	}
	sc := lastIsStreamClosed(t, res)
	end := res.find("session.ended")
	if len(end) != 1 || *end[0].(*record.SessionEnded).Subtype != "interrupted" {
		t.Fatalf("session.ended %v, want one, interrupted", end)
	}
	if sc.Reason != record.ReasonError || res.code != 3 {
		t.Errorf("reason %s, exit %d; want error and 3", sc.Reason, res.code)
	}
	if reqs := up.Requests(); len(reqs) != 1 || !reqs[0].Abandoned {
		t.Errorf("the held request was not abandoned (%d requests)", len(reqs))
	}
}

// TestRunCodexHalt: (d) halt while a native command waits for the
// embedder: the pending call is abandoned (denied, written first), codex's
// approval is answered cancel, app-server ends, the stream closes
// steer-halt and nothing of the command ran.
func TestRunCodexHalt(t *testing.T) {
	o := newCodexOperator(t, randomToken("sk-test-REAL-"))
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":"touch halted"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	var scratch string
	res := o.run(func(ev *record.EventLine, stdin func(string)) {
		if s, ok := ev.Event.(*record.SessionStarted); ok {
			scratch = filepath.Dir(s.Transcript.Path)
		}
		if req, ok := ev.Event.(*record.ToolRequested); ok && req.DecisionRequired {
			stdin(commandLine("h1", "halt", `,"reason":"stop now"`))
		}
	}, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--decisions", "ask", "--model", "gpt-5.5", "--cwd", o.tree, "-p", "go")
	t.Logf("events:\n%s", res.stdout)
	if r := res.results()["h1"]; r.Result != "ok" {
		t.Errorf("halt: %+v, want ok", r)
	}
	sc := lastIsStreamClosed(t, res)
	if sc.Reason != record.ReasonSteerHalt {
		t.Errorf("reason %s, want steer-halt", sc.Reason)
	}
	var abandoned bool
	for _, ev := range res.find("warning") {
		abandoned = abandoned || ev.(*record.Warning).Code == "PENDING_CALL_ABANDONED"
	}
	if !abandoned {
		t.Error("the pending call was not abandoned")
	}
	if _, err := os.Stat(filepath.Join(o.tree, "halted")); err == nil {
		t.Error("the halted command ran")
	}
	if len(up.Requests()) != 1 {
		t.Errorf("%d model requests, want 1: cancel ends the turn", len(up.Requests()))
	}
	if _, err := os.Stat(scratch); !os.IsNotExist(err) {
		t.Errorf("the scratch tree %s was not removed (%v)", scratch, err)
	}
	if res.code == 0 {
		t.Error("exit 0 after a halt")
	}
}

// codexStoppable is the real Codex calling a catalogue tool in ask mode.
func codexStoppable(t *testing.T) stoppable {
	o := newCodexOperator(t, randomToken("sk-test-REAL-"))
	o.write("hello.txt", "hi\n")
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "read_file", Input: json.RawMessage(`{"path":"hello.txt"}`)}},
		{Text: "DONE"},
	}})
	t.Cleanup(up.Close)
	return stoppable{o: o, up: up, args: []string{"--catalogue", o.catalogue(), "--cwd", o.tree, "-p", "wait"}, vendor: func(p vendortest.Proc) bool {
		return len(p.Cmdline) > 1 && filepath.Base(p.Cmdline[0]) == "codex" && p.Cmdline[1] == "app-server"
	}}
}

// TestRunCodexSignals: (e) signalsStop on codex app-server: its whole
// process group ends, the stream closes, the scratch tree goes, within 4 s.
func TestRunCodexSignals(t *testing.T) { signalsStop(t, codexStoppable) }

// TestRunCodexChildKilled: (e) killedChild on codex app-server.
func TestRunCodexChildKilled(t *testing.T) { killedChild(t, codexStoppable(t)) }

// TestRunCodexToolsOffered: (f) the model is offered exactly the
// catalogue's entries: with --model gpt-5.5 (whose bundled entry adds a
// freeform apply_patch) in the tools array, and with the default model (a
// responses-lite slug in code mode) in its additional_tools item, as plain
// functions, no exec.
func TestRunCodexToolsOffered(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  []string
		lite  bool
	}{
		{"gpt-5.5", []string{"read_file", "fetch_url", "fs_write"}, false},
		{"", []string{"functions__read_file", "functions__fetch_url", "functions__fs_write"}, true},
	} {
		t.Run("model="+tc.model, func(t *testing.T) {
			o := newCodexOperator(t, randomToken("sk-test-REAL-"))
			up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{{Text: "DONE"}}})
			defer up.Close()
			args := []string{"--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--catalogue", o.catalogue(), "-p", "what can you do"}
			if tc.model != "" {
				args = append(args, "--model", tc.model)
			}
			res := o.run(nil, args...)
			if res.code != 0 {
				t.Errorf("exit %d, want 0", res.code)
			}
			reqs := up.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model requests, want 1", len(reqs))
			}
			if strings.Join(reqs[0].Tools, " ") != strings.Join(tc.want, " ") || reqs[0].Lite != tc.lite {
				t.Errorf("the model was offered %q (lite %v), want exactly %q (lite %v)", reqs[0].Tools, reqs[0].Lite, tc.want, tc.lite)
			}
		})
	}
}

// TestRunCodexUpstreamErrors: (g) an upstream that answers 401 or 500 to
// every request gets a bounded number of them (no retry storm) and the run
// exits 3, never 0. A 500 is codex's to handle: the stream carries a clear
// error event and a failed terminal record naming the status. A 401 is a
// key the upstream rejects, which no retry fixes: the proxy stops the run
// at that first answer, with the key-rejected line on stderr. (A 429 is a
// quota answer, which stops the run at once: TestHostDaemonQuota.)
func TestRunCodexUpstreamErrors(t *testing.T) {
	for _, tc := range []struct {
		status  int
		maxReqs int
	}{{401, 1}, {500, 2}} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			o := newCodexOperator(t, randomToken("sk-test-REAL-"))
			up := scripted.NewOpenAIServer(scripted.Script{FinalError: &scripted.ErrorTurn{Status: tc.status, Message: fmt.Sprintf("scripted: status %d", tc.status)}})
			defer up.Close()
			start := time.Now()
			res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--catalogue", o.catalogue(), "--model", "gpt-5.5", "-p", "go")
			t.Logf("events:\n%s\n(%v)", res.stdout, time.Since(start))
			if n := len(up.Requests()); n < 1 || n > tc.maxReqs {
				t.Errorf("%d requests reached the upstream, want 1 to %d", n, tc.maxReqs)
			}
			if res.code != 3 {
				t.Errorf("exit %d, want 3", res.code)
			}
			lastIsStreamClosed(t, res)
			if tc.status == 401 {
				if !strings.Contains(string(res.stderr), "metaharness: key-rejected: the model API answered POST /v1/responses with 401 Unauthorized;") {
					t.Errorf("no key-rejected line on stderr:\n%s", res.stderr)
				}
				return
			}
			var errEvent bool
			for _, ev := range res.find("warning") {
				w := ev.(*record.Warning)
				errEvent = errEvent || w.Code == "VENDOR_ERROR" && strings.HasPrefix(w.Message, "codex: ")
			}
			if !errEvent {
				t.Error("no VENDOR_ERROR event carries codex's error")
			}
			end := res.find("session.ended")
			if len(end) != 1 {
				t.Fatalf("%d session.ended, want 1", len(end))
			}
			e := end[0].(*record.SessionEnded)
			if e.IsError == nil || !*e.IsError || e.TerminalReason == nil {
				t.Errorf("terminal record %+v, want a failure with its reason", e)
			}
			if !strings.Contains(string(res.stderr), "metaharness: unknown: the vendor's terminal record says the session failed") {
				t.Errorf("no line on stderr saying why nobody found out:\n%s", res.stderr)
			}
		})
	}
}

// TestConformanceLiveRealCodex: `conformance codex --live` on the pinned
// Codex: the built-in session against the scripted Responses model, every
// step holding (liveConformance).
func TestConformanceLiveRealCodex(t *testing.T) {
	liveConformance(t, newCodexOperator(t, "unused"))
}

// TestRunCodexMemoryCanary holds the pinned Codex to what H11 says of it:
// in a copy under a git root, an AGENTS.md above the copy reaches the model
// (so the row is a gap, and --hermetic strict exits 1), and one at the
// copy's root reaches it too (the copy's own, listed in ambient_inputs as
// read by the vendor); an AGENTS.override.md takes its directory's
// AGENTS.md's place. Each holds a canary the scripted model looks for. The
// run is --unconfined: this is the loader's own behaviour, which H11 rests
// on (a confined child here sees nothing above the copy, whose parent lies
// in the fresh /tmp of its mount view).
func TestRunCodexMemoryCanary(t *testing.T) {
	o := newCodexOperator(t, randomToken("sk-test-REAL-"))
	root := filepath.Dir(o.tree)
	above, override := randomToken("CANARY-ABOVE-"), randomToken("CANARY-OVERRIDE-")
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, text := range map[string]string{
		filepath.Join(root, "AGENTS.md"):            "Always say " + above + ".\n",
		filepath.Join(o.tree, "AGENTS.md"):          "Never read this: the override replaces it.\n",
		filepath.Join(o.tree, "AGENTS.override.md"): "Always say " + override + ".\n",
	} {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{{Text: "DONE"}}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--catalogue", o.catalogue(),
		"--cwd", o.tree, "--scratch-cwd", "--hermetic", "strict", "--unconfined", "-p", "hello")
	if res.code != 1 {
		t.Errorf("exit %d, want 1: a memory file above the copy is a gap under --hermetic strict", res.code)
	}
	if !strings.Contains(string(res.stderr), "H11  gap") || !strings.Contains(string(res.stderr), filepath.Join(root, "AGENTS.md")) {
		t.Errorf("H11 is not a gap naming %s:\n%s", filepath.Join(root, "AGENTS.md"), res.stderr)
	}
	h := res.find("session.started")[0].(*record.SessionStarted).Hermetic
	if !strings.Contains(strings.Join(h.AmbientInputs, "\n"), "AGENTS.override.md") {
		t.Errorf("ambient inputs %q do not list the copy's own AGENTS.override.md", h.AmbientInputs)
	}
	reqs := up.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was never asked")
	}
	body := string(reqs[0].Body)
	for name, c := range map[string]string{"above the copy": above, "the override at its root": override} {
		if !strings.Contains(body, c) {
			t.Errorf("the memory file %s did not reach the model: the row would claim more than the binary does", name)
		}
	}
	if strings.Contains(body, "Never read this") {
		t.Error("the AGENTS.md beside an AGENTS.override.md reached the model")
	}
}

// TestRunCodexObserve: observe allows every call at its seam and names the
// mode that did: a native command runs (outside codex's sandbox, as the
// attestation states), decided by observe at the control_request seam.
func TestRunCodexObserve(t *testing.T) {
	o := newCodexOperator(t, randomToken("sk-test-REAL-"))
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":"echo observed > seen.txt"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--model", "gpt-5.5",
		"--decisions", "observe", "--cwd", o.tree, "-p", "go")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	if got := res.decisions(); got != "observe/control_request/allow" {
		t.Errorf("decisions %q, want one allow by observe at the control_request seam", got)
	}
	o.onePerCall(res, 1)
	if b, err := os.ReadFile(filepath.Join(o.tree, "seen.txt")); err != nil || string(b) != "observed\n" {
		t.Errorf("the observed command did not run: %q %v", b, err)
	}
	h := res.find("session.started")[0].(*record.SessionStarted).Hermetic
	if h.Decisions != "observe" || !strings.Contains(strings.Join(h.AmbientInputs, "\n"), "observe mode") {
		t.Errorf("attestation %+v does not state the observe grant", h)
	}
}

// TestRunCodexCommandSandbox: the real Codex runs every command with the
// login shell the view's /etc/passwd names, the command sandbox's script:
// a command inside Codex's own sandbox does ordinary work, and one approved
// to run outside it (require_escalated) finds no decision socket, cannot
// write Codex's stdout, open its memory or environment, ptrace it or take
// its descriptors, or SIGKILL it; the run ends as the model ended it.
func TestRunCodexCommandSandbox(t *testing.T) {
	token := randomToken("sk-test-REAL-")
	o := newCodexOperator(t, token)
	o.write("notes.md", "notes\n")
	o.git("init", "-q")
	inside := `ls | grep -c notes; (sleep 0.1; echo WORK-BACKGROUND) & wait; git rev-parse --is-inside-work-tree >/dev/null && echo WORK-GIT; grep '^root:' /etc/passwd`
	// The run opens no decision channel for codex (no program of its child
	// asks one), so its scratch tree holds no socket to forge a request to.
	sockets := `echo "SOCKETS-$(find "$(dirname "$CODEX_HOME")" -type s 2>/dev/null | wc -l)"` + "\n"
	escalated, _ := json.Marshal(map[string]string{"cmd": "echo PARENT $(tr '\\0' ' ' < /proc/$PPID/cmdline)\n" + sockets + recordAttack,
		"sandbox_permissions": "require_escalated", "justification": "the test asks"})
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":` + strconvQuote(inside) + `}`)}},
		{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: escalated}},
		{Text: "DONE"},
	}})
	defer up.Close()
	asked := map[string]string{}
	res := o.run(decideAll(t, asked, func(*record.ToolRequested) string { return `{"decision":"allow"}` }),
		"--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN", "--model", "gpt-5.5",
		"--decisions", "ask", "--cwd", o.tree, "-p", "go")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	var results []string
	for _, r := range up.Requests() {
		for _, tr := range r.ToolResults {
			results = append(results, tr.Content)
		}
	}
	t.Logf("tool results:\n%s", strings.Join(results, "\n----\n"))
	if len(results) != 2 {
		t.Fatalf("%d tool results, want 2", len(results))
	}
	for i, wants := range [][]string{
		{"1\n", "WORK-BACKGROUND", "WORK-GIT", "/bash\n"},
		{"SOCKETS-0\n", "ATTACK-WRITE-failed", "ATTACK-PAIR-failed", "ATTACK-MEM-failed", "ATTACK-ENVIRON-failed",
			"ATTACK-PTRACE-failed-EPERM", "ATTACK-VMWRITE-failed-EPERM", "ATTACK-PIDFD-GETFD-failed", "ATTACK-KILL-failed",
			"1 WORK-PIPE", "WORK-BACKGROUND", "WORK-GIT"},
	} {
		for _, want := range wants {
			if !strings.Contains(results[i], want) {
				t.Errorf("command %d's output lacks %q", i+1, want)
			}
		}
	}
	if strings.Contains(string(res.stdout), "FORGED-BY-THE-AGENT") {
		t.Error("the forged line reached the record")
	}
}
