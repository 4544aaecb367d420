package b10x_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	_ "github.com/metaharness/metaharness/internal/earlyentry" // this test binary is the loop's hook, as metaharness is
	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/b10xstandin"
)

// reading is a sealed frame that admits file.read and nothing else.
const reading = `{"digest":"c5fd2c942736b87ca76f1db355b0aea7b118a31ad4c2ecda72f14d1be159c220","format":"metaharness.frame/1","handoff":{"handoff":"none"},"next":[],"node":{"id":"read-notes"},"obligations":[{"text":"change nothing"}],"operations":[{"op":"file.read"}],"prior":[],"reaching":[],"step":{"attempt":1,"index":1,"state":"read-notes","workflow":"release"},"subjects":[],"workflow":{"id":"release","version":"1"}}`

// frameReason is the frame's deny of file_write.
const frameReason = "file_write resolves to file.write, which the frame does not admit; the frame admits file.read"

var (
	readNotes  = b10xstandin.Call{CallID: "call_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"notes.md"}`)}
	writePwned = b10xstandin.Call{CallID: "call_2", Name: "file_write", Arguments: json.RawMessage(`{"path":"pwned","text":"x"}`)}
)

// readAndWrite is a model that reads notes.md, then writes pwned.
func readAndWrite() b10xstandin.Config {
	return b10xstandin.Config{Calls: []b10xstandin.Call{readNotes, writePwned}, Publish: []string{"file_read", "file_write"}}
}

// command is one command line, for an embedder's answer.
func command(id, name, fields string) string {
	return fmt.Sprintf(`{"format":"metaharness.command/1","id":%q,"command":%q%s}`, id, name, fields)
}

// hookedRun runs script on a confined loop in a workspace holding
// notes.md, under mode; with withFrame the frame is reading. answer, when
// set, is the embedder: the command lines it sends, in order, for each
// call waiting at its seam.
func hookedRun(t *testing.T, script b10xstandin.Config, mode frame.Mode, withFrame bool, flags *b10x.Flags, answer func(callID string) []string) (*outcome, string) {
	t.Helper()
	w, s := confinedWorld(t, script)
	ws := s.Cwd
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("the release is on Friday\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Decisions = mode
	if withFrame {
		s.Frame = filepath.Join(t.TempDir(), "reading.json")
		if err := os.WriteFile(s.Frame, []byte(reading), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if flags != nil {
		s.KindFlags = flags
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	out := &watched{}
	out.each = func(line []byte) {
		var ev struct {
			Event            string `json:"event"`
			CallID           string `json:"call_id"`
			DecisionRequired bool   `json:"decision_required"`
		}
		if answer == nil || json.Unmarshal(line, &ev) != nil || ev.Event != "tool.requested" || !ev.DecisionRequired {
			return
		}
		var cmds string
		for _, c := range answer(ev.CallID) {
			cmds += c + "\n"
		}
		go func() { _, _ = io.WriteString(pw, cmds) }() // in order; never under the writer's lock

	}
	return w.runWatched(t, s, pr, out), ws
}

// count is how many events named name concern call id.
func (o *outcome) count(name, id string) int {
	n := 0
	for _, l := range o.lines {
		if l.Name() != name {
			continue
		}
		switch ev := l.Event.(type) {
		case *record.ToolRequested:
			n += b2i(ev.CallID == id)
		case *record.ToolDecided:
			n += b2i(ev.CallID == id)
		}
	}
	return n
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (o *outcome) decided(t *testing.T, id string) *record.ToolDecided {
	t.Helper()
	for _, l := range o.lines {
		if d, ok := l.Event.(*record.ToolDecided); ok && d.CallID == id {
			return d
		}
	}
	t.Fatalf("no tool.decided for %s in\n%s", id, o.raw)
	return nil
}

// hookWarnings are the hook check's warnings in o, in order.
func (o *outcome) hookWarnings() []*record.Warning {
	var out []*record.Warning
	for _, l := range o.lines {
		if w, ok := l.Event.(*record.Warning); ok && slices.Contains([]string{attest.DecisionNotOnRecord, attest.HookSkipped, attest.HookOverruled, attest.DecisionForged}, w.Code) {
			out = append(out, w)
		}
	}
	return out
}

// hookCodes are the codes of o's hookWarnings.
func (o *outcome) hookCodes() []string {
	var out []string
	for _, w := range o.hookWarnings() {
		out = append(out, w.Code)
	}
	return out
}

func TestFrameDecidesTheLoopsCallsAtItsHook(t *testing.T) {
	o, ws := hookedRun(t, readAndWrite(), frame.ModeFrame, true, nil, nil)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", o.code, o.err, o.raw, o.stderr)
	}
	// The hook the confined loop starts reaches the decision channel.
	if _, ok := o.warnings()["CONFINEMENT_UNAVAILABLE"]; ok {
		t.Fatalf("the run was not confined: %v", o.warnings())
	}
	for _, id := range []string{"call_1", "call_2"} {
		if o.count("tool.requested", id) != 1 || o.count("tool.decided", id) != 1 {
			t.Errorf("%s: %d tool.requested and %d tool.decided, want one each\n%s", id, o.count("tool.requested", id), o.count("tool.decided", id), o.raw)
		}
	}
	if d := o.decided(t, "call_1"); d.Decision.Decision != record.Allow || d.DecidedBy != frame.ByFrame || d.Seam != record.SeamHook {
		t.Errorf("call_1: %+v", d)
	}
	if d := o.decided(t, "call_2"); d.Decision.Decision != record.Deny || d.Decision.Reason != frameReason || d.Seam != record.SeamHook {
		t.Errorf("call_2: %+v", d)
	}
	// The decision reached the model as the loop words a block, and the
	// write did not happen.
	if len(o.seen.Results) != 2 || o.seen.Results[0].Text != "the release is on Friday\n" ||
		o.seen.Results[1].Text != "`file_write` was blocked by a hook: "+frameReason || !o.seen.Results[1].Failed {
		t.Errorf("the model read %+v", o.seen.Results)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Error("the denied write ran")
	}
	// metaharness's own block is its tool.decided, not a hook-refused too;
	// nothing was skipped or overruled.
	if _, ok := o.warnings()["hook-refused"]; ok || len(o.hookCodes()) > 0 {
		t.Errorf("warnings %v", o.warnings())
	}
	st := o.find(t, "session.started").(*record.SessionStarted)
	h8 := ""
	for _, r := range st.Hermetic.Imposed {
		if r.Row == attest.H8.String() {
			h8 = r.How
		}
	}
	if !strings.Contains(h8, "which metaharness wrote, declares its own hook (internal-b10x-hook) first at before-call for every tool") {
		t.Errorf("h8: %q", h8)
	}
	if i := slices.Index(o.seen.Argv, "--hooks"); i < 0 || !strings.HasSuffix(o.seen.Argv[i+1], "/hooks.json") {
		t.Errorf("argv %q", o.seen.Argv)
	}
}

func TestAskPutsEachCallToTheEmbedder(t *testing.T) {
	answer := func(id string) []string {
		decide := func(n int, d string) string {
			return command(fmt.Sprintf("c%d", n), "tool.decide", fmt.Sprintf(`,"call_id":%q,"decision":%s`, id, d))
		}
		if id == "call_1" {
			return []string{decide(1, `{"decision":"allow"}`)}
		}
		// The hook takes no new input: the replace is refused and the call
		// stays pending, and the deny that follows decides it.
		return []string{decide(2, `{"decision":"replace","input":{"path":"elsewhere","text":"x"}}`), decide(3, `{"decision":"deny","reason":"no writes in this step"}`)}
	}
	o, ws := hookedRun(t, readAndWrite(), frame.ModeAsk, false, nil, answer)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", o.code, o.err, o.raw, o.stderr)
	}
	req := o.find(t, "tool.requested").(*record.ToolRequested)
	if !req.DecisionRequired || req.DeadlineMS == nil || *req.DeadlineMS != 55000 || req.Seam != record.SeamHook {
		t.Errorf("tool.requested %+v", req)
	}
	if d := o.decided(t, "call_1"); d.Decision.Decision != record.Allow || d.DecidedBy != frame.ByEmbedder {
		t.Errorf("call_1: %+v", d)
	}
	if d := o.decided(t, "call_2"); d.Decision.Decision != record.Deny || d.Decision.Reason != "no writes in this step" || d.DecidedBy != frame.ByEmbedder {
		t.Errorf("call_2: %+v", d)
	}
	var refused []string
	for _, l := range o.lines {
		if r, ok := l.Event.(*record.CommandResult); ok && r.Outcome.Refused != nil {
			refused = append(refused, r.Outcome.Refused.Code)
		}
	}
	if !slices.Equal(refused, []string{record.UnsupportedControl}) {
		t.Errorf("refused commands %v, want the replace refused UNSUPPORTED_CONTROL", refused)
	}
	if len(o.seen.Results) != 2 || o.seen.Results[1].Text != "`file_write` was blocked by a hook: no writes in this step" {
		t.Errorf("the model read %+v", o.seen.Results)
	}
	for _, p := range []string{"pwned", "elsewhere"} {
		if _, err := os.Stat(filepath.Join(ws, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

func TestTheCallersHooksRunBehindMetaharnesss(t *testing.T) {
	dir := t.TempDir()
	callers := filepath.Join(dir, "hooks.json")
	doc := `{"version":1,"hooks":[
		{"on":"before-call","tools":["file_write"],"command":["/bin/sh","-c","printf '{\"reason\": \"the caller keeps writes closed\"}'; exit 2"]},
		{"on":"after-call","command":["/bin/sh","-c","printf '{\"note\": \"the caller looked\"}'"]}]}`
	if err := os.WriteFile(callers, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// frame mode without a frame: metaharness abstains on every call, so
	// the caller's hooks behind it have their say.
	o, ws := hookedRun(t, readAndWrite(), frame.ModeFrame, false, &b10x.Flags{Hooks: callers}, nil)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", o.code, o.err, o.raw, o.stderr)
	}
	for _, id := range []string{"call_1", "call_2"} {
		if d := o.decided(t, id); d.Decision.Decision != record.Abstain {
			t.Errorf("%s: %+v", id, d)
		}
	}
	if got := o.warnings()["hook-refused"]; got != "the caller keeps writes closed" {
		t.Errorf("the caller's block is a hook-refused warning: %q", got)
	}
	if len(o.seen.Results) != 2 || o.seen.Results[0].Text != "the release is on Friday\n [hook_notes: the caller looked]" ||
		o.seen.Results[1].Text != "`file_write` was blocked by a hook: the caller keeps writes closed" {
		t.Errorf("the model read %+v", o.seen.Results)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
		t.Error("the write the caller's hook blocked ran")
	}
	if len(o.hookCodes()) > 0 {
		t.Errorf("warnings %v", o.warnings())
	}
}

func TestALoopThatSkipsOrOverrulesTheHookIsAGap(t *testing.T) {
	damage := b10xstandin.Call{CallID: "call_3", Name: "run", Arguments: json.RawMessage(`{"argv":["/bin/sh","-c","echo done > harm; exit 3"]}`)}
	for _, c := range []struct {
		name   string
		script b10xstandin.Config
		codes  []string
		says   string // the first gap's message holds it
		ran    string // the file the disobedient loop's call wrote
	}{
		// A loop that ran its call without asking any hook (the scripted
		// golden record, whatever the hooks file says).
		{"skipped, completed", b10xstandin.Config{}, []string{attest.HookSkipped},
			"the loop ran call call_b10x_001 (it completed, not failed) without metaharness's before-call hook answering for it", ""},
		// One that never asked, ran a command that did its damage and
		// failed: a failed call is no excuse unless the record shows what
		// refused it before its hook.
		{"skipped, failed", b10xstandin.Config{Calls: []b10xstandin.Call{damage}, Publish: []string{"run"}, Disobey: "ignore"}, []string{attest.HookSkipped},
			"call call_3 ended failed without metaharness's before-call hook answering for it, and the loop's record shows nothing that refused it before its hook", "harm"},
		// One that never asked, while a forgery with the call's id, name and
		// arguments took its answer: an answer with no hook-ran line.
		{"skipped, a forgery answered", b10xstandin.Config{Calls: []b10xstandin.Call{readNotes}, Forge: []b10xstandin.Call{readNotes}, Disobey: "ignore"}, []string{attest.HookSkipped},
			"metaharness answered a request for call call_1 (allow), and the loop's record shows no before-call hook-ran line for it", ""},
		// One that records its hooks as proceeding and never asked them.
		{"pretended", withDisobedience(readAndWrite(), "pretend"), []string{attest.HookSkipped, attest.HookSkipped},
			"the loop's record says its before-call hooks let call call_1 proceed, and metaharness's hook was never asked about it", "pwned"},
		// One that asked, was told no, recorded proceed and ran the call.
		{"overruled, recorded proceed", withDisobedience(readAndWrite(), "overrule"), []string{attest.HookOverruled},
			"metaharness denied call call_2 at the loop's before-call hook (" + frameReason + "), and the loop's record says its hooks let it proceed", "pwned"},
		// One that asked, was told no, recorded the block and ran the call.
		{"overruled, recorded block", withDisobedience(readAndWrite(), "run-blocked"), []string{attest.HookOverruled},
			"the loop ran call call_2 (it completed, not failed) though metaharness denied it at the before-call hook (" + frameReason + ")", "pwned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, ws := hookedRun(t, c.script, frame.ModeFrame, true, nil, nil)
			if got := o.hookCodes(); !slices.Equal(got, c.codes) || !strings.Contains(o.hookWarnings()[0].Message, c.says) {
				t.Fatalf("codes %v, warnings %v\n%s", got, o.warnings(), o.raw)
			}
			if c.ran != "" {
				if _, err := os.Stat(filepath.Join(ws, c.ran)); err != nil {
					t.Errorf("the disobedient loop was to have run its call: %v", err)
				}
			}
			// A block carrying metaharness's reason is its tool.decided, never
			// a hook-refused beside it.
			if _, ok := o.warnings()["hook-refused"]; ok {
				t.Errorf("warnings %v", o.warnings())
			}
		})
	}
}

func withDisobedience(c b10xstandin.Config, how string) b10xstandin.Config {
	c.Disobey = how
	return c
}

// TestAFailedCallIsAGapUnlessTheRecordShowsWhatRefusedIt holds scripted
// records to the loop's order (docs/b10x-hooks.md): a call that ended
// failed with no answer from metaharness's hook is a gap unless the record
// shows what refused it before its hook (an unpublished-tool warning, the
// approver's denial, arguments over the loop's bound, a hook-ran that
// blocked or failed, or a run that stopped cancelled or past its deadline
// right after refusing it), judged on the line after it.
func TestAFailedCallIsAGapUnlessTheRecordShowsWhatRefusedIt(t *testing.T) {
	requested := func(id string, args string) string {
		return `{"kind":"tool-requested","call_id":"` + id + `","name":"file_write","arguments":` + args + `}`
	}
	failed := func(id string) string { return `{"kind":"tool-completed","call_id":"` + id + `","failed":true}` }
	small := `{"path":"pwned","text":"x"}`
	big, _ := json.Marshal(map[string]string{"path": "pwned", "text": strings.Repeat("x", b10x.MaxArguments)})
	const (
		turn2     = `{"kind":"turn-started","turn":2}`
		completed = `{"kind":"finished","stop":{"kind":"completed"},"turns":2}`
		cancelled = `{"kind":"finished","stop":{"kind":"cancelled","reason":"the caller cancelled"},"turns":1}`
		deadline  = `{"kind":"finished","stop":{"kind":"deadline","limit_ms":1000},"turns":1}`
	)
	for _, c := range []struct {
		name  string
		lines []string
		gap   bool
	}{
		{"nothing refused it", []string{requested("c1", small), failed("c1"), turn2, completed}, true},
		{"nothing refused it, and the run completed next", []string{requested("c1", small), failed("c1"), completed}, true},
		{"nothing refused it, and the record ended", []string{requested("c1", small), failed("c1")}, true},
		{"nothing refused it, and the run went on before it was cancelled", []string{requested("c1", small), failed("c1"), turn2, cancelled}, true},
		{"unpublished", []string{requested("c1", small), `{"kind":"warning","code":"unpublished-tool","message":"the model called ` + "`file_write`" + `, which this run never published"}`, failed("c1"), turn2, completed}, false},
		{"the approver said no", []string{requested("c1", small), `{"kind":"approval-required","call_id":"c1","name":"file_write"}`, `{"kind":"approval-resolved","call_id":"c1","approved":false}`, failed("c1"), turn2, completed}, false},
		{"over the argument bound", []string{requested("c1", string(big)), failed("c1"), turn2, completed}, false},
		{"a hook failed", []string{requested("c1", small), `{"kind":"hook-ran","point":"before-call","call_id":"c1","decision":{"kind":"failed","reason":"the hook could not start"}}`, failed("c1"), turn2, completed}, false},
		{"cancelled between calls", []string{requested("c1", small), failed("c1"), requested("c2", small), failed("c2"), cancelled}, false},
		{"past the deadline", []string{requested("c1", small), failed("c1"), deadline}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, _ := hookedRun(t, b10xstandin.Config{Lines: c.lines}, frame.ModeFrame, true, nil, nil)
			codes := o.hookCodes()
			if c.gap != (len(codes) > 0) || (c.gap && (!slices.Equal(codes, []string{attest.HookSkipped}) ||
				!strings.Contains(o.hookWarnings()[0].Message, "call c1 ended failed without metaharness's before-call hook answering for it"))) {
				t.Errorf("gap %v, codes %v\n%s", c.gap, codes, o.raw)
			}
			if o.count("tool.decided", "c1") != 0 {
				t.Errorf("a call the hook never presented was decided\n%s", o.raw)
			}
		})
	}
}

func TestARequestForACallTheRecordDoesNotShowIsDenied(t *testing.T) {
	script := readAndWrite()
	script.Forge = []b10xstandin.Call{
		{CallID: "call_9", Name: "file_write", Arguments: json.RawMessage(`{"path":"pwned","text":"x"}`)},
		{CallID: "call_1", Name: "file_read", Arguments: json.RawMessage(`{"path":"/etc/shadow"}`)},
	}
	// After the loop's own hook took call_1's one answer: the same id,
	// name and arguments again.
	script.ForgeLate = []b10xstandin.Call{readNotes}
	o, _ := hookedRun(t, script, frame.ModeFrame, true, nil, nil)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s", o.code, o.err, o.stderr)
	}
	if len(o.seen.Forged) != 3 ||
		!strings.HasPrefix(o.seen.Forged[0].Text, "block: metaharness denied this request, and nothing ran: the loop's record shows no call call_9") ||
		!strings.HasPrefix(o.seen.Forged[1].Text, "block: metaharness denied this request, and nothing ran: it is not the loop's call call_1 (file_read) as its record shows it") ||
		o.seen.Forged[2].Text != "block: metaharness denied this request, and nothing ran: call call_1 was decided already (the loop's record shows it 1 time(s))" {
		t.Errorf("the forged calls got %+v", o.seen.Forged)
	}
	if got := o.hookCodes(); !slices.Equal(got, []string{attest.DecisionNotOnRecord, attest.DecisionNotOnRecord, attest.DecisionNotOnRecord}) {
		t.Errorf("codes %v", got)
	}
	// The real call is still decided, once, and ran.
	if d := o.decided(t, "call_1"); d.Decision.Decision != record.Allow || o.count("tool.decided", "call_1") != 1 || o.count("tool.decided", "call_9") != 0 {
		t.Errorf("call_1 %+v\n%s", d, o.raw)
	}
	if o.seen.Results[0].Text != "the release is on Friday\n" {
		t.Errorf("the model read %+v", o.seen.Results)
	}
	// Counted apart from the decisions, as census.not_on_wire is.
	if end := o.find(t, "session.ended").(*record.SessionEnded); end.Census == nil || end.Census.NotOnRecord != 3 || end.Census.Allowed != 1 || end.Census.Denied != 1 {
		t.Errorf("census %+v", end.Census)
	}
}

// TestAForgedRequestThatComesFirstTakesTheAnswerAndTheCallFailsClosed: the
// loop hands its hook nothing a program it did not start could not know
// (docs/b10x-hooks.md), so a forged request with the call's own id, name
// and arguments that comes before the loop's hook takes the call's one
// answer. The loop's hook is then denied, so the call does not run (fail
// closed), and the record says which request was the forgery: the loop's
// hook-ran line carries the deny metaharness gave the second request.
func TestAForgedRequestThatComesFirstTakesTheAnswerAndTheCallFailsClosed(t *testing.T) {
	script := readAndWrite()
	script.Forge = []b10xstandin.Call{readNotes}
	o, _ := hookedRun(t, script, frame.ModeFrame, true, nil, nil)
	if o.code != exit.OK || o.err != nil {
		t.Fatalf("exit %d, %v\n%s", o.code, o.err, o.stderr)
	}
	const decidedAlready = "metaharness denied this request, and nothing ran: call call_1 was decided already (the loop's record shows it 1 time(s))"
	if len(o.seen.Forged) != 1 || o.seen.Forged[0].Text != "proceed: " || len(o.seen.Results) != 2 ||
		o.seen.Results[0].Text != "`file_read` was blocked by a hook: "+decidedAlready {
		t.Errorf("the forgery got %+v, the model read %+v", o.seen.Forged, o.seen.Results)
	}
	if d := o.decided(t, "call_1"); d.Decision.Decision != record.Allow || o.count("tool.decided", "call_1") != 1 {
		t.Errorf("call_1 %+v", d)
	}
	w := o.hookWarnings()
	if got := o.hookCodes(); !slices.Equal(got, []string{attest.DecisionNotOnRecord, attest.DecisionForged}) ||
		w[1].Message != "the request that took call call_1's one answer (allow, its tool.decided) was not the loop's before-call hook: the loop's hook asked after it and was denied at once, as its hook-ran line shows, so the call did not run; the first request was a forgery with the call's id, name and arguments" {
		t.Errorf("codes %v, warnings %v", got, w)
	}
	// The loop's block carries metaharness's own reason: no hook-refused.
	if _, ok := o.warnings()["hook-refused"]; ok {
		t.Errorf("warnings %v", o.warnings())
	}
}

func TestACallersHooksFileTheLoopCannotReadIsRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(bad, []byte(`{"version":1,"hooks":[{"on":"stop","tools":["run"],"command":["x"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o, _ := hookedRun(t, readAndWrite(), frame.ModeFrame, true, &b10x.Flags{Hooks: bad}, nil)
	var r *exit.Refusal
	if o.code != exit.Refused || !errors.As(o.err, &r) || r.Name != b10x.RefuseHooksFileInvalid ||
		!strings.Contains(r.Message, "hook 1 is a stop hook and declares tools") {
		t.Fatalf("exit %d, %v", o.code, o.err)
	}
	if o.seen.Argv != nil {
		t.Error("the loop was started")
	}
}

// TestInterruptAndHaltDenyTheCallWaitingAtTheHook: the loop takes no
// control line, so both stop it with SIGINT, its own stop, after the call
// waiting at the hook is denied: the hook's block reaches the loop (the
// model reads it), nothing ran, and the loop ends with its own cancelled
// stop between calls.
func TestInterruptAndHaltDenyTheCallWaitingAtTheHook(t *testing.T) {
	// A model that never answers after its call: the loop is stopped, it
	// does not end by itself.
	script := b10xstandin.Config{Calls: []b10xstandin.Call{writePwned}, Publish: []string{"file_write"}, Hang: true}
	for cmd := range stopReasons {
		o, ws := hookedRun(t, script, frame.ModeAsk, false, nil, func(string) []string { return []string{command("c1", cmd, "")} })
		stoppedByItsOwnStop(t, cmd, o)
		d := o.decided(t, "call_2")
		if d.Decision.Decision != record.Deny || d.DecidedBy != frame.ByAdapter {
			t.Errorf("%s: %+v", cmd, d)
		}
		if len(o.seen.Results) != 1 || o.seen.Results[0].Text != "`file_write` was blocked by a hook: "+d.Decision.Reason {
			t.Errorf("%s: the model read %+v", cmd, o.seen.Results)
		}
		if _, err := os.Stat(filepath.Join(ws, "pwned")); err == nil {
			t.Errorf("%s: the write ran", cmd)
		}
		if len(o.hookCodes()) > 0 {
			t.Errorf("%s: warnings %v", cmd, o.warnings())
		}
	}
}
