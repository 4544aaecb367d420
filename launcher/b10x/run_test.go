package b10x_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/b10xstandin"
)

// TestMain lets the test binary be the stand-in (started as b10x-harness)
// and the confined child's init (internal-init), as metaharness is.
func TestMain(m *testing.M) {
	b10xstandin.MainIfInvoked()
	if len(os.Args) > 1 && os.Args[1] == "internal-init" {
		if len(os.Args) > 2 && os.Args[2] == "--nested-probe" {
			os.Exit(confine.NestedProbe())
		}
		os.Exit(confine.Main())
	}
	os.Exit(m.Run())
}

// outcome is one run of the stand-in through launcher.Run.
type outcome struct {
	code   exit.Code
	err    error
	lines  []*record.EventLine
	raw    string
	stderr string
	seen   b10xstandin.Seen
}

func (o *outcome) names() []string {
	var out []string
	for _, l := range o.lines {
		out = append(out, l.Name())
	}
	return out
}

func (o *outcome) find(t *testing.T, name string) record.Event {
	t.Helper()
	for _, l := range o.lines {
		if l.Name() == name {
			return l.Event
		}
	}
	t.Fatalf("no %s in\n%s", name, o.raw)
	return nil
}

func (o *outcome) warnings() map[string]string {
	m := map[string]string{}
	for _, l := range o.lines {
		if w, ok := l.Event.(*record.Warning); ok {
			m[w.Code] = w.Message
		}
	}
	return m
}

// world is a caller: a HOME whose ~/.local/bin holds the stand-in with a
// script, and the caller's environment.
type world struct {
	home string
	env  map[string]string
	self string // the init of a confined child: this test binary
	seen string // where the stand-in writes what it saw
}

