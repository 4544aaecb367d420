package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sp(s string) *string { return &s }

// nullRaw reads a raw JSON null the same as an absent raw value: both are
// written as null.
var nullRaw = cmp.Transformer("nullRaw", func(r json.RawMessage) json.RawMessage {
	if string(r) == "null" {
		return nil
	}
	return r
})

func up(u uint64) *uint64 { return &u }

// samples holds one fully populated payload per event name.
func samples() map[string]Event {
	one := uint64(1)
	return map[string]Event{
		"session.started": &SessionStarted{
			Adapter: "claude", AdapterClass: "harness", HarnessVersion: sp("2.1.328"),
			SessionID: sp("s1"), Model: sp("m"), PermissionMode: sp("dontAsk"),
			CredentialSource: sp("none"), OutputStyle: sp("default"), Cwd: sp("/scratch/work"),
			OfferedTools: []string{"mcp__metaharness__read_file"}, AvailableOperations: []string{"file.read"},
			Withheld: []Withheld{}, SlashCommands: []string{}, Skills: nil, Agents: []string{"a"},
			Plugins:      []Plugin{{Name: "p", Source: sp("dir"), Version: nil}},
			MCPServers:   []MCPServer{{Name: "metaharness", Status: sp("connected")}},
			InputsDigest: nil, Transcript: &TranscriptRef{Path: "/t.jsonl"},
			Hermetic: &Attestation{Mode: "strict", Decisions: "frame",
				Imposed: []RowHow{{Row: "h2", How: `--setting-sources ""`}}, Unavailable: []RowWhy{},
				Declared: []RowWhat{}, AmbientInputs: []string{}, InstalledPlugins: []InstalledPlugin{}},
			ContextFiles: []ContextFile{{Path: "a.md", SHA256: "00", Bytes: 3, Channel: "append-system-prompt"}},
		},
		"session.ended": &SessionEnded{
			FinalAnswer: &FinalAnswer{Text: "done"}, ObservedModels: []ObservedModel{{Turn: 1, Model: "m", Scope: "turn_selection"}},
			IsError: new(bool), Subtype: sp("success"), NumTurns: &one, TotalCostUSD: new(float64),
			PermissionDenials: json.RawMessage(`[]`), Usage: &Usage{InputTokens: up(3)},
			ModelUsage: map[string]Usage{"m": {OutputTokens: up(4)}},
			Census:     &Census{Allowed: 1, BySeam: map[string]uint64{"owned_tool": 1}, ByDecider: map[string]uint64{"frame": 1}},
		},
		"step.entered":      &StepEntered{Step: StepRef{Workflow: "w", State: "s", Index: 1, Attempt: 1}, FrameDigest: sp("ab")},
		"step.left":         &StepLeft{Step: StepRef{Workflow: "w", State: "s", Index: 1, Attempt: 1}, Outcome: StepOutcome{Outcome: "failed", Reason: "r"}},
		"turn.started":      &TurnStarted{Turn: 1},
		"turn.ended":        &TurnEnded{Turn: 1, StopReason: sp("end_turn")},
		"text":              &Text{Text: "<hi> & bye", RequestID: sp("req_1")},
		"thinking":          &Thinking{Text: "hmm"},
		"thinking.estimate": &ThinkingEstimate{Estimate: up(10)},
		"injection":         &Injection{Text: "x", Origin: sp("synthetic")},
		"tool.requested": &ToolRequested{CallID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`),
			Operations: []string{"shell"}, Subjects: []string{"proc:ls"}, DecisionRequired: true, DeadlineMS: up(55000), Seam: "hook"},
		"tool.decided":   &ToolDecided{CallID: "t1", Decision: DenyDecision("no shell"), DecidedBy: "embedder", Seam: "hook", LatencyMS: up(3)},
		"tool.result":    &ToolResult{CallID: "t1", IsError: new(bool), Content: json.RawMessage(`"ok"`), Bytes: up(2)},
		"usage":          &UsageEvent{RequestID: sp("r"), Model: sp("m"), Usage: Usage{InputTokens: up(1)}},
		"rate_limit":     &RateLimit{Info: RateLimitInfo{Status: sp("allowed")}},
		"command.result": &CommandResult{ID: "c1", Outcome: Refuse(TooLate, "already decided")},
		"warning":        &Warning{Code: "NO_FRAME_IN_FORCE", Message: "m"},
		"opaque":         &Opaque{VendorType: sp("system"), Digest: "00", SourceLine: up(7)},
		"auth.expired":   &AuthExpired{CredentialSource: sp("loopback"), Detail: sp("session expired")},
		"stream.closed":  &StreamClosed{Events: 3, Reason: ReasonCompleted, RunID: "r1", Process: &Process{Kind: "exited", Code: new(int)}},
	}
}

func TestEveryEventRoundTrips(t *testing.T) {
	s := samples()
	if len(s) != len(EventNames) || len(EventNames) != 20 {
		t.Fatalf("want a sample for each of the 20 events, have %d samples, %d names", len(s), len(EventNames))
	}
	for _, name := range EventNames {
		ev := s[name]
		if ev.EventName() != name {
			t.Fatalf("sample for %s names itself %s", name, ev.EventName())
		}
		line, err := EncodeEvent(5, "r1", sp("2026-12-02T00:00:00Z"), ev)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := ParseEvent(line)
		if err != nil {
			t.Fatalf("%s: parse %s: %v", name, line, err)
		}
		if diff := cmp.Diff(ev, got.Event, nullRaw); diff != "" {
			t.Errorf("%s round trip (-want +got):\n%s", name, diff)
		}
		again, _ := EncodeEvent(got.Seq, got.Run, got.At, got.Event)
		if !bytes.Equal(line, again) {
			t.Errorf("%s: re-encoding differs:\n%s%s", name, line, again)
		}
	}
}

func TestEveryCommandRoundTrips(t *testing.T) {
	cmds := []Command{
		&ToolDecide{CallID: "t1", Decision: ReplaceDecision(json.RawMessage(`{"path":"a"}`))},
		&FrameSet{Frame: json.RawMessage(`{"format":"metaharness.frame/1"}`)},
		&MessageInject{Text: "hi"},
		&Steer{Text: "left"},
		&PermissionSet{Posture: "plan"},
		&Interrupt{Reason: sp("stop")},
		&Halt{},
	}
	if len(cmds) != len(CommandNames) || len(CommandNames) != 7 {
		t.Fatalf("want a sample for each of the 7 commands")
	}
	for i, c := range cmds {
		if c.CommandName() != CommandNames[i] {
			t.Fatalf("sample %d is %s, want %s", i, c.CommandName(), CommandNames[i])
		}
		line, err := EncodeCommand("c1", c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseCommand(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if got.ID != "c1" || got.Name != c.CommandName() {
			t.Errorf("%s: id %q name %q", line, got.ID, got.Name)
		}
		if diff := cmp.Diff(c, got.Command); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.CommandName(), diff)
		}
	}
}

func TestWriterAssignsSeqAndClosesLast(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b, "r1")
	if err := w.Emit(&Text{Text: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.EmitAt("2026-12-02T10:00:00Z", &Warning{Code: "X", Message: "y"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(&StreamClosed{}); err == nil {
		t.Fatal("Emit accepted stream.closed; only Close may write it")
	}
	if err := w.Close(ReasonError, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Emit(&Text{Text: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Emit after Close: %v, want ErrClosed", err)
	}
	if err := w.Close(ReasonError, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
	want := `{"format":"metaharness.event/1","seq":1,"run":"r1","event":"text","text":"a","request_id":null}
{"format":"metaharness.event/1","seq":2,"run":"r1","at":"2026-12-02T10:00:00Z","event":"warning","code":"X","message":"y"}
{"format":"metaharness.event/1","seq":3,"run":"r1","event":"stream.closed","events":2,"reason":"error","run_id":"r1","process":null}
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Fatalf("stream (-want +got):\n%s", diff)
	}
}

// TestEveryOutcomeIsWritten: each command.result variant renders, and so
// passes the published schema the test binary holds lines to (an ok
// outcome writes "applies_at": null).
func TestEveryOutcomeIsWritten(t *testing.T) {
	at := "turn 2"
	for _, o := range []CommandOutcome{OK(nil), OK(&at), Refuse(Malformed, "no")} {
		line, err := EncodeEvent(1, "r", nil, &CommandResult{ID: "c1", Outcome: o})
		if err != nil {
			t.Fatal(err)
		}
		if o.Result == "ok" && !strings.Contains(string(line), `"applies_at":`) {
			t.Errorf("an ok outcome without applies_at: %s", line)
		}
	}
}

func TestAbsentFieldsAreExplicitNull(t *testing.T) {
	defer SetLineCheck(SetLineCheck(nil)) // zero values, which no run writes, on purpose
	for _, name := range EventNames {
		ev := newEvent(name)
		line, err := EncodeEvent(1, "r", nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["at"]; ok {
			t.Errorf("%s: at written though absent", name)
		}
		rt := reflect.TypeOf(ev).Elem()
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			key, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if _, present := m[key]; !present && opts != "omitempty" {
				t.Errorf("%s: field %s missing from %s", name, key, line)
			}
			nullable := f.Tag.Get("jsonschema") == "nullable"
			canBeNull := f.Type.Kind() == reflect.Pointer || f.Type.Kind() == reflect.Slice || f.Type.Kind() == reflect.Map
			raw := f.Type == reflect.TypeOf(json.RawMessage{})
			if canBeNull && !raw && opts != "omitempty" && !nullable {
				t.Errorf("%s.%s can be null but its schema does not say so (tag it jsonschema:\"nullable\")", name, key)
			}
		}
	}
}

func TestReaderErrorsAreDistinct(t *testing.T) {
	cases := []struct {
		line string
		want error
	}{
		{`[1]`, ErrNotAnObject},
		{`{"seq":1`, ErrNotAnObject},
		{`{"seq":1,"run":"r","event":"text","text":"a"}`, ErrMissingFormat},
		{`{"format":null,"seq":1,"run":"r","event":"text"}`, ErrMissingFormat},
		{`{"format":"metaharness.event/2","seq":1,"run":"r","event":"text"}`, ErrUnknownFormat},
		{`{"format":"metaharness.command/1","seq":1,"run":"r","event":"text"}`, ErrUnknownFormat},
		{`{"format":"metaharness.event/1","seq":1,"run":"r","event":"tool.approved"}`, ErrUnknownName},
		{`{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":5}`, ErrMalformed},
		{`{"format":"metaharness.event/1","seq":0,"run":"r","event":"text","text":"a"}`, ErrMalformed},
		{`{"format":"metaharness.event/1","run":"r","event":"text","text":"a"}`, ErrMalformed},
	}
	for _, c := range cases {
		_, err := ParseEvent([]byte(c.line))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.line, err, c.want)
		}
	}
	if _, err := ParseEvent([]byte(`{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a","future_field":{"x":1}}`)); err != nil {
		t.Errorf("unknown field refused: %v", err)
	}
}

