package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// operator is a caller's world for a real run: a HOME whose ~/.local/bin
// holds the pinned vendor binary (the child's PATH is built from it), a
// working tree, and the environment metaharness is started with.
type operator struct {
	t    *testing.T
	kind string // the kind `run` starts
	home string
	tree string
	env  []string
	// How runWatched starts metaharness: under wrap (a command prefix such
	// as unshare --user), with extra descriptors from 3 on, in a process
	// group of its own.
	wrap  []string
	extra []*os.File
	group bool
	// bin is the metaharness binary run starts, "" for the one on PATH
	// (the test binary standing in for it).
	bin string
}

func newOperator(t *testing.T, token string) *operator {
	return newOperatorFor(t, token, "claude", vendortest.Binary(t, "claude"))
}

// newOperatorFor is an operator whose ~/.local/bin holds bin as kind's
// binary.
func newOperatorFor(t *testing.T, token, kind, bin string) *operator {
	root := t.TempDir()
	o := &operator{t: t, kind: kind, home: filepath.Join(root, "operator"), tree: filepath.Join(root, "tree")}
	for _, d := range []string{filepath.Join(o.home, ".local", "bin"), o.tree} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(o.home, ".local", "bin", kind)); err != nil {
		t.Fatal(err)
	}
	o.env = []string{"HOME=" + o.home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "MH_TEST_TOKEN=" + token}
	return o
}

func (o *operator) write(name, content string) string {
	p := filepath.Join(o.tree, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		o.t.Fatal(err)
	}
	return p
}

// git runs git in the operator's tree.
func (o *operator) git(args ...string) {
	o.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", o.tree}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		o.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// sealFrame writes a sealed frame admitting ops.
func (o *operator) sealFrame(ops ...string) string {
	doc := frame.Document{
		Workflow: frame.Workflow{ID: "demo", Version: "1"}, Node: frame.NodeRef{ID: "read"},
		Step:  record.StepRef{Workflow: "demo", State: "read", Index: 1, Attempt: 1},
		Prior: []frame.Fact{}, Obligations: []frame.Requirement{}, Reaching: []frame.Requirement{},
		Next: []frame.NodeRef{}, Handoff: frame.Handoff{Handoff: "none"}, Subjects: frame.SubjectScope{},
	}
	for _, op := range ops {
		doc.Operations = append(doc.Operations, frame.Operation{Op: op})
	}
	f, err := frame.Seal(doc)
	if err != nil {
		o.t.Fatal(err)
	}
	b := f.Encode()
	p := filepath.Join(o.home, "frame.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		o.t.Fatal(err)
	}
	return p
}

// metaharness runs `metaharness ARGS` as the operator and returns its
// combined output.
func (o *operator) metaharness(args ...string) ([]byte, error) {
	o.t.Helper()
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		o.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = o.env
	return cmd.CombinedOutput()
}

// runResult is one `metaharness run` as a process saw it.
type runResult struct {
	code   int
	events []*record.EventLine
	stdout []byte
	stderr []byte
}

func (r *runResult) find(name string) []record.Event {
	var out []record.Event
	for _, l := range r.events {
		if l.Name() == name {
			out = append(out, l.Event)
		}
	}
	return out
}

// run runs `metaharness run KIND ARGS` as the operator, with
// stdin fed by answer (nil: nothing), and reads its event stream.
func (o *operator) run(answer func(ev *record.EventLine, stdin func(string)), args ...string) *runResult {
	return o.runWatched(nil, answer, args...)
}

// runWatched is run with started called with the metaharness process id.
func (o *operator) runWatched(started func(pid int), answer func(ev *record.EventLine, stdin func(string)), args ...string) *runResult {
	o.t.Helper()
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		o.t.Fatal(err)
	}
	if o.bin != "" {
		bin = o.bin
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	argv := append(append(slices.Clone(o.wrap), bin, "run", o.kind), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = o.env
	cmd.ExtraFiles = o.extra
	if o.group {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		o.t.Fatal(err)
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	res := &runResult{}
	var raw bytes.Buffer
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		raw.Write(sc.Bytes())
		raw.WriteByte('\n')
		ev, err := record.ParseEvent(sc.Bytes())
		if err != nil {
			continue // --output final prints the answer, not events
		}
		res.events = append(res.events, ev)
		if answer != nil {
			answer(ev, func(line string) { _, _ = in.Write([]byte(line + "\n")) })
		}
	}
	_ = in.Close()
	err = cmd.Wait()
	res.code = cmd.ProcessState.ExitCode()
	res.stdout, res.stderr = raw.Bytes(), stderr.Bytes()
	o.t.Logf("metaharness run: exit %d (%v)\nstderr:\n%s", res.code, err, res.stderr)
	return res
}

const readCatalogue = `format: metaharness.tool-contract/1
entries:
  - name: fs.read
    summary: Read a text file in the workspace.
    input:
      type: object
      properties:
        path: {type: string}
        max_bytes: {type: integer}
      required: [path]
    renderings:
      mcp: read_file
  - name: net.fetch
    summary: Fetch a URL (no performer in this build).
    input:
      type: object
      properties:
        url: {type: string}
      required: [url]
    renderings:
      mcp: fetch_url
  - name: fs.write
    summary: Write a text file in the workspace.
    input:
      type: object
      properties:
        path: {type: string}
        text: {type: string}
      required: [path, text]
`

// TestRunClaudeCatalogueUnderAFrame: (a) a catalogue tool the frame admits
// runs and its result reaches the model; (b) a tool outside the frame is
// denied, an entry with no operation as UNCOVERED_TOOL, and the model is
// told why; (d) through loopback, the scripted server saw only the real
// test token, and the child (its /proc environ and cmdline, every file in
// its scratch tree) never held it.
func TestRunClaudeCatalogueUnderAFrame(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	watch := &secretWatch{t: t, token: token, pid: make(chan int, 1)}
	o.write("hello.txt", "hello from the operator's tree\n")
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"hello.txt","max_bytes":null}`)}},
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__fs_write", Input: json.RawMessage(`{"path":"out.txt","text":"x"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__fetch_url", Input: json.RawMessage(`{"url":"https://example.com"}`)}},
		{Text: "DONE"},
	}}, scripted.OnRequest(watch.look))
	defer up.Close()

	retain := t.TempDir()
	defer captureC2(t, retain, "catalogue-under-a-frame")
	res := o.runWatched(watch.started, nil, "--retain-dir", retain, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--frame", o.sealFrame("file.read"), "--cwd", o.tree, "--scratch-cwd", "--audit",
		"-p", "read hello.txt")
	t.Logf("events:\n%s", res.stdout)
	catalogueUnderAFrame(t, o, res, up, watch)
}

