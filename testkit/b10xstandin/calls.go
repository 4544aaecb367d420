package b10xstandin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/metaharness/metaharness/launcher/b10x"
)

// Call is one tool call the scripted model makes (Config.Calls).
type Call struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Result is what the model read back for one call: the tool's output, or
// the sentence the loop refuses a call with.
type Result struct {
	CallID string `json:"call_id"`
	Failed bool   `json:"failed"`
	Text   string `json:"text"`
}

// defaultTools are what the stand-in publishes unless its script says.
var defaultTools = []string{"file_read", "dir_list", "search", "find"}

// playCalls is the loop running the script's calls in turn 1 as its
// source does (H-loop run_calls, invoke): each call recorded, refused when
// it names no published tool or its arguments are over the loop's bound,
// else put to the before-call hooks, run when they let it, its outcome put
// to the after-call hooks; then the model answers with what it read, and
// the run ends unless a stop hook sends it back to work (at most three
// times). SIGINT cancels between calls: each call not yet run is recorded
// and refused, and the run stops cancelled.
func (r *runner) playCalls(h *hooks, published []string) int {
	model := r.a.get("model")
	r.print(Line(turnStarted{"turn-started", 1}))
	for _, c := range r.cfg.Calls {
		r.print(Line(argsDelta{"tool-arguments-delta", c.CallID, string(c.Arguments)}))
	}
	r.print(Line(usage{"usage", model, 42, 8, 7, nil}))
	for i, c := range r.cfg.Calls {
		if r.cancelled() {
			for _, rest := range r.cfg.Calls[i:] {
				r.print(Line(toolRequested{"tool-requested", rest.CallID, rest.Name, rest.Arguments, "", nil}))
				r.seen.Results = append(r.seen.Results, Result{CallID: rest.CallID, Failed: true, Text: "the run was cancelled before this call ran"})
				r.print(Line(toolCompleted{"tool-completed", rest.CallID, true}))
			}
			r.writeSeen()
			return r.cancel(1)
		}
		r.print(Line(toolRequested{"tool-requested", c.CallID, c.Name, c.Arguments, "", nil}))
		if i == 0 {
			r.forge(h, r.cfg.Forge)
		}
		res := r.invoke(h, c, published)
		r.seen.Results = append(r.seen.Results, res)
		r.print(Line(toolCompleted{"tool-completed", c.CallID, res.Failed}))
		if i == 0 {
			r.forge(h, r.cfg.ForgeLate)
		}
	}
	r.writeSeen()
	if r.cancelled() {
		return r.cancel(1)
	}
	if r.cfg.Hang {
		return r.hang()
	}
	var said []string
	for _, res := range r.seen.Results {
		said = append(said, res.CallID+": "+res.Text)
	}
	answer := "I made " + fmt.Sprint(len(r.cfg.Calls)) + " call(s). " + strings.Join(said, " | ")
	turn, continues := 2, 0
	for {
		r.print(Line(turnStarted{"turn-started", turn}))
		r.print(Line(textDelta{"text-delta", answer}))
		r.print(Line(usage{"usage", model, 61, 5, 42, nil}))
		stops := h.matching("stop", "")
		if len(stops) == 0 {
			break
		}
		doc, _ := json.Marshal(map[string]any{"hook": "stop", "text": answer, "workspace": h.workspace})
		s := h.decide(stops, doc)
		r.print(Line(hookRan{"hook-ran", "stop", "", hookDecision{s.kind, s.reason}}))
		if s.kind == "failed" {
			r.print(Line(warning{"warning", "hook-failed", "the stop hook could not decide, so the run ends: " + s.reason}))
			break
		}
		if s.kind == "proceed" {
			break
		}
		if continues >= maxStopContinues {
			r.print(Line(warning{"warning", "stop-hook-exhausted", fmt.Sprintf("the stop hook blocked the end of this run %d times and it ends anyway; its last reason: %s", maxStopContinues, s.reason)}))
			break
		}
		continues++
		turn++
	}
	r.print(finished{Stop: map[string]any{"kind": "completed"}, Turns: turn}.line())
	return 0
}