func TestCommandReaderErrors(t *testing.T) {
	cases := []struct {
		line   string
		want   error
		wantID string
	}{
		{`{"format":"metaharness.command/1","id":"c1","command":"pause"}`, ErrUnknownName, "c1"},
		{`{"id":"c1","command":"halt"}`, ErrMissingFormat, ""},
		{`{"format":"metaharness.command/0","id":"c1","command":"halt"}`, ErrUnknownFormat, ""},
		{`{"format":"metaharness.command/1","command":"halt"}`, ErrMalformed, ""},
		{`{"format":"metaharness.command/1","id":"c2","command":"tool.decide","call_id":"t1","decision":{"decision":"deny","reason":"  "}}`, ErrMalformed, "c2"},
		{`{"format":"metaharness.command/1","id":"c3","command":"tool.decide","call_id":"t1","decision":{"decision":"maybe"}}`, ErrMalformed, "c3"},
		{`{"format":"metaharness.command/1","id":"c4","command":"tool.decide","decision":{"decision":"allow"}}`, ErrMalformed, "c4"},
		{`{"format":"metaharness.command/1","id":"c5","command":"tool.decide","call_id":"t1","decision":{"decision":"replace"}}`, ErrMalformed, "c5"},
		{`{"format":"metaharness.command/1","id":"c6","command":"frame.set"}`, ErrMalformed, "c6"},
		// An id is answered exactly as sent: one that would decode altered
		// (invalid UTF-8, an unpaired surrogate escape) has no id to answer under.
		{"{\"format\":\"metaharness.command/1\",\"id\":\"c\xff7\",\"command\":\"halt\"}", ErrMalformed, ""},
		{`{"format":"metaharness.command/1","id":"c\ud8007","command":"halt"}`, ErrMalformed, ""},
		// Invalid UTF-8 elsewhere: refused under the id, not read altered.
		{"{\"format\":\"metaharness.command/1\",\"id\":\"c8\",\"command\":\"halt\",\"reason\":\"\xfe\"}", ErrMalformed, "c8"},
	}
	for _, c := range cases {
		got, err := ParseCommand([]byte(c.line))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.line, err, c.want)
			continue
		}
		if c.wantID != "" && (got == nil || got.ID != c.wantID) {
			t.Errorf("%s: the id to answer under was lost", c.line)
		}
		if c.wantID == "" && got != nil && got.ID != "" {
			t.Errorf("%q: answered under id %q, which is not the id it sent", c.line, got.ID)
		}
	}
}