// catalogueUnderAFrame checks what a governed catalogue run whose model
// reads hello.txt, writes out.txt and fetches a URL under a frame admitting
// file.read must show, on every kind: exit 0; the read's result, the
// write's denial and the uncovered tool's denial reached the model; an
// UNCOVERED_TOOL warning; the census; the real token only at the
// upstream, never in the child, its scratch tree or metaharness's output;
// the denied write never happened.
func catalogueUnderAFrame(t *testing.T, o *operator, res *runResult, up *scripted.Server, watch *secretWatch) {
	t.Helper()
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	for _, r := range up.Requests() {
		if r.Credential() != watch.token {
			t.Errorf("request %d carried %q, not the real token", r.Seq, r.Credential())
		}
	}
	results := modelSaw(up)
	if len(results) < 1 || !strings.Contains(results[0], "hello from the operator's tree") {
		t.Errorf("the read's result did not reach the model: %q", results)
	}
	if len(results) < 2 || !strings.Contains(results[1], "denied") {
		t.Errorf("the write's denial did not reach the model: %q", results)
	}
	if len(results) < 3 || !strings.Contains(results[2], "no operation") {
		t.Errorf("the uncovered tool's denial did not reach the model: %q", results)
	}
	var uncovered bool
	for _, ev := range res.find("warning") {
		uncovered = uncovered || ev.(*record.Warning).Code == "UNCOVERED_TOOL"
	}
	if !uncovered {
		t.Error("no UNCOVERED_TOOL warning in the stream")
	}
	o.onePerCall(res, 3)
	ended := res.find("session.ended")
	if len(ended) != 1 {
		t.Fatalf("%d session.ended events, want 1", len(ended))
	}
	if census := ended[0].(*record.SessionEnded).Census; census == nil || census.Allowed != 1 || census.Denied != 2 {
		t.Errorf("census %+v, want 1 allowed and 2 denied", census)
	}
	lastIsStreamClosed(t, res)
	watch.check()
	for _, secret := range []string{watch.token, watch.placeholder} {
		if secret == "" || bytes.Contains(res.stdout, []byte(secret)) || bytes.Contains(res.stderr, []byte(secret)) {
			t.Errorf("the real token or the placeholder (%d bytes) reached metaharness's output", len(secret))
		}
	}
	if _, err := os.Stat(filepath.Join(o.tree, "out.txt")); err == nil {
		t.Error("the denied write happened")
	}
}

// secretWatch looks at the run while the scripted model answers (so the
// child certainly runs): no process below metaharness, and no file in the
// child's scratch tree, holds the real token; the vendor holds a placeholder.
type secretWatch struct {
	t     *testing.T
	token string
	// placeholderVar and homeVar are the child's variables holding the
	// placeholder and its scratch config home (default: Claude Code's).
	placeholderVar, homeVar string
	pid                     chan int
	mu                      sync.Mutex
	looks                   int
	errs                    []string
	placeholder             string
}

func (w *secretWatch) started(pid int) { w.pid <- pid }