func newWorld(t *testing.T, script b10xstandin.Config) *world {
	t.Helper()
	home := t.TempDir()
	b, _ := json.Marshal(script)
	if _, err := b10xstandin.Install(filepath.Join(home, ".local", "bin"), b); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &world{home: home, self: self, seen: filepath.Join(home, ".local", "bin", "b10x-harness.seen.json"),
		env: map[string]string{"HOME": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SSH_AUTH_SOCK": "/run/agent.sock"}}
}

// confinedWorld is a caller whose run is confined: the loop sees its
// workspace (ws, the run's --cwd, declared a scratch copy) and not the
// stand-in's directory, so the script is ws/script.json, named by the task.
func confinedWorld(t *testing.T, script b10xstandin.Config) (*world, *kind.Spec) {
	t.Helper()
	w := newWorld(t, b10xstandin.Config{})
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(script)
	if err := os.WriteFile(filepath.Join(ws, "script.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w.seen = filepath.Join(ws, "script.seen.json")
	s := spec()
	s.Unconfined, s.Cwd, s.ScratchCwd, s.Prompt = false, ws, true, "script.json"
	return w, s
}

// spec is the smallest b10x run: observed, no credential, a model and an
// endpoint the loop is never made to dial. These runs are --unconfined, so
// the stand-in finds its script beside its program; confinedWorld's runs
// are not.
func spec() *kind.Spec {
	return &kind.Spec{Kind: "b10x", Prompt: "observe this run", Hermetic: "off", Decisions: "observe",
		Credentials: "none", Model: "b10x-emulated", ModelEndpoint: "https://example.invalid", Output: "events", Unconfined: true}
}

// watched is a run's stdout that says when a line holding a marker was
// written, and hands each whole line to each, when set.
type watched struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	seen   chan struct{}
	each   func(line []byte)
	read   int // what each has been handed
}

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.seen != nil && bytes.Contains(p, []byte(w.marker)) {
		close(w.seen)
		w.seen = nil
	}
	for w.each != nil {
		rest := w.buf.Bytes()[w.read:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		w.read += i + 1
		w.each(rest[:i])
	}
	return len(p), nil
}

func (w *world) run(t *testing.T, s *kind.Spec, stdin io.Reader) *outcome {
	t.Helper()
	return w.runWatched(t, s, stdin, &watched{})
}

func (w *world) runWatched(t *testing.T, s *kind.Spec, stdin io.Reader, out *watched) *outcome {
	t.Helper()
	var errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := launcher.Run(ctx, s, b10x.Kind{}, launcher.IO{Stdin: stdin, Stdout: out, Stderr: &errb, Env: w.env, Self: w.self})
	out.mu.Lock()
	defer out.mu.Unlock()
	o := &outcome{code: code, err: err, raw: out.buf.String(), stderr: errb.String()}
	for _, l := range strings.Split(strings.TrimSpace(out.buf.String()), "\n") {
		if l == "" {
			continue
		}
		ev, perr := record.ParseEvent([]byte(l))
		if perr != nil {
			t.Fatalf("event line %q: %v", l, perr)
		}
		o.lines = append(o.lines, ev)
	}
	if b, rerr := os.ReadFile(w.seen); rerr == nil {
		_ = json.Unmarshal(b, &o.seen)
	}
	return o
}

func TestAGoldenRunMapsToTheNeutralEvents(t *testing.T) {
	w := newWorld(t, b10xstandin.Config{})
	o := w.run(t, spec(), nil)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s", o.code, o.err, o.stderr)
	}
	want := []string{"session.started", "turn.started", "usage", "tool.requested", "tool.result", "turn.started",
		"text", "text", "usage", "session.ended", "stream.closed"}
	if got := o.names(); !slices.Equal(got, want) {
		t.Fatalf("events %v\nwant   %v", got, want)
	}
	st := o.find(t, "session.started").(*record.SessionStarted)
	if st.Adapter != "b10x" || st.AdapterClass != "direct_provider" || deref(st.HarnessVersion) != "0.13.3" ||
		deref(st.Model) != "b10x-emulated" || deref(st.CredentialSource) != "none" || st.Cwd != nil ||
		!slices.Equal(st.OfferedTools, []string{"file_read", "dir_list", "search", "find"}) || st.Hermetic == nil {
		t.Errorf("session.started: %+v", st)
	}
	tr := o.find(t, "tool.requested").(*record.ToolRequested)
	if tr.CallID != "call_b10x_001" || tr.Name != "file_read" || tr.Seam != record.SeamNone || tr.DecisionRequired ||
		!slices.Equal(tr.Operations, []string{"file.read"}) || !slices.Equal(tr.Subjects, []string{"file:README.md"}) {
		t.Errorf("tool.requested: %+v", tr)
	}
	end := o.find(t, "session.ended").(*record.SessionEnded)
	if *end.IsError || deref(end.Subtype) != "completed" || *end.NumTurns != 2 || end.TotalCostUSD != nil ||
		end.FinalAnswer == nil || end.FinalAnswer.Text != "I read README.md: hello harness" || end.Census == nil || end.Census.Allowed != 0 {
		t.Errorf("session.ended: %+v", end)
	}
	if c := o.lines[len(o.lines)-1].Event.(*record.StreamClosed); c.Reason != record.ReasonCompleted || c.Process.Code == nil || *c.Process.Code != 0 {
		t.Errorf("stream.closed: %+v", c)
	}
	// The loop saw exactly the launch: argv, environment, directory.
	if o.seen.Cwd != o.seen.Workspace || !strings.HasSuffix(o.seen.Cwd, "/work") {
		t.Errorf("the loop ran in %s, workspace %s", o.seen.Cwd, o.seen.Workspace)
	}
	if keys := sortedKeys(o.seen.Env); !slices.Equal(keys, []string{"PATH", "XDG_CONFIG_HOME"}) {
		t.Errorf("the loop's environment has %v, want PATH and XDG_CONFIG_HOME only", keys)
	}
	if o.seen.Env["PATH"] != w.home+"/.local/bin:/usr/local/bin:/usr/bin:/bin" {
		t.Errorf("PATH %s", o.seen.Env["PATH"])
	}
	wantArgv := []string{"run", "--base-url", "https://example.invalid/v1", "--model", "b10x-emulated", "--workspace", o.seen.Cwd,
		"--execution-path", "metaharness", "--json", "--no-session", "--approve-up-to", "high", "--input", "observe this run"}
	if !slices.Equal(o.seen.Argv, wantArgv) {
		t.Errorf("argv %q\nwant %q", o.seen.Argv, wantArgv)
	}
}

func TestTheLoopsRefusalsAndBlocksAreWarnings(t *testing.T) {
	for scenario, want := range map[string][2]string{
		"approval-denied":  {"approval-denied", "the approver denied call_b10x_001"},
		"hook-block":       {"hook-refused", "the hook keeps README.md closed"},
		"hook-failed":      {"hook-failed", "the hook program exited 127"},
		"unpublished-tool": {"unpublished-tool", "the model called `shell.exec`, which this run never published"},
		"program-refused":  {"program-refused", "`sh` is not a program this run may start. Declared: cargo."},
	} {
		o := newWorld(t, b10xstandin.Config{Scenario: scenario}).run(t, spec(), nil)
		if got := o.warnings()[want[0]]; got != want[1] || o.code != exit.OK {
			t.Errorf("%s: exit %d, warning %s = %q, want %q\n%s", scenario, o.code, want[0], got, want[1], o.raw)
		}
		if slices.Contains(o.names(), "tool.decided") {
			t.Errorf("%s: a tool.decided: the loop decides its calls, metaharness records them", scenario)
		}
	}
	// Silent kinds stay silent: a hook that let the call proceed, an
	// approval granted.
	for _, scenario := range []string{"hook-proceed", "approval-granted"} {
		o := newWorld(t, b10xstandin.Config{Scenario: scenario}).run(t, spec(), nil)
		if len(o.warnings()) != 0 || o.code != exit.OK {
			t.Errorf("%s: exit %d, warnings %v", scenario, o.code, o.warnings())
		}
	}
}

func TestUnknownKindsAreOpaque(t *testing.T) {
	o := newWorld(t, b10xstandin.Config{Scenario: "unknown-kinds"}).run(t, spec(), nil)
	var subtypes []string
	for _, l := range o.lines {
		if op, ok := l.Event.(*record.Opaque); ok {
			if deref(op.VendorType) != "b10x" || op.SourceLine == nil || len(op.Digest) != 64 {
				t.Errorf("opaque %+v", op)
			}
			subtypes = append(subtypes, deref(op.VendorSubtype))
		}
	}
	want := []string{"reasoning-delta", "turn-retried", "compacted", "delegate-started", "delegate-finished", "answered", "inventory-changed"}
	if !slices.Equal(subtypes, want) || o.code != exit.OK {
		t.Errorf("exit %d, opaque subtypes %v, want %v", o.code, subtypes, want)
	}
}

func TestCostIsSummedIntoTheTerminalRecord(t *testing.T) {
	w := newWorld(t, b10xstandin.Config{})
	card := filepath.Join(w.home, "prices.json")
	_ = os.WriteFile(card, []byte(`{"source":"test","as_of":"2026-09-15","models":{}}`), 0o600)
	s := spec()
	s.KindFlags = &b10x.Flags{Prices: card}
	o := w.run(t, s, nil)
	end := o.find(t, "session.ended").(*record.SessionEnded)
	if end.TotalCostUSD == nil || *end.TotalCostUSD != 0.017481 {
		t.Errorf("total_cost_usd %v, want 0.017481 (14879 + 2602 micro-dollars)", end.TotalCostUSD)
	}
	if slices.Contains(o.names(), "opaque") {
		t.Errorf("rates or cost leaked as opaque: %v", o.names())
	}
}

func TestNoTerminalRecordIsExit3AndSaysSo(t *testing.T) {
	o := newWorld(t, b10xstandin.Config{Scenario: "wire-refused"}).run(t, spec(), nil)
	if o.code != exit.Unknown || o.err != nil {
		t.Fatalf("exit %d, %v", o.code, o.err)
	}
	if _, ok := o.warnings()[b10x.WarnNoTerminal]; !ok || slices.Contains(o.names(), "session.ended") {
		t.Errorf("events %v, warnings %v", o.names(), o.warnings())
	}
	c := o.lines[len(o.lines)-1].Event.(*record.StreamClosed)
	if c.Reason != record.ReasonError || c.Process == nil || *c.Process.Code != 1 {
		t.Errorf("stream.closed %+v", c)
	}
}

func TestABoundStopIsAnErrorTerminalAndExit3(t *testing.T) {
	s := spec()
	s.MaxTurns = 3
	o := newWorld(t, b10xstandin.Config{Scenario: "stop:max-turns"}).run(t, s, nil)
	end := o.find(t, "session.ended").(*record.SessionEnded)
	if o.code != exit.Unknown || !*end.IsError || deref(end.Subtype) != "max-turns" || end.FinalAnswer != nil {
		t.Errorf("exit %d, session.ended %+v", o.code, end)
	}
	if c := o.lines[len(o.lines)-1].Event.(*record.StreamClosed); c.Reason != record.ReasonBudget || *c.Process.Code != 2 {
		t.Errorf("stream.closed %+v", c)
	}
	if !slices.Contains(o.seen.Argv, "--max-turns") {
		t.Errorf("--max-turns did not reach the loop: %q", o.seen.Argv)
	}
}

func TestTheLoopsRefusedRecordIsARefusal(t *testing.T) {
	reason := "reading the context file `/scratch/context/0/notes.md`: No such file or directory (os error 2)"
	o := newWorld(t, b10xstandin.Config{Refuse: reason}).run(t, spec(), nil)
	var r *exit.Refusal
	if o.code != exit.Refused || !errors.As(o.err, &r) || r.Name != b10x.RefuseContextUnreadable || !strings.Contains(r.Message, reason) {
		t.Fatalf("exit %d, %v", o.code, o.err)
	}
	if got := o.warnings()[b10x.WarnRefused]; got != "b10x-harness refused the run before it started: "+reason {
		t.Errorf("LOOP_REFUSED %q", got)
	}
	if !slices.Contains(o.names(), "opaque") || o.names()[len(o.lines)-1] != "stream.closed" {
		t.Errorf("events %v", o.names())
	}
	o = newWorld(t, b10xstandin.Config{Refuse: "something else broke"}).run(t, spec(), nil)
	if !errors.As(o.err, &r) || r.Name != b10x.RefuseB10xRefused {
		t.Errorf("other refusal: %v", o.err)
	}
}

// stopReasons are the stream.closed reasons of a loop stopped by each
// command: it answers its SIGINT with a cancelled stop, which closes the
// stream as killed; halt says steer-halt.
var stopReasons = map[string]string{"interrupt": record.ReasonKilled, "halt": record.ReasonSteerHalt}

// stoppedByItsOwnStop checks o is a run cmd stopped by SIGINT, which the
// loop answered with its own terminal record: finished{cancelled}, exit 2,
// and the run's outcome halted, exit 3.
func stoppedByItsOwnStop(t *testing.T, cmd string, o *outcome) {
	t.Helper()
	if o.code != exit.Unknown || !strings.Contains(o.stderr, "metaharness: halted: the embedder's "+cmd+" ended the session before its end (child exit 2)") {
		t.Errorf("%s: exit %d, %v\n%s", cmd, o.code, o.err, o.stderr)
	}
	if end := o.find(t, "session.ended").(*record.SessionEnded); deref(end.Subtype) != "cancelled" {
		t.Errorf("%s: session.ended %+v", cmd, end)
	}
	if res := o.find(t, "command.result").(*record.CommandResult); res.ID != "c1" || res.Outcome.Result != "ok" {
		t.Errorf("%s: command.result %+v", cmd, res)
	}
	c := o.lines[len(o.lines)-1].Event.(*record.StreamClosed)
	if c.Reason != stopReasons[cmd] || c.Process == nil || c.Process.Kind != "exited" || c.Process.Code == nil || *c.Process.Code != 2 {
		t.Errorf("%s: stream.closed %+v %+v", cmd, c, c.Process)
	}
}

func TestInterruptAndHaltStopTheLoop(t *testing.T) {
	for cmd := range stopReasons {
		pr, pw := io.Pipe()
		w := newWorld(t, b10xstandin.Config{Scenario: "hang"})
		done := make(chan *outcome, 1)
		// The stand-in hangs once it wrote its text; the command goes then.
		out := &watched{marker: `"event":"text"`, seen: make(chan struct{})}
		ready := out.seen
		go func() { done <- w.runWatched(t, spec(), pr, out) }()
		<-ready
		go func() {
			_, _ = io.WriteString(pw, `{"format":"metaharness.command/1","id":"c1","command":"`+cmd+`"}`+"\n")
		}()
		o := <-done
		_ = pw.Close()
		stoppedByItsOwnStop(t, cmd, o)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestAConfinedLoopReadsWhatTheLaunchNames: the caller's HOME is hidden
// from the confined loop, yet the files the launch names there reach it: a
// --subscription-token-file under ~/.codex (a credential directory the
// confinement otherwise covers) and a --hooks file.
func TestAConfinedLoopReadsWhatTheLaunchNames(t *testing.T) {
	w, s := confinedWorld(t, b10xstandin.Config{})
	token := filepath.Join(w.home, ".codex", "auth.json")
	hooks := filepath.Join(w.home, "hooks.json")
	for p, b := range map[string]string{token: "oauth-token-not-a-real-one\n", hooks: `{"version":1,"hooks":[]}`} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.KindFlags = &b10x.Flags{SubscriptionTokenFile: token, Hooks: hooks}
	o := w.run(t, s, nil)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", o.code, o.err, o.raw, o.stderr)
	}
	if _, ok := o.warnings()["CONFINEMENT_UNAVAILABLE"]; ok {
		t.Fatalf("the run was not confined: %v", o.warnings())
	}
	sum := sha256.Sum256([]byte("oauth-token-not-a-real-one"))
	if o.seen.Credential != "oauth:file" || o.seen.CredentialSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the loop read its token as %q (sha256 %s), want oauth:file with the file's bytes", o.seen.Credential, o.seen.CredentialSHA256)
	}
}