// TestCommandKeysAreExact: a key given twice or in another case, and in
// tool.decide a key it does not know, is MALFORMED naming the key and where
// it is, answered under the id; a repeated id has no id to answer under.
func TestCommandKeysAreExact(t *testing.T) {
	const head = `{"format":"metaharness.command/1","id":"c1",`
	for _, c := range []struct {
		line, msg string
		id        bool
	}{
		{head + `"command":"halt","command":"tool.decide","call_id":"t1","decision":{"decision":"allow"}}`, `the key "command" is given twice in the top-level object`, true},
		{head + `"command":"tool.decide","call_id":"t1","call_id":"t2","decision":{"decision":"allow"}}`, `the key "call_id" is given twice in the top-level object`, true},
		{head + `"command":"tool.decide","call_id":"t1","Call_ID":"t2","decision":{"decision":"allow"}}`, `the key "Call_ID" in the top-level object is "call_id" spelled in another case`, true},
		{head + `"command":"tool.decide","call_id":"t1","decision":{"decision":"allow","Decision":"deny","reason":"x"}}`, `the key "Decision" in decision is "decision" spelled in another case`, true},
		{head + `"command":"tool.decide","call_id":"t1","decision":{"decision":"deny","reason":"a","reason":"b"}}`, `the key "reason" is given twice in decision`, true},
		{head + `"command":"tool.decide","call_id":"t1","decision":{"decision":"allow"},"scope":"all"}`, `the key "scope" in the top-level object is not one of its keys (call_id, decision, format, id, command)`, true},
		{head + `"command":"tool.decide","call_id":"t1","decision":{"decision":"allow","until":"never"}}`, `the key "until" in decision is not one of its keys (decision, reason, input)`, true},
		{head + `"Command":"halt"}`, `the key "Command" in the top-level object is "command" spelled in another case`, true},
		{head + `"command":"halt","Format":"x"}`, `the key "Format" in the top-level object is "format" spelled in another case`, true},
		{head + `"command":"steer","text":"a","Text":"b"}`, `the key "Text" in the top-level object is "text" spelled in another case`, true},
		{head + `"command":"frame.set","frame":{"a":1,"a":2}}`, `the key "a" is given twice in frame`, true},
		{`{"format":"metaharness.command/1","id":"c1","id":"c2","command":"halt"}`, `the key "id" is given twice in the top-level object; give each key once; without one id the command cannot be answered`, false},
		{`{"format":"metaharness.command/1","id":"c1","ID":"c2","command":"halt"}`, `the key "ID" in the top-level object is "id" spelled in another case`, false},
	} {
		got, err := ParseCommand([]byte(c.line))
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v, want MALFORMED saying %q", c.line, err, c.msg)
			continue
		}
		if answered := got != nil && got.ID != ""; answered != c.id {
			t.Errorf("%s: answered under an id: %v, want %v", c.line, answered, c.id)
		}
	}
	// Other commands still ignore a key they do not know.
	if _, err := ParseCommand([]byte(head + `"command":"halt","reason":null,"future":1}`)); err != nil {
		t.Errorf("halt with an unknown key: %v", err)
	}
}