func (w *secretWatch) look(scripted.Request) {
	var pid int
	select {
	case pid = <-w.pid:
		w.pid <- pid
	case <-time.After(time.Minute):
		return
	}
	procs, err := vendortest.Tree(pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs = append(w.errs, err.Error())
		return
	}
	w.looks++
	var scratch string
	var placeholder bool
	phVar, homeVar := w.placeholderVar, w.homeVar
	if phVar == "" {
		phVar, homeVar = "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CONFIG_DIR"
	}
	for _, p := range procs[1:] { // procs[0] is metaharness, which holds the token by design
		for _, where := range vendortest.Holds([]vendortest.Proc{p}, w.token) {
			w.errs = append(w.errs, "the token is in the child: "+where+" "+strings.Join(p.Cmdline, " "))
		}
		for _, kv := range p.Environ {
			if v, ok := strings.CutPrefix(kv, phVar+"="); ok && v != "" {
				placeholder, w.placeholder = true, v
			}
			if v, ok := strings.CutPrefix(kv, homeVar+"="); ok {
				scratch = filepath.Dir(v)
			}
		}
	}
	if !placeholder || scratch == "" {
		w.errs = append(w.errs, "no child process held the placeholder and the scratch config home")
		return
	}
	err = filepath.WalkDir(scratch, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(w.token)) {
			w.errs = append(w.errs, "the token is in the scratch file "+path)
		}
		return nil
	})
	if err != nil {
		w.errs = append(w.errs, err.Error())
	}
}

func (w *secretWatch) check() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.looks == 0 {
		w.t.Error("the child was never looked at")
	}
	for _, e := range w.errs {
		w.t.Error(e)
	}
}

// TestRunClaudeAskModeNativeTools: (c) in ask mode the embedder, writing
// commands on stdin, denies one native call (Bash) and allows another
// (Read); both travel through the PreToolUse hook seam. The --context file
// reaches the model in the system prompt, the channel session.started names.
func TestRunClaudeAskModeNativeTools(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	notes := o.write("notes.md", "the release is on Friday\n")
	o.git("init", "-q")
	o.git("add", "notes.md")
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"touch pwned"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":` + strconvQuote(notes) + `}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()

	decided := map[string]string{}
	retain := t.TempDir()
	defer captureC2(t, retain, "ask-mode-native-tools")
	res := o.run(decideAll(t, decided, func(req *record.ToolRequested) string {
		if req.Name == "Bash" {
			return `{"decision":"deny","reason":"no shell in this step"}`
		}
		return `{"decision":"allow"}`
	}), "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--decisions", "ask", "--cwd", o.tree, "--context", "notes.md", "--retain-dir", retain, "-p", "look around")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	if len(decided) != 2 {
		t.Fatalf("the embedder was asked about %v, want Bash and Read", decided)
	}
	askModeHeld(t, o, res, up, "append-system-prompt")
	first := up.Requests()[0]
	if !bytes.Contains(first.Body, []byte("the release is on Friday")) || !bytes.Contains(first.Body, []byte(`context-file-1 path=\"notes.md\"`)) {
		t.Error("the context file did not reach the model's system prompt")
	}
}