// invoke runs one call, or says why it did not run.
func (r *runner) invoke(h *hooks, c Call, published []string) Result {
	refused := func(text string) Result { return Result{CallID: c.CallID, Failed: true, Text: text} }
	name := "`" + c.Name + "`"
	if !slices.Contains(published, c.Name) {
		r.print(Line(warning{"warning", "unpublished-tool", fmt.Sprintf("the model called %s, which this run never published", name)}))
		return refused(name + " is not one of this run's tools; call only what was published")
	}
	var compact bytes.Buffer
	if json.Compact(&compact, c.Arguments) != nil || compact.Len() > b10x.MaxArguments {
		return refused(fmt.Sprintf("the arguments for %s are over the %d byte bound", name, b10x.MaxArguments))
	}
	call := map[string]any{"call_id": c.CallID, "name": c.Name, "arguments": c.Arguments}
	if befores := h.matching("before-call", c.Name); len(befores) > 0 {
		doc, _ := json.Marshal(map[string]any{"hook": "before-call", "call": call, "entry": c.Name, "workspace": h.workspace})
		var s spoken
		switch r.cfg.Disobey {
		case "ignore":
		case "pretend":
			r.print(Line(hookRan{"hook-ran", "before-call", c.CallID, hookDecision{Kind: "proceed"}}))
		default:
			s = h.decide(befores, doc)
			said := s
			if r.cfg.Disobey == "overrule" {
				said = spoken{kind: "proceed"}
			}
			r.print(Line(hookRan{"hook-ran", "before-call", c.CallID, hookDecision{said.kind, said.reason}}))
		}
		switch {
		case r.cfg.Disobey != "":
		case s.kind == "block":
			return refused(name + " was blocked by a hook: " + s.reason)
		case s.kind == "failed":
			return refused(name + " did not run because a hook could not check it: " + s.reason)
		}
	}
	out, failed := perform(h.workspace, c)
	res := Result{CallID: c.CallID, Failed: failed, Text: out}
	afters := h.matching("after-call", c.Name)
	if len(afters) == 0 {
		return res
	}
	doc, _ := json.Marshal(map[string]any{"hook": "after-call", "call": call, "entry": c.Name,
		"outcome": map[string]any{"output": out, "failed": failed}, "workspace": h.workspace})
	var notes []string
	decision := hookDecision{Kind: "proceed"}
	for _, d := range afters {
		s := h.speak(d, doc)
		switch {
		case s.kind == "proceed" && s.note != "":
			notes = append(notes, s.note)
		case s.kind != "proceed":
			notes = append(notes, s.reason)
		}
		if s.kind == "failed" && decision.Kind == "proceed" {
			decision = hookDecision{"failed", s.reason}
		}
	}
	r.print(Line(hookRan{"hook-ran", "after-call", c.CallID, decision}))
	if len(notes) > 0 {
		res.Text += " [hook_notes: " + strings.Join(notes, "\n") + "]"
	}
	return res
}

// forge puts forged calls to the before-call hooks, as an agent could,
// recording nothing of them on stdout.
func (r *runner) forge(h *hooks, forged []Call) {
	for _, c := range forged {
		call := map[string]any{"call_id": c.CallID, "name": c.Name, "arguments": c.Arguments}
		doc, _ := json.Marshal(map[string]any{"hook": "before-call", "call": call, "entry": c.Name, "workspace": h.workspace})
		s := h.decide(h.matching("before-call", c.Name), doc)
		r.seen.Forged = append(r.seen.Forged, Result{CallID: c.CallID, Failed: s.kind != "proceed", Text: s.kind + ": " + s.reason})
	}
}

// perform is the stand-in's tools, beneath the workspace: file_read reads
// a file, file_write writes one, dir_list lists a directory, run runs an
// argv there (failed when it exits other than 0); the others answer that
// they ran.
func perform(ws string, c Call) (string, bool) {
	var a struct {
		Path string   `json:"path"`
		Text string   `json:"text"`
		Argv []string `json:"argv"`
	}
	_ = json.Unmarshal(c.Arguments, &a)
	p := filepath.Join(ws, filepath.FromSlash(a.Path))
	switch c.Name {
	case "run":
		if len(a.Argv) == 0 {
			return "`run` takes an `argv`, a non-empty list of strings", true
		}
		cmd := exec.Command(a.Argv[0], a.Argv[1:]...)
		cmd.Dir = ws
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s(%v)", out, err), true
		}
		return string(out), false
	case "file_read":
		b, err := os.ReadFile(p)
		if err != nil {
			return "reading `" + a.Path + "`: " + osError(err), true
		}
		return string(b), false
	case "file_write":
		if err := os.WriteFile(p, []byte(a.Text), 0o644); err != nil {
			return "writing `" + a.Path + "`: " + osError(err), true
		}
		return fmt.Sprintf("wrote %d bytes to %s", len(a.Text), a.Path), false
	case "dir_list":
		es, err := os.ReadDir(p)
		if err != nil {
			return "listing `" + a.Path + "`: " + osError(err), true
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return strings.Join(names, "\n"), false
	}
	return c.Name + " ran", false
}

// hookTimeout is the script's, or the loop's.
func (c Config) hookTimeout() time.Duration {
	if c.HookTimeoutMS > 0 {
		return time.Duration(c.HookTimeoutMS) * time.Millisecond
	}
	return HookTimeout
}
