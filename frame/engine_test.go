package frame

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// rig is an engine writing into a buffer, on a manual clock.
type rig struct {
	e      *Engine
	clock  *ManualClock
	events *syncBuffer
	stderr *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newRig(t testing.TB, cfg Config) *rig {
	t.Helper()
	r := &rig{clock: NewManualClock(time.Unix(0, 0)), events: &syncBuffer{}, stderr: &syncBuffer{}}
	cfg.Events = record.NewWriter(r.events, "r")
	cfg.Clock = r.clock
	cfg.Stderr = r.stderr
	if cfg.Resolve == nil {
		cfg.Resolve = func(tool string, _ json.RawMessage) Resolution {
			return Resolution{Operations: []Operation{{Op: tool}}}
		}
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.e = e
	return r
}

// lines parses every event written so far.
func (r *rig) lines(t testing.TB) []*record.EventLine {
	t.Helper()
	var out []*record.EventLine
	for _, l := range strings.Split(strings.TrimSpace(r.events.String()), "\n") {
		if l == "" {
			continue
		}
		ev, err := record.ParseEvent([]byte(l))
		if err != nil {
			t.Fatalf("the engine wrote a line record refuses: %v\n%s", err, l)
		}
		out = append(out, ev)
	}
	return out
}

// results returns the outcome of every command.result, by id.
func (r *rig) results(t testing.TB) map[string][]record.CommandOutcome {
	out := map[string][]record.CommandOutcome{}
	for _, l := range r.lines(t) {
		if cr, ok := l.Event.(*record.CommandResult); ok {
			out[cr.ID] = append(out[cr.ID], cr.Outcome)
		}
	}
	return out
}

func commandLine(id, name string, fields string) []byte {
	if fields != "" {
		fields = "," + fields
	}
	return []byte(fmt.Sprintf(`{"format":"metaharness.command/1","id":%q,"command":%q%s}`, id, name, fields))
}

func decideLine(id, call, decision string) []byte {
	return commandLine(id, "tool.decide", fmt.Sprintf(`"call_id":%q,"decision":%s`, call, decision))
}

func TestNewRefusesObserveWithAFrame(t *testing.T) {
	_, err := New(Config{Mode: ModeObserve, Frame: mustSeal(t, sample()), Events: record.NewWriter(io.Discard, "r")})
	var r *exit.Refusal
	if !errors.As(err, &r) || r.Name != RefuseObserveWithFrame || !strings.Contains(r.Message, record.UnsupportedControl) {
		t.Fatalf("got %v, want the %s refusal naming %s", err, RefuseObserveWithFrame, record.UnsupportedControl)
	}
}

func TestNewRefusesAnUnusableConfig(t *testing.T) {
	if _, err := New(Config{Mode: ModeAsk}); err == nil {
		t.Error("accepted an engine with no event writer")
	}
	if _, err := New(Config{Mode: "judge", Events: record.NewWriter(io.Discard, "r")}); err == nil {
		t.Error("accepted an unknown mode")
	}
}

func TestDeadlineIsStrictlyInsideTheVendorTimeout(t *testing.T) {
	for vendor, want := range map[time.Duration]time.Duration{
		60 * time.Second:       55 * time.Second,
		30 * time.Second:       25 * time.Second,
		5*time.Second + 1:      1,
		5 * time.Second:        2500 * time.Millisecond,
		2 * time.Second:        time.Second,
		3 * time.Millisecond:   1500 * time.Microsecond,
		600 * time.Millisecond: 300 * time.Millisecond,
	} {
		if got := DeadlineFor(vendor); got != want || got >= vendor {
			t.Errorf("DeadlineFor(%v) = %v, want %v", vendor, got, want)
		}
	}
}

// claudeRefuses is Claude Code's command table: it honours tool.decide,
// interrupt and halt.
func claudeRefuses(c string) string {
	switch c {
	case "tool.decide", "interrupt", "halt":
		return ""
	}
	return record.UnsupportedControl
}

// TestEveryRefusalCode triggers each of the five command refusal codes.
func TestEveryRefusalCode(t *testing.T) {
	sealed, _ := mustSeal(t, sample()).MarshalJSON()
	tampered := bytes.Replace(sealed, []byte("keep the public API"), []byte("drop the public API"), 1)
	cases := []struct {
		code    string
		refuses func(string) string
		line    []byte
	}{
		{record.UnsupportedControl, claudeRefuses, commandLine("c", "frame.set", `"frame":`+string(sealed))},
		{record.UnsupportedControl, claudeRefuses, commandLine("c", "steer", `"text":"left"`)},
		{record.UnknownCall, nil, decideLine("c", "t9", `{"decision":"allow"}`)},
		{record.TooLate, nil, decideLine("c", "done", `{"decision":"allow"}`)},
		{record.Malformed, nil, decideLine("c", "t1", `{"decision":"deny","reason":""}`)},
		{record.Malformed, nil, commandLine("c", "pause", "")},
		{record.Malformed, nil, commandLine("c", "frame.set", `"frame":`+string(tampered))},
		{record.Shadowed, func(c string) string {
			if c == "tool.decide" {
				return record.Shadowed
			}
			return ""
		}, decideLine("c", "t1", `{"decision":"allow"}`)},
	}
	for _, c := range cases {
		t.Run(c.code+" "+string(c.line), func(t *testing.T) {
			r := newRig(t, Config{Mode: ModeAsk, VendorTimeout: time.Minute, Refuses: c.refuses})
			r.e.Request(Call{CallID: "done", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
			if err := r.e.HandleLine(decideLine("first", "done", `{"decision":"allow"}`)); err != nil {
				t.Fatal(err)
			}
			r.e.Request(Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
			if err := r.e.HandleLine(c.line); err != nil {
				t.Fatal(err)
			}
			got := r.results(t)["c"]
			if len(got) != 1 {
				t.Fatalf("%d command.result lines for id c, want exactly one", len(got))
			}
			if got[0].Refused == nil || got[0].Refused.Code != c.code || got[0].Refused.Reason == "" {
				t.Fatalf("outcome %+v, want refused %s with a reason", got[0], c.code)
			}
		})
	}
}

// TestAToolDecideWithAKeyItDoesNotKnowDecidesNothing: a tool.decide with
// an unknown key, a key given twice or a key in another case is refused
// MALFORMED naming the key, and the call stays pending.
func TestAToolDecideWithAKeyItDoesNotKnowDecidesNothing(t *testing.T) {
	for line, says := range map[string]string{
		string(commandLine("c", "tool.decide", `"call_id":"t1","decision":{"decision":"allow"},"scope":"every call"`)):                         `"scope"`,
		string(decideLine("c", "t1", `{"decision":"allow","why":"x"}`)):                                                                        `"why" in decision`,
		string(commandLine("c", "halt", `"command":"tool.decide","call_id":"t1","decision":{"decision":"allow"}`)):                             `"command" is given twice`,
		string(commandLine("c", "tool.decide", `"call_id":"t1","decision":{"decision":"deny","reason":"no"},"Decision":{"decision":"allow"}`)): `"Decision" in the top-level object is "decision"`,
	} {
		r := newRig(t, Config{Mode: ModeAsk, VendorTimeout: time.Minute})
		r.e.Request(Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
		if err := r.e.HandleLine([]byte(line)); err != nil {
			t.Fatal(err)
		}
		got := r.results(t)["c"]
		if len(got) != 1 || got[0].Refused == nil || got[0].Refused.Code != record.Malformed || !strings.Contains(got[0].Refused.Reason, says) {
			t.Errorf("%s: outcome %+v, want MALFORMED naming %s", line, got, says)
		}
		for _, l := range r.lines(t) {
			if l.Name() == "tool.decided" {
				t.Errorf("%s: the call was decided", line)
			}
		}
	}
}

func TestAnUnparseableLineIsReportedOnStderrAndTheRunGoesOn(t *testing.T) {
	r := newRig(t, Config{Mode: ModeAsk})
	r.e.Request(Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
	for _, l := range []string{"not json", `{"format":"metaharness.command/1","command":"halt"}`, `{"id":"c0","command":"halt"}`, "   "} {
		if err := r.e.HandleLine([]byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(r.stderr.String(), "\n"); n != 3 {
		t.Fatalf("%d stderr lines, want one per unparseable line (3):\n%s", n, r.stderr.String())
	}
	if len(r.results(t)) != 0 {
		t.Fatal("an unparseable line got a command.result")
	}
	if err := r.e.HandleLine(decideLine("c1", "t1", `{"decision":"allow"}`)); err != nil {
		t.Fatal(err)
	}
	if out := r.results(t)["c1"]; len(out) != 1 || out[0].Result != "ok" {
		t.Fatalf("the run did not go on: %+v", out)
	}
}

func TestEveryCommandGetsExactlyOneResult(t *testing.T) {
	r := newRig(t, Config{Mode: ModeAsk, Control: func(record.Command) error { return nil }})
	sealed, _ := mustSeal(t, sample()).MarshalJSON()
	lines := [][]byte{
		decideLine("1", "t1", `{"decision":"allow"}`),
		commandLine("2", "frame.set", `"frame":`+string(sealed)),
		commandLine("3", "message.inject", `"text":"hi"`),
		commandLine("4", "steer", `"text":"left"`),
		commandLine("5", "permission.set", `"posture":"plan"`),
		commandLine("6", "interrupt", `"reason":null`),
		commandLine("7", "halt", `"reason":"done"`),
	}
	if len(lines) != len(record.CommandNames) {
		t.Fatalf("the test covers %d commands, the wire has %d", len(lines), len(record.CommandNames))
	}
	for _, l := range lines {
		if err := r.e.HandleLine(l); err != nil {
			t.Fatal(err)
		}
	}
	res := r.results(t)
	for i := range lines {
		id := fmt.Sprint(i + 1)
		if len(res[id]) != 1 {
			t.Errorf("command %s (%s): %d results", id, record.CommandNames[i], len(res[id]))
		}
	}
	if res["2"][0].AppliesAt == nil || *res["2"][0].AppliesAt != "turn 1" {
		t.Errorf("frame.set applies_at %+v, want turn 1", res["2"][0])
	}
}

func TestAControlThatFailsIsRefusedAfterThePendingCallsAreDenied(t *testing.T) {
	var order []string
	r := newRig(t, Config{Mode: ModeAsk, Control: func(c record.Command) error {
		order = append(order, "control "+c.CommandName())
		return errors.New("the child is gone")
	}})
	r.e.Request(Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(d record.Decision) { order = append(order, "answer "+d.Decision) })
	if err := r.e.HandleLine(commandLine("c1", "interrupt", "")); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, "; ") != "answer deny; control interrupt" {
		t.Fatalf("order: %q", order)
	}
	out := r.results(t)["c1"]
	if len(out) != 1 || out[0].Refused == nil || !strings.Contains(out[0].Refused.Reason, "the child is gone") {
		t.Fatalf("outcome %+v", out)
	}
	if r.e.Halted() {
		t.Fatal("an interrupt halted the run")
	}
}

func TestNoControlMeansTheTurnCommandsAreRefused(t *testing.T) {
	r := newRig(t, Config{Mode: ModeFrame})
	if err := r.e.HandleLine(commandLine("c1", "interrupt", "")); err != nil {
		t.Fatal(err)
	}
	if out := r.results(t)["c1"]; out[0].Refused == nil || out[0].Refused.Code != record.UnsupportedControl {
		t.Fatalf("outcome %+v", out)
	}
}

func TestCensusIsACopy(t *testing.T) {
	r := newRig(t, Config{Mode: ModeObserve})
	r.e.Request(Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
	c := r.e.Census()
	c.BySeam["hook"] = 99
	if got := r.e.Census(); got.BySeam["hook"] != 1 || got.Allowed != 1 || got.ByDecider[ByObserve] != 1 {
		t.Fatalf("census %+v", got)
	}
}

func TestAnInvalidInputIsStillRecorded(t *testing.T) {
	r := newRig(t, Config{Mode: ModeObserve})
	r.e.Request(Call{CallID: "t1", Name: "shell", Input: json.RawMessage(`{"broken`), Seam: record.SeamHook}, func(record.Decision) {})
	if err := r.e.Err(); err != nil {
		t.Fatal(err)
	}
	tr := r.lines(t)[0].Event.(*record.ToolRequested)
	if string(tr.Input) != `"{\"broken"` {
		t.Fatalf("input recorded as %s", tr.Input)
	}
}

func TestDecideAbandonsTheCallWhenTheSeamStopsWaiting(t *testing.T) {
	r := newRig(t, Config{Mode: ModeAsk})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan record.Decision)
	var wrote []record.Decision
	go func() {
		done <- r.e.Decide(ctx, Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(d record.Decision) { wrote = append(wrote, d) })
	}()
	waitPending(t, r.e, "t1")
	cancel()
	d := <-done
	if d.Decision != record.Deny || len(wrote) != 1 || wrote[0].Reason != d.Reason {
		t.Fatalf("decision %+v, written %+v", d, wrote)
	}
	if !strings.Contains(r.events.String(), WarnPendingCallAbandoned) {
		t.Fatal("no PENDING_CALL_ABANDONED warning")
	}
}

// waitPending waits until the engine reports the call pending: the seam's
// goroutine has presented it. It polls without sleeping; the test's own
// deadline is the backstop.
func waitPending(t *testing.T, e *Engine, id string) {
	t.Helper()
	for {
		for _, p := range e.Pending() {
			if p == id {
				return
			}
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the call was never presented")
		default:
		}
		runtime.Gosched()
	}
}

// TestTheSystemClockFiresADeadline runs one real deadline of 10 ms; the
// test waits for the decision, not for time.
func TestTheSystemClockFiresADeadline(t *testing.T) {
	var events syncBuffer
	e, err := New(Config{Mode: ModeAsk, Events: record.NewWriter(&events, "r"), VendorTimeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d := e.Decide(t.Context(), Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, nil)
	if d.Decision != record.Deny || !strings.Contains(d.Reason, "10 ms") || !strings.Contains(d.Reason, "20 ms") {
		t.Fatalf("decision %+v", d)
	}
}

// TestConcurrentSeamsAndCommands presents calls from many goroutines while
// the embedder answers them in a shuffled order, each answer on its own
// goroutine, as stdin lines; run with -race.
func TestConcurrentSeamsAndCommands(t *testing.T) {
	const n = 40
	pr, pw := io.Pipe()
	e, err := New(Config{Mode: ModeAsk, Events: record.NewWriter(pw, "r"), Clock: NewManualClock(time.Unix(0, 0))})
	if err != nil {
		t.Fatal(err)
	}
	var embedder, handlers sync.WaitGroup
	embedder.Add(1)
	go func() {
		defer embedder.Done()
		sc := bufio.NewScanner(pr)
		rng := rand.New(rand.NewSource(1))
		var batch []string
		seen := 0
		for sc.Scan() {
			ev, err := record.ParseEvent(sc.Bytes())
			if err != nil {
				t.Error(err)
				return
			}
			if tr, ok := ev.Event.(*record.ToolRequested); ok && tr.DecisionRequired {
				batch = append(batch, tr.CallID)
				seen++
			}
			if len(batch) < 5 && seen < n {
				continue
			}
			rng.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			for _, id := range batch {
				handlers.Add(1)
				go func() {
					defer handlers.Done()
					_ = e.HandleLine(decideLine("c-"+id, id, `{"decision":"replace","input":{"id":"`+id+`"}}`))
				}()
			}
			batch = nil
		}
	}()
	var seams sync.WaitGroup
	answers := make([]int, n)
	var mu sync.Mutex
	for i := 0; i < n; i++ {
		seams.Add(1)
		go func() {
			defer seams.Done()
			id := fmt.Sprintf("t%d", i)
			d := e.Decide(context.Background(), Call{CallID: id, Name: "shell", Input: json.RawMessage(`{}`), Seam: record.SeamHook}, func(record.Decision) {
				mu.Lock()
				answers[i]++
				mu.Unlock()
			})
			if d.Decision != record.Replace || string(d.Input) != `{"id":"`+id+`"}` {
				t.Errorf("%s got %+v", id, d)
			}
		}()
	}
	seams.Wait()
	handlers.Wait()
	c := e.Census()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	_ = pw.Close()
	embedder.Wait()
	for i, a := range answers {
		if a != 1 {
			t.Errorf("t%d answered %d times", i, a)
		}
	}
	if c.Replaced != n || c.ByDecider[ByEmbedder] != n {
		t.Errorf("census %+v", c)
	}
}

func TestCheckControls(t *testing.T) {
	b10x := func(c string) string {
		if c == "halt" || c == "interrupt" {
			return ""
		}
		return record.UnsupportedControl
	}
	shadowed := func(c string) string {
		if c == "tool.decide" {
			return record.Shadowed
		}
		return ""
	}
	cases := []struct {
		name      string
		mode      Mode
		withFrame bool
		seamed    bool
		refuses   func(string) string
		refusal   exit.Name
		ids       []string
	}{
		{"claude frame with frame", ModeFrame, true, true, claudeRefuses, "", nil},
		{"claude ask", ModeAsk, false, true, claudeRefuses, "", nil},
		{"b10x frame without frame", ModeFrame, false, false, b10x, "", nil},
		{"b10x observe records only", ModeObserve, false, false, b10x, "", nil},
		{"b10x ask", ModeAsk, false, false, b10x, "unsupported-control", []string{"start/tool.decide"}},
		{"b10x frame with frame", ModeFrame, true, false, b10x, "unsupported-control", []string{"start/tool.decide"}},
		{"shadowed ask", ModeAsk, false, true, shadowed, "shadowed", []string{"start/tool.decide"}},
		{"seamed observe needs tool.decide", ModeObserve, false, true, shadowed, "shadowed", []string{"start/tool.decide"}},
		{"nothing honoured", ModeObserve, false, true, func(string) string { return record.UnsupportedControl },
			"unsupported-control", []string{"start/halt", "start/interrupt", "start/tool.decide"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			err := CheckControls(record.NewWriter(&b, "r"), "kind", c.mode, c.withFrame, c.seamed, c.refuses)
			var r *exit.Refusal
			if c.refusal == "" {
				if err != nil || b.Len() != 0 {
					t.Fatalf("refused: %v\n%s", err, b.String())
				}
				return
			}
			if !errors.As(err, &r) || r.Name != c.refusal {
				t.Fatalf("got %v, want refusal %s", err, c.refusal)
			}
			var ids []string
			for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
				ev, err := record.ParseEvent([]byte(l))
				if err != nil {
					t.Fatal(err)
				}
				cr := ev.Event.(*record.CommandResult)
				if cr.Outcome.Refused == nil {
					t.Fatalf("%s is not a refusal", l)
				}
				ids = append(ids, cr.ID)
			}
			if strings.Join(ids, " ") != strings.Join(c.ids, " ") {
				t.Fatalf("ids %v, want %v", ids, c.ids)
			}
		})
	}
}

// TestAReusedCommandIDIsRefusedUnderIt: a second command under an id
// already answered is refused MALFORMED under that id and does nothing (the
// call it names stays pending); a fresh id still works.
func TestAReusedCommandIDIsRefusedUnderIt(t *testing.T) {
	r := newRig(t, Config{Mode: ModeAsk})
	r.e.Request(Call{CallID: "t1", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
	r.e.Request(Call{CallID: "t2", Name: "shell", Seam: record.SeamHook}, func(record.Decision) {})
	for _, l := range [][]byte{
		decideLine("c1", "t1", `{"decision":"allow"}`),
		decideLine("c1", "t2", `{"decision":"allow"}`),
		commandLine("c2", "pause", ""),
		decideLine("c2", "t2", `{"decision":"allow"}`),
	} {
		if err := r.e.HandleLine(l); err != nil {
			t.Fatal(err)
		}
	}
	res := r.results(t)
	if len(res["c1"]) != 2 || res["c1"][0].Result != "ok" || res["c1"][1].Refused == nil ||
		res["c1"][1].Refused.Code != record.Malformed || !strings.Contains(res["c1"][1].Refused.Reason, `command id "c1" was already used by stdin line 1`) {
		t.Fatalf("c1 results %+v", res["c1"])
	}
	if len(res["c2"]) != 2 || res["c2"][1].Refused == nil || !strings.Contains(res["c2"][1].Refused.Reason, "stdin line 3") {
		t.Fatalf("c2 results %+v (a refused command's id is used too)", res["c2"])
	}
	if p := r.e.Pending(); len(p) != 1 || p[0] != "t2" {
		t.Fatalf("pending %v: a refused reuse must not decide t2", p)
	}
}

// TestADroppedLongLineKeepsTheCount: the reader's long line is coded on
// stderr and counted, so the next unparseable line is reported under its
// own number.
func TestADroppedLongLineKeepsTheCount(t *testing.T) {
	r := newRig(t, Config{Mode: ModeAsk})
	_ = r.e.HandleLine([]byte("\n"))
	r.e.DropLongLine(16)
	_ = r.e.HandleLine([]byte("not json\n"))
	want := "metaharness: command-too-long: stdin line 2 is longer than 16 bytes, so it was dropped unread and gets no command.result; no command is that long\n" +
		"metaharness: command-unparseable: stdin line 3 is not a command"
	if !strings.HasPrefix(r.stderr.String(), want) {
		t.Fatalf("stderr:\n%s\nwant it to start:\n%s", r.stderr.String(), want)
	}
}