// askModeHeld: in an ask-mode run of a shell call the embedder denied and
// a read of notes.md it allowed, the shell ran nothing and the model was
// told why, the read's result reached it, every command was answered,
// each call decided once at the hook, and notes.md went in as a context
// file by the kind's channel.
func askModeHeld(t *testing.T, o *operator, res *runResult, up *scripted.Server, channel string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(o.tree, "pwned")); err == nil {
		t.Error("the denied shell call ran")
	}
	results := modelSaw(up)
	if len(results) != 2 || !strings.Contains(results[0], "no shell in this step") || !strings.Contains(results[1], "the release is on Friday") {
		t.Errorf("tool results the model saw: %q", results)
	}
	res.commandsOK(t)
	if got := res.decisions(); got != "embedder/hook/deny embedder/hook/allow" {
		t.Errorf("decisions %v", got)
	}
	o.onePerCall(res, 2)
	started := res.find("session.started")[0].(*record.SessionStarted)
	if len(started.ContextFiles) != 1 || started.ContextFiles[0].Channel != channel || started.ContextFiles[0].Path != "notes.md" {
		t.Errorf("context_files %+v", started.ContextFiles)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// stoppable is a kind's ask-mode run whose one call waits for the
// embedder: the operator, the scripted model, the run's flags, and how to
// tell the vendor's process below metaharness.
type stoppable struct {
	o      *operator
	up     *scripted.Server
	args   []string
	vendor func(vendortest.Proc) bool
}

// claudeStoppable is Claude Code calling Bash.
func claudeStoppable(t *testing.T) stoppable {
	o := newOperator(t, randomToken("sk-ant-test-REAL-"))
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"sleep 1"}`)}},
		{Text: "DONE"},
	}})
	t.Cleanup(up.Close)
	return stoppable{o: o, up: up, args: []string{"-p", "wait"}, vendor: func(p vendortest.Proc) bool {
		return len(p.Cmdline) > 0 && filepath.Base(p.Cmdline[0]) == "claude"
	}}
}

// askAndStop starts s, and when its call waits for the embedder calls stop
// with metaharness's pid and the vendor's; it returns the run, how long
// metaharness took to exit after stop, and the scratch tree.
func askAndStop(t *testing.T, s stoppable, stop func(mh, vendor int)) (*runResult, time.Duration, string) {
	pids := make(chan int, 1)
	var stoppedAt time.Time
	var scratch string
	args := append([]string{"--credentials", "loopback", "--model-endpoint", s.up.URL(), "--token-env", "MH_TEST_TOKEN", "--decisions", "ask"}, s.args...)
	res := s.o.runWatched(func(pid int) { pids <- pid }, func(ev *record.EventLine, _ func(string)) {
		if st, ok := ev.Event.(*record.SessionStarted); ok {
			scratch = filepath.Dir(st.Transcript.Path)
		}
		req, ok := ev.Event.(*record.ToolRequested)
		if !ok || !req.DecisionRequired {
			return
		}
		mh := <-pids
		procs, err := vendortest.Tree(mh)
		if err != nil {
			t.Fatal(err)
		}
		// The first match in Tree's breadth-first order is the vendor
		// itself: a child it has forked but not yet exec'd carries the
		// same command line, and killing that one would stop nothing.
		vendor := 0
		for _, p := range procs {
			if s.vendor(p) {
				vendor = p.PID
				break
			}
		}
		if vendor == 0 {
			t.Fatalf("no %s process below metaharness (%d processes)", s.o.kind, len(procs))
		}
		stoppedAt = time.Now()
		stop(mh, vendor)
	}, args...)
	if stoppedAt.IsZero() {
		t.Fatal("the run never waited for a decision")
	}
	return res, time.Since(stoppedAt), scratch
}

// decideAll answers every call that waits for the embedder with the
// decision decide returns for it, and records what was asked.
func decideAll(t *testing.T, asked map[string]string, decide func(req *record.ToolRequested) string) func(ev *record.EventLine, stdin func(string)) {
	return func(ev *record.EventLine, stdin func(string)) {
		req, ok := ev.Event.(*record.ToolRequested)
		if !ok || !req.DecisionRequired {
			return
		}
		if req.DeadlineMS == nil || *req.DeadlineMS != 55000 {
			t.Errorf("deadline %v, want 55000 ms", req.DeadlineMS)
		}
		d := decide(req)
		asked[req.CallID] = req.Name + " " + string(req.Input) + " -> " + d
		stdin(`{"format":"metaharness.command/1","id":"c-` + req.CallID + `","command":"tool.decide","call_id":"` + req.CallID + `","decision":` + d + `}`)
	}
}

// modelSaw is every tool result the scripted model was handed, in order.
func modelSaw(up *scripted.Server) []string {
	var results []string
	for _, r := range up.Requests() {
		for _, tr := range r.ToolResults {
			results = append(results, tr.Content)
		}
	}
	return results
}

// commandsOK fails t for every command the run refused.
func (r *runResult) commandsOK(t *testing.T) {
	t.Helper()
	for _, ev := range r.find("command.result") {
		if cr := ev.(*record.CommandResult); cr.Outcome.Result != "ok" {
			t.Errorf("command %s refused: %+v", cr.ID, cr.Outcome.Refused)
		}
	}
}

// onePerCall checks that each of the run's n tool calls is one
// tool.requested (the vendor's record and the seam's presentation written
// as one) and that project, run as the operator on the stream, counts n.
func (o *operator) onePerCall(res *runResult, n int) {
	o.t.Helper()
	seen := map[string]int{}
	for _, ev := range res.find("tool.requested") {
		seen[ev.(*record.ToolRequested).CallID]++
	}
	for id, k := range seen {
		if k != 1 {
			o.t.Errorf("call %s is %d tool.requested events, want 1", id, k)
		}
	}
	if len(seen) != n {
		o.t.Errorf("%d calls in the stream, want %d", len(seen), n)
	}
	events := filepath.Join(o.t.TempDir(), "events.jsonl")
	if err := os.WriteFile(events, res.stdout, 0o600); err != nil {
		o.t.Fatal(err)
	}
	out, err := o.metaharness("project", events)
	var doc struct {
		Metaharness struct {
			Families map[string]int `json:"families"`
		} `json:"metaharness"`
	}
	if err != nil || json.Unmarshal(out, &doc) != nil {
		o.t.Fatalf("project: %v\n%s", err, out)
	}
	if got := doc.Metaharness.Families["tool_call"]; got != n {
		o.t.Errorf("project counts %d tool calls, want %d", got, n)
	}
}

// decisions lists each tool.decided as decider/seam/decision.
func (r *runResult) decisions() string {
	var out []string
	for _, ev := range r.find("tool.decided") {
		d := ev.(*record.ToolDecided)
		out = append(out, d.DecidedBy+"/"+d.Seam+"/"+d.Decision.Decision)
	}
	return strings.Join(out, " ")
}

// lastIsStreamClosed checks the stream ends with stream.closed and returns it.
func lastIsStreamClosed(t *testing.T, res *runResult) *record.StreamClosed {
	t.Helper()
	if len(res.events) == 0 {
		t.Fatal("no events")
	}
	sc, ok := res.events[len(res.events)-1].Event.(*record.StreamClosed)
	if !ok {
		t.Fatalf("the last line is %s, not stream.closed", res.events[len(res.events)-1].Name())
	}
	if c := record.CheckCompleteness(res.events); c.State != record.Complete {
		t.Errorf("stream %s", c.Line())
	}
	return sc
}

// signalsStop: SIGTERM or SIGINT to metaharness mid-run ends the child's
// whole process group, writes stream.closed, removes the scratch tree and
// exits 3 within 4 s; the pending call is abandoned (denied, nothing ran).
func signalsStop(t *testing.T, kind func(*testing.T) stoppable) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			var vendorPID int
			res, took, scratch := askAndStop(t, kind(t), func(mh, vendor int) {
				vendorPID = vendor
				_ = syscall.Kill(mh, sig)
			})
			if took > 4*time.Second {
				t.Errorf("metaharness took %v to exit after %v, want within 4s", took, sig)
			}
			sc := lastIsStreamClosed(t, res)
			// The vendor may catch SIGTERM and exit on its own, so the child
			// may end exited or signaled; either way the runner saw it end.
			if sc.Reason != record.ReasonError || sc.Process == nil || sc.Process.Kind == "unknown" {
				t.Errorf("stream.closed %+v (process %+v), want reason error and the child's end", sc, sc.Process)
			}
			if res.code != 3 {
				t.Errorf("exit %d, want 3: the child died with no terminal record", res.code)
			}
			if err := syscall.Kill(vendorPID, 0); err == nil {
				t.Errorf("the vendor process %d outlived the run", vendorPID)
			}
			if _, err := os.Stat(scratch); !os.IsNotExist(err) {
				t.Errorf("the scratch tree %s was not removed (%v)", scratch, err)
			}
			var abandoned bool
			for _, ev := range res.find("warning") {
				abandoned = abandoned || ev.(*record.Warning).Code == "PENDING_CALL_ABANDONED"
			}
			if !abandoned {
				t.Error("the pending call was not abandoned")
			}
		})
	}
}

// killedChild: SIGKILL of the vendor mid-run, by a process that is not the
// run, still closes the stream, with the signal in stream.closed.process and
// the reason killed (a vendor killed by someone else never ends a run as
// completed), and exits 3.
func killedChild(t *testing.T, s stoppable) {
	res, _, _ := askAndStop(t, s, func(_, vendor int) { _ = syscall.Kill(vendor, syscall.SIGKILL) })
	sc := lastIsStreamClosed(t, res)
	if sc.Process == nil || sc.Process.Kind != "signaled" || sc.Process.Signal == nil || *sc.Process.Signal != int(syscall.SIGKILL) {
		t.Errorf("stream.closed.process %+v, want signaled 9", sc.Process)
	}
	if sc.Reason != record.ReasonKilled || res.code != 3 {
		t.Errorf("reason %s, exit %d; want killed and 3", sc.Reason, res.code)
	}
}

// TestRunClaudeSIGTERM: signalsStop on Claude Code.
func TestRunClaudeSIGTERM(t *testing.T) { signalsStop(t, claudeStoppable) }

// TestRunClaudeChildKilled: killedChild on Claude Code.
func TestRunClaudeChildKilled(t *testing.T) { killedChild(t, claudeStoppable(t)) }

// captureC2 copies a run's retained transcript into the C2 vectors when
// METAHARNESS_CAPTURE_C2 is set (then `go test ./conformance -run TestC2
// -update` writes the expected streams): real Claude Code output, captured
// against the scripted server, replayed byte for byte ever after.
func captureC2(t *testing.T, retain, name string) { captureKindC2(t, retain, "claude", name) }

// TestRunClaudeObserveMode: observe allows every call through the hook
// seam and names the mode that did; the attestation states the grant.
func TestRunClaudeObserveMode(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"echo observed > seen.txt"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--decisions", "observe", "--cwd", o.tree, "-p", "go")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	decided := res.find("tool.decided")
	if len(decided) != 1 {
		t.Fatalf("%d decisions, want 1", len(decided))
	}
	o.onePerCall(res, 1)
	if d := decided[0].(*record.ToolDecided); d.DecidedBy != "observe" || d.Decision.Decision != record.Allow || d.Seam != "hook" {
		t.Errorf("decision %+v, want allow by observe at the hook", d)
	}
	if b, err := os.ReadFile(filepath.Join(o.tree, "seen.txt")); err != nil || string(b) != "observed\n" {
		t.Errorf("the observed call did not run: %q %v", b, err)
	}
	h := res.find("session.started")[0].(*record.SessionStarted).Hermetic
	if h.Decisions != "observe" || !strings.Contains(strings.Join(h.AmbientInputs, "\n"), "observe mode") {
		t.Errorf("attestation %+v does not state the observe grant", h)
	}
}

// TestRunClaudeMemoryCanary holds the pinned Claude Code to what H11 claims
// for it: under the launch metaharness builds, a memory file above the
// working directory, and one at its root, never reach the model. Each holds
// a canary string that the scripted server looks for in every request body.
// (Run by hand without --setting-sources "", the same binary sends both.)
func TestRunClaudeMemoryCanary(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	above, atRoot, task := randomToken("CANARY-ABOVE-"), randomToken("CANARY-ROOT-"), randomToken("TASK-")
	if err := os.WriteFile(filepath.Join(filepath.Dir(o.tree), "CLAUDE.md"), []byte("Always say "+above+".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o.write("CLAUDE.md", "Always say "+atRoot+".\n")
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{{Text: "DONE"}}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--decisions", "observe", "--cwd", o.tree, "-p", task)
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	reqs := up.Requests()
	if len(reqs) == 0 || !bytes.Contains(reqs[0].Body, []byte(task)) {
		t.Fatalf("the scripted server saw %d requests, the first without the task: the canary check would prove nothing", len(reqs))
	}
	for _, r := range reqs {
		for _, c := range []string{above, atRoot} {
			if bytes.Contains(r.Body, []byte(c)) {
				t.Errorf("request %d (%s) carried the memory canary %s", r.Seq, r.Path, c)
			}
		}
	}
}

// TestDoctorRealClaude: doctor puts the launch's flags to the pinned Claude
// Code itself, including those its --help leaves out (--max-turns), and the
// real binary takes every one and stops at the missing --settings file.
func TestDoctorRealClaude(t *testing.T) {
	o := newOperator(t, "unused")
	out, err := o.metaharness("doctor", "claude")
	if err != nil {
		t.Fatalf("doctor claude: %v\n%s", err, out)
	}
	for _, want := range []string{"\nok version: 2.1.328, on the adapter's pin", "\nok flags: ", "takes every flag the launch uses", "--max-turns"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor's answer lacks %q:\n%s", want, out)
		}
	}
	noQuotaPhrase(t, "doctor's answer", string(out))
}

// TestConformanceLiveRealClaude: `conformance claude --live` drives the
// pinned Claude Code through the built-in session and every step holds;
// under --contract stdout stays the one JSON line and the steps go to stderr.
func TestConformanceLiveRealClaude(t *testing.T) { liveConformance(t, newOperator(t, "unused")) }

// liveConformance: `conformance KIND --live` drives the operator's pinned
// vendor through the built-in session and every step holds; under
// --contract stdout stays the one JSON line and the steps go to stderr.
func liveConformance(t *testing.T, o *operator) {
	out, err := o.metaharness("conformance", o.kind, "--live")
	if err != nil {
		t.Fatalf("conformance %s --live: %v\n%s", o.kind, err, out)
	}
	if n := strings.Count(string(out), "\nPASS live "); n != 6 || !strings.Contains(string(out), "6 live steps, 0 failed") {
		t.Errorf("%d PASS live lines, want 6:\n%s", n, out)
	}
	bin, _ := exec.LookPath("metaharness")
	cmd := exec.Command(bin, "conformance", o.kind, "--live", "--contract")
	cmd.Env = o.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("conformance %s --live --contract: %v\n%s", o.kind, err, stderr.String())
	}
	if lines := strings.Split(strings.TrimSpace(stdout.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], `{"breaking_changes":0,`) {
		t.Errorf("stdout is not one contract_result line:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "6 live steps, 0 failed") {
		t.Errorf("the steps did not go to stderr:\n%s", stderr.String())
	}
}

// TestDoctorRealCodex: doctor codex finds the pinned Codex on the child's
// PATH (here the npm package's node wrapper, resolved to the native binary
// beside it), holds it to its pin, and puts the widest config a run plans
// to the real binary's --strict-config, which takes it.
func TestDoctorRealCodex(t *testing.T) {
	codex := vendortest.Binary(t, "codex")
	o := newOperator(t, "unused")
	if err := os.Symlink(codex, filepath.Join(o.home, ".local", "bin", "codex")); err != nil {
		t.Fatal(err)
	}
	out, err := o.metaharness("doctor", "codex")
	if err != nil {
		t.Fatalf("doctor codex: %v, want exit 0\n%s", err, out)
	}
	for _, want := range []string{"\nok version: 0.169.0, on the adapter's pin (0.169.0)",
		"\nok flags: ", "app-server --strict-config on the planned config.toml for ", "/vendor/x86_64-unknown-linux-musl/bin/codex (model gpt-6.1-sol)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("doctor's answer lacks %q:\n%s", want, out)
		}
	}
	noQuotaPhrase(t, "doctor's answer", string(out))
}

// TestRealClaudeCatalogueHookMatcher: the PreToolUse matcher of a
// catalogue run, as Claude Code itself reads it, starts no hook for the
// catalogue server's tools and still starts it for every other tool. The
// model calls a catalogue tool, then the native Read; the hook (a recorder
// that abstains) sees Read alone, and both calls run.
func TestRealClaudeCatalogueHookMatcher(t *testing.T) {
	bin := vendortest.Binary(t, "claude")
	tools := vendortest.Tools(t)
	h := vendortest.NewHome(t)
	self, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(h.Work, "notes.md")
	cat := filepath.Join(h.Root, "tools.yaml")
	hookLog := filepath.Join(h.Root, "hook.log")
	settings := filepath.Join(h.Root, "settings.json")
	mcp := filepath.Join(h.Root, "mcp.json")
	hook := "cat >> '" + hookLog + "'; echo >> '" + hookLog + "'"
	for p, v := range map[string]any{
		settings: map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": claude.OwnedHookMatcher,
			"hooks":   []any{map[string]any{"type": "command", "command": hook, "timeout": 30}},
		}}}},
		mcp: map[string]any{"mcpServers": map[string]any{"metaharness": map[string]any{
			"type": "stdio", "command": self, "args": []string{"mcp-serve", "--catalogue", cat, "--workspace", h.Work},
		}}},
	} {
		b, _ := json.Marshal(v)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{notes: "the release is on Friday\n", cat: readCatalogue} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"notes.md"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":` + strconvQuote(notes) + `}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "--output-format", "stream-json", "--verbose",
		"--strict-mcp-config", "--setting-sources", "", "--settings", settings, "--mcp-config", mcp,
		"--permission-mode", "dontAsk", "--allowedTools", "mcp__metaharness__read_file,Read", "--", "read the notes twice")
	cmd.Dir = h.Work
	cmd.Env = h.ClaudeEnv(tools, map[string]string{"ANTHROPIC_BASE_URL": up.URL(), "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"})
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	results := modelSaw(up)
	if len(results) != 2 || !strings.Contains(results[0], "the release is on Friday") || !strings.Contains(results[1], "the release is on Friday") {
		t.Errorf("tool results the model saw: %q", results)
	}
	logged, _ := os.ReadFile(hookLog)
	var hooked []string
	for _, line := range bytes.Split(bytes.TrimSpace(logged), []byte("\n")) {
		var p struct {
			Tool string `json:"tool_name"`
		}
		if json.Unmarshal(line, &p) == nil {
			hooked = append(hooked, p.Tool)
		}
	}
	if strings.Join(hooked, ",") != "Read" {
		t.Errorf("the hook ran for %q, want Read alone", hooked)
	}
}