// TestEventKeysAreExact: an event line that repeats a key, or spells one
// in another case, is ErrMalformed; unknown keys are still ignored.
func TestEventKeysAreExact(t *testing.T) {
	const head = `{"format":"metaharness.event/1","seq":1,"run":"r","event":"text",`
	for line, msg := range map[string]string{
		head + `"text":"a","text":"b","request_id":null}`:                                      `the key "text" is given twice`,
		head + `"text":"a","Text":"b","request_id":null}`:                                      `the key "Text" in the top-level object is "text" spelled in another case`,
		head + `"text":"a","request_id":null,"Seq":2}`:                                         `the key "Seq" in the top-level object is "seq" spelled in another case`,
		`{"format":"metaharness.event/1","seq":1,"seq":2,"run":"r","event":"text","text":"a"}`: `the key "seq" is given twice`,
	} {
		if _, err := ParseEvent([]byte(line)); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: got %v, want ErrMalformed saying %q", line, err, msg)
		}
	}
}

func parseAll(t *testing.T, s string) []*EventLine {
	t.Helper()
	var out []*EventLine
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		e, err := ParseEvent([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestCompleteness(t *testing.T) {
	text := `{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a","request_id":null}`
	closed := func(n int) string {
		return `{"format":"metaharness.event/1","seq":2,"run":"r","event":"stream.closed","events":` + string(rune('0'+n)) + `,"reason":"completed","run_id":"r","process":null}`
	}
	cases := []struct {
		name, stream, state, line string
	}{
		{"complete", text + "\n" + closed(1), Complete, "stream: complete — 1 event(s) before the marker, reason completed"},
		{"truncated", text, Truncated, "stream: TRUNCATED — no stream.closed marker after 1 line(s)"},
		{"marker not last", closed(0) + "\n" + text, Inconsistent, "stream: INCONSISTENT — stream.closed is line 1 of 2, not the last"},
		{"two markers", closed(0) + "\n" + closed(1), Inconsistent, "stream: INCONSISTENT — 2 stream.closed markers"},
		{"wrong count", text + "\n" + closed(4), Inconsistent, "stream: INCONSISTENT — stream.closed counts 4 event(s) but 1 line(s) precede it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := CheckCompleteness(parseAll(t, c.stream))
			if got.State != c.state || got.Line() != c.line {
				t.Errorf("got %q (%s), want %q (%s)", got.Line(), got.State, c.line, c.state)
			}
		})
	}
}

// TestSchemasMatchTypes fails when schemas/ drifts from the Go types; run
// `go generate ./...` to regenerate.
func TestSchemasMatchTypes(t *testing.T) {
	for name, build := range map[string]func() ([]byte, error){
		"event.schema.json": EventSchema, "command.schema.json": CommandSchema,
	} {
		want, err := build()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("..", "schemas", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("schemas/%s drifted from the types: run `go generate ./...`", name)
		}
	}
}

// TestEncodePayloadIsTheLineWithoutItsHeader: the payload alone, keys in
// wire order, explicit nulls kept.
func TestEncodePayloadIsTheLineWithoutItsHeader(t *testing.T) {
	got, err := EncodePayload(&Text{Text: "a<b"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"text":"a<b","request_id":null}` {
		t.Errorf("payload %s", got)
	}
	line, _ := EncodeEvent(1, "r", nil, &Text{Text: "a<b"})
	if !strings.HasSuffix(strings.TrimSpace(string(line)), string(got[1:])) {
		t.Errorf("the line %s does not end with the payload %s", line, got)
	}
}

// TestCommandIDKeptExactly: an id holding U+FFFD, raw or escaped, is
// answered under that very id.
func TestCommandIDKeptExactly(t *testing.T) {
	for _, line := range []string{
		"{\"format\":\"metaharness.command/1\",\"id\":\"c\uFFFD\",\"command\":\"halt\"}",
		`{"format":"metaharness.command/1","id":"c\ufffd","command":"halt"}`,
		`{"format":"metaharness.command/1","id":"c\uD83D\uDE00","command":"halt"}`,
	} {
		got, err := ParseCommand([]byte(line))
		if err != nil || got.ID == "" || !strings.HasPrefix(got.ID, "c") || len(got.ID) < 2 {
			t.Errorf("%s: %v %+v", line, err, got)
		}
	}
}
