package b10xstandin

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The records a scenario prints after started, each a struct in the loop's
// field order (see records.go).
type (
	turnStarted struct {
		Kind string `json:"kind"`
		Turn int    `json:"turn"`
	}
	textDelta struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	argsDelta struct {
		Kind   string `json:"kind"`
		CallID string `json:"call_id"`
		Delta  string `json:"delta"`
	}
	usage struct {
		Kind          string `json:"kind"`
		Model         string `json:"model"`
		Input         int    `json:"input_tokens"`
		Output        int    `json:"output_tokens"`
		Cached        int    `json:"cached_input_tokens"`
		CacheCreation *int   `json:"cache_creation_input_tokens,omitempty"`
	}
	cost struct {
		Kind     string `json:"kind"`
		Model    string `json:"model"`
		MicroUSD int    `json:"micro_usd"`
	}
	rates struct {
		Kind   string `json:"kind"`
		Source string `json:"source"`
		AsOf   string `json:"as_of"`
	}
	toolRequested struct {
		Kind      string          `json:"kind"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Operation string          `json:"operation,omitempty"`
		Subjects  []string        `json:"subjects,omitempty"`
	}
	toolCompleted struct {
		Kind   string `json:"kind"`
		CallID string `json:"call_id"`
		Failed bool   `json:"failed"`
	}
	approvalRequired struct {
		Kind   string `json:"kind"`
		CallID string `json:"call_id"`
		Name   string `json:"name"`
	}
	approvalResolved struct {
		Kind     string `json:"kind"`
		CallID   string `json:"call_id"`
		Approved bool   `json:"approved"`
	}
	hookRan struct {
		Kind     string       `json:"kind"`
		Point    string       `json:"point"`
		CallID   string       `json:"call_id,omitempty"`
		Decision hookDecision `json:"decision"`
	}
	hookDecision struct {
		Kind   string `json:"kind"`
		Reason string `json:"reason,omitempty"`
	}
	warning struct {
		Kind    string `json:"kind"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	finished struct {
		Kind  string         `json:"kind"`
		Stop  map[string]any `json:"stop"`
		Turns int            `json:"turns"`
	}
)

// stopJSON writes stop with "kind" first and the stop's fields after it
// in name order, as the loop's tagged enum does for the stops it has.
func (f finished) stopJSON() json.RawMessage {
	keys := make([]string, 0, len(f.Stop))
	for k := range f.Stop {
		if k != "kind" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(`{"kind":` + string(Line(f.Stop["kind"])))
	for _, k := range keys {
		b.WriteString(`,"` + k + `":` + string(Line(f.Stop[k])))
	}
	b.WriteString("}")
	return json.RawMessage(b.String())
}

func (f finished) line() []byte {
	return Line(struct {
		Kind  string          `json:"kind"`
		Stop  json.RawMessage `json:"stop"`
		Turns int             `json:"turns"`
	}{"finished", f.stopJSON(), f.Turns})
}

// step is one thing a scenario does: print a record, or wait for a signal.
type step struct {
	line []byte
	hang bool
}

// ending is how a scenario's run ends: its exit status and what the CLI
// writes on stderr.
type ending struct {
	status int
	stderr string
}

// play is what a scenario prints after started, and how it ends.
type play struct {
	steps []step
	end   ending
}

// Scenarios names every scenario the stand-in plays. Stops other than
// "completed" are played as stop:<kind> (stop:max-turns, stop:cancelled, …).
var Scenarios = []string{
	"golden", "approval-denied", "approval-granted", "unpublished-tool", "program-refused",
	"hook-block", "hook-failed", "hook-proceed", "wire-refused", "unknown-kinds", "hang",
	"stop:max-turns", "stop:max-input-tokens", "stop:max-output-tokens", "stop:max-cost", "stop:deadline",
	"stop:cancelled", "stop:provider-incomplete", "stop:unstructured",
}

// played builds a scenario for model, with a cost after each usage when a
// rate card was given (priced).
func played(name, model string, maxTurns int, priced bool) (play, error) {
	var p play
	add := func(v any) { p.steps = append(p.steps, step{line: Line(v)}) }
	use := func(in, out, cached, micro int) {
		add(usage{"usage", model, in, out, cached, nil})
		if priced {
			add(cost{"cost", model, micro})
		}
	}
	finish := func(turns int) {
		p.steps = append(p.steps, step{line: finished{Stop: map[string]any{"kind": "completed"}, Turns: turns}.line()})
	}
	// call is one tool call in turn 1, answered and closed by between.
	call := func(id, name, args string, subjects []string, between func()) {
		add(turnStarted{"turn-started", 1})
		add(argsDelta{"tool-arguments-delta", id, args})
		use(42, 8, 7, 14879)
		add(toolRequested{"tool-requested", id, name, json.RawMessage(args), "", subjects})
		between()
	}
	answer := func(text ...string) {
		add(turnStarted{"turn-started", 2})
		for _, t := range text {
			add(textDelta{"text-delta", t})
		}
		use(61, 5, 42, 2602)
		finish(2)
	}
	const id = "call_b10x_001"
	switch {
	case name == "golden":
		call(id, "file_read", `{"path":"README.md"}`, []string{"file:README.md"}, func() { add(toolCompleted{"tool-completed", id, false}) })
		answer("I read README.md:", " hello harness")
	case name == "approval-denied" || name == "approval-granted":
		ok := name == "approval-granted"
		call(id, "file_write", `{"path":"notes.md","text":"hi"}`, []string{"file:notes.md"}, func() {
			add(approvalRequired{"approval-required", id, "file_write"})
			add(approvalResolved{"approval-resolved", id, ok})
			add(toolCompleted{"tool-completed", id, !ok})
		})
		answer("The write was handled.")
	case name == "unpublished-tool":
		call(id, "shell.exec", `{"command":"ls"}`, nil, func() {
			add(warning{"warning", "unpublished-tool", "the model called `shell.exec`, which this run never published"})
			add(toolCompleted{"tool-completed", id, true})
		})
		answer("That tool is not here.")
	case name == "program-refused":
		call(id, "run", `{"argv":["sh","-c","ls"]}`, []string{"proc:sh"}, func() {
			add(warning{"warning", "program-refused", "`sh` is not a program this run may start. Declared: cargo."})
			add(toolCompleted{"tool-completed", id, true})
		})
		answer("sh is not declared.")
	case name == "hook-block" || name == "hook-failed" || name == "hook-proceed":
		d := map[string]hookDecision{
			"hook-block":   {"block", "the hook keeps README.md closed"},
			"hook-failed":  {"failed", "the hook program exited 127"},
			"hook-proceed": {"proceed", ""},
		}[name]
		call(id, "file_read", `{"path":"README.md"}`, []string{"file:README.md"}, func() {
			add(hookRan{"hook-ran", "before-call", id, d})
			add(toolCompleted{"tool-completed", id, d.Kind == "block"})
		})
		answer("The hook had its say.")
	case name == "wire-refused":
		add(turnStarted{"turn-started", 1})
		p.end = ending{1, "error: model wire refused: 400 Bad Request: the provider refused the request\n"}
	case name == "unknown-kinds":
		add(turnStarted{"turn-started", 1})
		add(textDelta{"reasoning-delta", "thinking it over"})
		add(struct {
			Kind    string `json:"kind"`
			Turn    int    `json:"turn"`
			Attempt int    `json:"attempt"`
			Reason  string `json:"reason"`
		}{"turn-retried", 1, 1, "the stream broke"})
		add(struct {
			Kind            string `json:"kind"`
			ElidedResults   int    `json:"elided_results"`
			ElidedBytes     int    `json:"elided_bytes"`
			SummarisedItems int    `json:"summarised_items"`
			BytesBefore     int    `json:"bytes_before"`
			BytesAfter      int    `json:"bytes_after"`
			SummaryTurn     bool   `json:"summary_turn"`
		}{"compacted", 2, 4096, 0, 9000, 4904, false})
		add(struct {
			Kind   string `json:"kind"`
			CallID string `json:"call_id"`
			Task   string `json:"task"`
		}{"delegate-started", "call_b10x_002", "look around"})
		add(struct {
			Kind   string         `json:"kind"`
			CallID string         `json:"call_id"`
			Stop   map[string]any `json:"stop"`
			Turns  int            `json:"turns"`
		}{"delegate-finished", "call_b10x_002", map[string]any{"kind": "completed"}, 1})
		add(struct {
			Kind   string          `json:"kind"`
			CallID string          `json:"call_id"`
			Value  json.RawMessage `json:"value"`
		}{"answered", "call_b10x_003", json.RawMessage(`{"answer":42}`)})
		add(struct {
			Kind string `json:"kind"`
			Note string `json:"note"`
		}{"inventory-changed", "a kind this reader has never seen"})
		use(30, 3, 0, 900)
		finish(1)
	case name == "hang":
		add(turnStarted{"turn-started", 1})
		add(textDelta{"text-delta", "working"})
		p.steps = append(p.steps, step{hang: true})
	case strings.HasPrefix(name, "stop:"):
		kind := strings.TrimPrefix(name, "stop:")
		fields, ok := stopFields(kind, maxTurns)
		if !ok {
			return play{}, fmt.Errorf("no stop %q", kind)
		}
		add(turnStarted{"turn-started", 1})
		add(textDelta{"text-delta", "stopping"})
		use(42, 8, 7, 14879)
		f := finished{Stop: fields, Turns: 1}
		p.steps = append(p.steps, step{line: f.line()})
		p.end = ending{2, "the run stopped without an answer: " + debugStop(f.Stop) + "\n"}
	default:
		return play{}, fmt.Errorf("no scenario %q; the stand-in plays %s", name, strings.Join(Scenarios, ", "))
	}
	return p, nil
}

// stopFields is each LoopStop the loop has, with example values.
func stopFields(kind string, maxTurns int) (map[string]any, bool) {
	if maxTurns == 0 {
		maxTurns = 1
	}
	m := map[string]map[string]any{
		"max-turns":           {"limit": maxTurns},
		"max-input-tokens":    {"limit": 1000, "reported": 1042},
		"max-output-tokens":   {"limit": 100, "reported": 108},
		"max-cost":            {"limit_micro_usd": 10000, "spent_micro_usd": 14879},
		"deadline":            {"limit_ms": 60000},
		"cancelled":           {"reason": "the caller cancelled"},
		"provider-incomplete": {"reason": "the provider ended the response early"},
		"unstructured":        {"asked_again": true},
	}[kind]
	if m == nil {
		return nil, false
	}
	m["kind"] = kind
	return m, true
}

// debugStop renders a stop as Rust's Debug of LoopStop would, roughly:
// MaxTurns { limit: 1 }.
func debugStop(stop map[string]any) string {
	var name strings.Builder
	for _, w := range strings.Split(stop["kind"].(string), "-") {
		name.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	var fields []string
	for k, v := range stop {
		if k == "kind" {
			continue
		}
		s := fmt.Sprint(v)
		if str, ok := v.(string); ok {
			s = strconv.Quote(str)
		}
		fields = append(fields, k+": "+s)
	}
	sort.Strings(fields)
	if len(fields) == 0 {
		return name.String()
	}
	return name.String() + " { " + strings.Join(fields, ", ") + " }"
}