// TestRunClaudeOffersExactlyTheCatalogue: with --catalogue the model is
// offered the catalogue's tools and nothing else: no built-in, and none of
// Claude Code's own stand-ins (2.1.328 adds a DeferredToolPlaceholder stub
// for deferred tool loading unless tool search is off). Read from the tools
// array of every request the scripted model received.
func TestRunClaudeOffersExactlyTheCatalogue(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"hello.txt"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	o.write("hello.txt", "hi\n")
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--frame", o.sealFrame("file.read"), "--cwd", o.tree, "--scratch-cwd", "-p", "read hello.txt")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	want := "mcp__metaharness__fetch_url,mcp__metaharness__fs_write,mcp__metaharness__read_file"
	reqs := up.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the scripted model saw %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		got := append([]string(nil), r.Tools...)
		sort.Strings(got)
		if strings.Join(got, ",") != want {
			t.Errorf("request %d offered the model %v, want exactly the catalogue %s", r.Seq, r.Tools, want)
		}
	}
}

// TestRunClaudeWithAThousandEntries: a catalogue of 1000 entries, each
// published under a 64-character name, reaches the pinned Claude Code whole:
// its launch (--allowedTools names every one, some 83 KB in one argument)
// starts, every request offers the model all 1000 tools, and a call to the
// last is performed through mcp-serve.
func TestRunClaudeWithAThousandEntries(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	cat, last := o.thousandEntries()
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__" + last, Input: json.RawMessage(`{"path":"hello.txt"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--decisions", "observe", "--cwd", o.tree, "--scratch-cwd", "-p", "read hello.txt")
	o.thousandthPerformed(res, up.Requests(), "mcp__metaharness__"+last)
}

// thousandEntries writes a catalogue of 1000 entries, each a read of the
// tree published under a name of 64 characters, and the file the last one
// is asked to read; it returns the catalogue and the last entry's name.
func (o *operator) thousandEntries() (cat, last string) {
	var src strings.Builder
	src.WriteString("format: metaharness.tool-contract/1\nentries:\n")
	for i := 1; i <= 1000; i++ {
		last = fmt.Sprintf("read_%d_", i)
		last += strings.Repeat("x", 64-len(last))
		fmt.Fprintf(&src, "  - {name: fs.read, summary: Read a text file in the workspace., input: {type: object, properties: {path: {type: string}}, required: [path]}, renderings: {mcp: %s}}\n", last)
	}
	cat = filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(src.String()), 0o644); err != nil {
		o.t.Fatal(err)
	}
	o.write("hello.txt", "hi from the thousandth entry\n")
	return cat, last
}

// thousandthPerformed checks a run on thousandEntries: it exited 0, every
// request offered the model at least the catalogue's 1000 tools (the last
// entry's under a name ending in tool: codex puts its dynamic tools under
// functions__), and the call to the last was performed.
func (o *operator) thousandthPerformed(res *runResult, reqs []scripted.Request, tool string) {
	o.t.Helper()
	if res.code != 0 {
		o.t.Errorf("exit %d, want 0\n%s", res.code, res.stderr)
	}
	if len(reqs) < 2 {
		o.t.Fatalf("the scripted model saw %d requests, want 2", len(reqs))
	}
	for _, r := range reqs {
		named := slices.ContainsFunc(r.Tools, func(n string) bool { return strings.HasSuffix(n, tool) })
		if len(r.Tools) < 1000 || !named {
			o.t.Errorf("request %d offered the model %d tools, want the catalogue's 1000 among them, %s too", r.Seq, len(r.Tools), tool)
		}
	}
	performed := false
	for _, ev := range res.find("tool.result") {
		performed = performed || strings.Contains(string(ev.(*record.ToolResult).Content), "hi from the thousandth entry")
	}
	if !performed {
		o.t.Error("the call to the thousandth entry was not performed")
	}
}

// TestRunClaudeModelEndpointWithoutCredential: --credentials none with
// --model-endpoint reaches the endpoint with no key variable in the child
// (the caller's ANTHROPIC_API_KEY stays out): Claude Code holds only the
// fixed stand-in word from the settings' apiKeyHelper, the loopback proxy
// in front takes even that out, so the endpoint sees no credential at all,
// and the audited run is clean (H4 reads the stand-in as no credential,
// H13 holds the record to the wire the proxy read).
func TestRunClaudeModelEndpointWithoutCredential(t *testing.T) {
	o := newOperator(t, "unused")
	callerKey := randomToken("sk-ant-caller-")
	o.env = append(o.env, "ANTHROPIC_API_KEY="+callerKey, "ANTHROPIC_AUTH_TOKEN="+callerKey)
	pids := make(chan int, 1)
	var mu sync.Mutex
	var looked int
	var held []string
	up := scripted.NewAnthropicServer(scripted.Texts("DONE"), scripted.OnRequest(func(scripted.Request) {
		pid := <-pids
		pids <- pid
		procs, err := vendortest.Tree(pid)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, p := range procs[1:] {
			looked++
			for _, kv := range p.Environ {
				k, v, _ := strings.Cut(kv, "=")
				if strings.Contains(k, "API_KEY") || strings.Contains(k, "AUTH_TOKEN") || strings.Contains(v, callerKey) {
					held = append(held, k)
				}
			}
		}
	}))
	defer up.Close()
	res := o.runWatched(func(pid int) { pids <- pid }, nil, "--credentials", "none", "--model-endpoint", up.URL(), "--audit", "-p", "hi")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	reqs := up.Requests()
	if len(reqs) == 0 {
		t.Fatal("the endpoint was never reached")
	}
	for _, r := range reqs {
		if got := r.Credential(); got != "" {
			t.Errorf("request %d carried %q, want no credential", r.Seq, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if looked == 0 {
		t.Error("the child was never looked at")
	}
	if len(held) > 0 {
		t.Errorf("the child's environment holds key variables %v", held)
	}
	if !bytes.Contains(res.stderr, []byte("H4   ok")) || !bytes.Contains(res.stderr, []byte("H13  ok")) {
		t.Errorf("the audit does not read H4 and H13 as ok:\n%s", res.stderr)
	}
	if bytes.Contains(res.stdout, []byte(callerKey)) || bytes.Contains(res.stderr, []byte(callerKey)) {
		t.Error("the caller's key reached metaharness's output")
	}
}

// TestRunClaudeOwnedDefaultVerbs: --tool-surface owned with --allow-program
// and no catalogue, on the pinned Claude Code: every request the model gets
// offers exactly the default verbs of the one server, none of the vendor's
// own tools and no stand-in of Claude Code's; the frame decides what each
// call behind tool_invoke does (the declared echo runs and its output
// reaches the model, the write is denied).
func TestRunClaudeOwnedDefaultVerbs(t *testing.T) {
	o := newOperator(t, "not-a-real-token")
	o.write("notes.md", "the release is on Friday\n")
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__tool_invoke", Input: json.RawMessage(`{"name":"run","arguments":{"argv":["echo","checked by echo"]}}`)}},
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__tool_invoke", Input: json.RawMessage(`{"name":"fs.write","arguments":{"path":"out.txt","text":"x"}}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()
	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--tool-surface", "owned", "--allow-program", "echo", "--frame", o.sealFrame("file.read", "shell"),
		"--cwd", o.tree, "--scratch-cwd", "-p", "check the notes")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	want := []string{"mcp__metaharness__tool_describe", "mcp__metaharness__tool_invoke", "mcp__metaharness__tool_search"}
	reqs := up.Requests()
	if len(reqs) < 3 {
		t.Fatalf("the scripted model saw %d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if got := slices.Sorted(slices.Values(r.Tools)); !slices.Equal(got, want) {
			t.Errorf("request %d offered %q, want exactly %q", r.Seq, r.Tools, want)
		}
	}
	results := modelSaw(up)
	if len(results) < 2 || !strings.Contains(results[0], "checked by echo") {
		t.Errorf("the declared program's output did not reach the model: %q", results)
	}
	if len(results) < 2 || !strings.Contains(results[1], "resolves to file.write, which the frame does not admit") {
		t.Errorf("the write's denial did not reach the model: %q", results)
	}
	if _, err := os.Stat(filepath.Join(o.tree, "out.txt")); err == nil {
		t.Error("the denied write happened")
	}
}
