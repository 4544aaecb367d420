package conformance

import (
	"bytes"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// The C3 control vectors: metaharness's own seam rules (decisions, modes,
// deadlines, the five ordering rules, command refusals), adapter-neutral.
// Each file under testdata/c3 is one vector, named for what it proves; a
// new file is a new vector, no code needed.
//
//go:embed testdata/c3/*.json
var c3Files embed.FS

// C3Vector is one control vector: a scripted vendor, made of pseudo-events,
// played against the decision engine with a manual clock, and the outputs
// it must produce.
//
// Script steps, one action each:
//
//	{"emit":"tool.requested","call_id":…,"name":…,"input":…,"seam":…}
//	    a seam presents a call (seam "none": the vendor's record of one)
//	{"emit":"tool.requested",…,"seam":"hook","record":true}
//	    the vendor's record of a call whose seam will present it
//	{"emit":"tool.result","call_id":…}   the vendor's result of a call
//	{"emit":"turn.started","turn":N} / {"emit":"turn.ended","turn":N,…}
//	{"emit":"<any other event>",…payload}   the vendor emits an event
//	{"stdin":{…command…}} or {"stdin":"raw line"}   a line on stdin
//	{"stdin_hex":"7b22…"}   a line on stdin as hex bytes, for one that is
//	    not UTF-8 (which the vector's own JSON cannot spell)
//	{"stdin_eof":true}   stdin reaches its end: no embedder is left
//	{"advance_ms":N}   the clock moves on
//	{"pending":["t1",…]}   the calls awaiting a decision, in delivery order
//	{"wire":{"call_id":…,"name":…,"input":…}}   the model made this call
//	    on the wire (the loopback proxy read it); in a vector with
//	    "wire": true, a seam's presentation is a decision request, held
//	    to these calls (launcher.RequestCheck) before the engine sees it
//
// The scripted kind resolves a tool named for an operation ("shell",
// "file.write", …) to that operation, "mcp__S__T" to mcp.call(S/T) and
// "tool_search"/"tool_describe" to catalogue questions; an input's "path"
// is its file subject and the first word of "command" its program.
type C3Vector struct {
	ID              string            `json:"-"`
	Proves          string            `json:"proves"`
	Mode            frame.Mode        `json:"mode"`
	Frame           json.RawMessage   `json:"frame,omitempty"`
	VendorTimeoutMS uint64            `json:"vendor_timeout_ms,omitempty"`
	Refuses         map[string]string `json:"refuses,omitempty"`
	// Wire: the model's traffic passes the proxy, so every presentation
	// at a seam is first held to the calls the model made ("wire" steps).
	Wire   bool              `json:"wire,omitempty"`
	Script []json.RawMessage `json:"script"`
	Expect C3Outputs         `json:"expect"`
}

// C3Outputs is what a vector produces: the whole ordered event trace, every
// line written to the child, and every line written to stderr.
type C3Outputs struct {
	Events []json.RawMessage `json:"events"`
	Child  []json.RawMessage `json:"child"`
	Stderr []string          `json:"stderr"`
}

// c3Run is the run id every vector's stream carries.
const c3Run = "c3"

// c3Start is where every vector's manual clock starts.
var c3Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// C3Vectors returns every vector built into this binary, sorted by id.
func C3Vectors() ([]C3Vector, error) {
	names, err := fs.Glob(c3Files, "testdata/c3/*.json")
	if err != nil {
		return nil, err
	}
	var out []C3Vector
	for _, name := range names {
		b, err := c3Files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		v, err := ParseC3Vector(strings.TrimSuffix(path.Base(name), ".json"), b)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseC3Vector reads one vector file; name is the file's name without
// ".json".
func ParseC3Vector(name string, b []byte) (C3Vector, error) {
	var v C3Vector
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return v, fmt.Errorf("c3/%s: %w", name, err)
	}
	v.ID = "c3/" + name
	if v.Proves == "" {
		return v, fmt.Errorf("%s: the vector does not say what it proves", v.ID)
	}
	return v, nil
}

// Check plays the vector and compares every output with what it expects.
func (v C3Vector) Check() error {
	got, err := v.Play()
	if err != nil {
		return err
	}
	var diffs []string
	for _, c := range []struct {
		what      string
		want, got []string
	}{
		{"event trace", sameJSON(v.Expect.Events), sameJSON(got.Events)},
		{"lines to the child", sameJSON(v.Expect.Child), sameJSON(got.Child)},
		{"stderr", v.Expect.Stderr, got.Stderr},
	} {
		if d := firstDifference(c.want, c.got); d != "" {
			diffs = append(diffs, c.what+": "+d)
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s:\n%s", v.ID, strings.Join(diffs, "\n"))
	}
	return nil
}

// firstDifference describes where two line lists first differ, or "".
func firstDifference(want, got []string) string {
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return fmt.Sprintf("line %d is missing (want %d lines, got %d):\n  want %s", i+1, len(want), len(got), want[i])
		case i >= len(want):
			return fmt.Sprintf("line %d is extra (want %d lines, got %d):\n  got  %s", i+1, len(want), len(got), got[i])
		case want[i] != got[i]:
			return fmt.Sprintf("line %d differs:\n  want %s\n  got  %s", i+1, want[i], got[i])
		}
	}
	return ""
}

// sameJSON renders each value with sorted keys, so that two values compare
// equal exactly when they mean the same JSON.
func sameJSON(vals []json.RawMessage) []string {
	out := make([]string, len(vals))
	for i, raw := range vals {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var x any
		if err := d.Decode(&x); err != nil {
			out[i] = "not JSON: " + string(raw)
			continue
		}
		b, _ := json.Marshal(x)
		out[i] = string(b)
	}
	return out
}

// Play runs the script and returns what came out.
func (v C3Vector) Play() (C3Outputs, error) {
	p, err := newPlayer(v)
	if err != nil {
		return C3Outputs{}, err
	}
	for i, raw := range v.Script {
		if err := p.step(raw); err != nil {
			return C3Outputs{}, fmt.Errorf("%s: script step %d %s: %w", v.ID, i+1, raw, err)
		}
	}
	if err := p.finish(); err != nil {
		return C3Outputs{}, fmt.Errorf("%s: winding up: %w", v.ID, err)
	}
	return p.outputs()
}

type player struct {
	v         C3Vector
	clock     *frame.ManualClock
	events    bytes.Buffer
	stderr    bytes.Buffer
	w         *record.Writer
	engine    *frame.Engine
	child     []json.RawMessage
	terminals int
	wire      map[string]loopback.Call // the model's calls, under "wire": true
	requests  *launcher.RequestCheck
}

func newPlayer(v C3Vector) (*player, error) {
	p := &player{v: v, clock: frame.NewManualClock(c3Start)}
	p.w = record.NewWriter(&p.events, c3Run)
	var f *frame.Frame
	if len(v.Frame) > 0 {
		var err error
		if f, err = frame.Parse(v.Frame); err != nil {
			return nil, fmt.Errorf("%s: the vector's frame: %w", v.ID, err)
		}
	}
	e, err := frame.New(frame.Config{
		Mode: v.Mode, Frame: f, Kind: "scripted", Events: p.w, Clock: p.clock,
		VendorTimeout: time.Duration(v.VendorTimeoutMS) * time.Millisecond,
		Resolve:       resolveScripted,
		Refuses:       func(c string) string { return v.Refuses[c] },
		Control:       p.control,
		Stderr:        &p.stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.ID, err)
	}
	p.engine = e
	if v.Wire {
		p.wire = map[string]loopback.Call{}
		p.requests = launcher.NewRequestCheck(func(id string) (loopback.Call, bool) {
			c, ok := p.wire[id]
			return c, ok
		}, matchScripted)
	}
	return p, nil
}

// matchScripted: the scripted kind's seams show a call as the model made
// it, so a request is the model's call when its tool and input are.
func matchScripted(call loopback.Call, req decide.Request) error {
	if req.Tool != call.Name {
		return fmt.Errorf("the wire's call is %s, not %s", call.Name, req.Tool)
	}
	w, errW := kind.DecodeJSON(call.Input)
	r, errR := kind.DecodeJSON(req.Input)
	if errW != nil || errR != nil || !kind.EqualJSON(w, r, kind.NumbersExact) {
		return errors.New("the input differs from the wire's")
	}
	return nil
}

// control writes the neutral seam's control line: {"control":"interrupt"}.
func (p *player) control(c record.Command) error {
	line := map[string]any{"control": c.CommandName()}
	switch c := c.(type) {
	case *record.MessageInject:
		line["text"] = c.Text
	case *record.Steer:
		line["text"] = c.Text
	case *record.PermissionSet:
		line["posture"] = c.Posture
	}
	b, err := json.Marshal(line)
	p.child = append(p.child, b)
	return err
}

// answer writes the neutral seam's decision line:
// {"call_id":"t1","decision":{"decision":"allow"}}.
func (p *player) answer(callID string) frame.Answer {
	return func(d record.Decision) {
		b, err := json.Marshal(struct {
			CallID   string          `json:"call_id"`
			Decision record.Decision `json:"decision"`
		}{callID, d})
		if err != nil {
			b, _ = json.Marshal(map[string]string{"call_id": callID, "unencodable_decision": err.Error()})
		}
		p.child = append(p.child, b)
	}
}

type c3Step struct {
	Emit      *string         `json:"emit"`
	Stdin     json.RawMessage `json:"stdin"`
	StdinHex  *string         `json:"stdin_hex"`
	StdinEOF  bool            `json:"stdin_eof"`
	AdvanceMS *uint64         `json:"advance_ms"`
	Pending   *[]string       `json:"pending"`
	At        *string         `json:"at"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Seam      string          `json:"seam"`
	Record    bool            `json:"record"`
	NoReplace bool            `json:"no_replace"`
	Turn      uint32          `json:"turn"`
	Stop      *string         `json:"stop_reason"`
	Wire      *struct {
		CallID string          `json:"call_id"`
		Name   string          `json:"name"`
		Input  json.RawMessage `json:"input"`
	} `json:"wire"`
}

func (p *player) step(raw json.RawMessage) error {
	var s c3Step
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	actions := 0
	for _, set := range []bool{s.Emit != nil, s.Stdin != nil, s.StdinHex != nil, s.StdinEOF, s.AdvanceMS != nil, s.Pending != nil, s.Wire != nil} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		return errors.New("a step has exactly one of emit, stdin, stdin_hex, stdin_eof, advance_ms, pending, wire")
	}
	switch {
	case s.Wire != nil:
		if p.wire == nil {
			return errors.New(`a wire step needs "wire": true on the vector`)
		}
		c := p.wire[s.Wire.CallID]
		p.wire[s.Wire.CallID] = loopback.Call{ID: s.Wire.CallID, Name: s.Wire.Name, Input: s.Wire.Input, Complete: true, Emitted: c.Emitted + 1}
		return nil
	case s.StdinEOF:
		p.engine.StdinEnded()
		return nil
	case s.StdinHex != nil:
		line, err := hex.DecodeString(*s.StdinHex)
		if err != nil {
			return fmt.Errorf("stdin_hex: %w", err)
		}
		return p.engine.HandleLine(line)
	case s.Stdin != nil:
		line := []byte(s.Stdin)
		var str string
		if json.Unmarshal(s.Stdin, &str) == nil {
			line = []byte(str)
		}
		return p.engine.HandleLine(line)
	case s.AdvanceMS != nil:
		p.clock.Advance(time.Duration(*s.AdvanceMS) * time.Millisecond)
		return nil
	case s.Pending != nil:
		if got := p.engine.Pending(); !slices.Equal(got, *s.Pending) {
			return fmt.Errorf("pending calls are %q, the script expects %q", got, *s.Pending)
		}
		return nil
	}
	switch *s.Emit {
	case "tool.requested":
		c := frame.Call{CallID: s.CallID, Name: s.Name, Input: s.Input, Seam: s.Seam, At: s.At, NoReplace: s.NoReplace}
		switch {
		case s.Seam == record.SeamNone || s.Record:
			p.engine.Observe(c)
		case p.requests != nil:
			// A decision request, as a seam's program puts it to the run.
			if d, w := p.requests.Verify(decide.Request{Seam: s.Seam, CallID: s.CallID, Tool: s.Name, Input: s.Input}); d != nil {
				if err := p.w.Emit(w); err != nil {
					return err
				}
				p.answer(s.CallID)(*d)
				return nil
			}
			p.engine.Request(c, p.answer(s.CallID))
		default:
			p.engine.Request(c, p.answer(s.CallID))
		}
		return p.engine.Err()
	case "turn.started":
		return p.engine.StartTurn(s.Turn, s.At)
	case "turn.ended":
		return p.engine.EndTurn(s.Turn, s.Stop, s.At)
	case "tool.result":
		p.engine.Settle(s.CallID) // as a session does: the call before its result
	}
	return p.emitVendorEvent(*s.Emit, raw)
}

// emitVendorEvent writes any other pseudo-event as the vendor reader would:
// its payload through record's own reader, session.ended with the census.
func (p *player) emitVendorEvent(name string, raw json.RawMessage) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	delete(fields, "emit")
	fields["format"] = json.RawMessage(`"` + record.EventFormat + `"`)
	fields["seq"] = json.RawMessage(`1`)
	fields["run"] = json.RawMessage(`"` + c3Run + `"`)
	fields["event"], _ = json.Marshal(name)
	line, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	ev, err := record.ParseEvent(line)
	if err != nil {
		return err
	}
	if se, ok := ev.Event.(*record.SessionEnded); ok {
		census := p.engine.Census()
		if p.requests != nil {
			census.NotOnWire = p.requests.Denied() // as the run's wind-up counts them
		}
		se.Census = &census
		p.terminals++
	}
	if ev.At != nil {
		return p.w.EmitAt(*ev.At, ev.Event)
	}
	return p.w.Emit(ev.Event)
}

// finish ends the stream as a run does: pending calls abandoned, then
// stream.closed with the reason the record supports.
func (p *player) finish() error {
	if err := p.engine.Close(); err != nil {
		return err
	}
	reason := record.ReasonError // no terminal record
	switch {
	case p.engine.Halted():
		reason = record.ReasonSteerHalt
	case p.terminals > 0:
		reason = record.ReasonCompleted
	}
	return p.w.Close(reason, nil)
}

func (p *player) outputs() (C3Outputs, error) {
	out := C3Outputs{Child: p.child}
	for _, line := range bytes.Split(bytes.TrimSuffix(p.events.Bytes(), []byte("\n")), []byte("\n")) {
		if _, err := record.ParseEvent(line); err != nil {
			return out, fmt.Errorf("%s: the engine wrote a line record refuses: %v\n%s", p.v.ID, err, line)
		}
		out.Events = append(out.Events, json.RawMessage(line))
	}
	if s := strings.TrimSuffix(p.stderr.String(), "\n"); s != "" {
		out.Stderr = strings.Split(s, "\n")
	}
	return out, nil
}

// resolveScripted is the scripted kind's rendering read backwards.
func resolveScripted(tool string, input json.RawMessage) frame.Resolution {
	var r frame.Resolution
	switch {
	case tool == "tool_search" || tool == "tool_describe":
		r.Catalogue = true
	case record.IsOperation(tool) && tool != frame.MCPCall:
		r.Operations = []frame.Operation{{Op: tool}}
	case strings.HasPrefix(tool, "mcp__"):
		if server, t, ok := strings.Cut(strings.TrimPrefix(tool, "mcp__"), "__"); ok {
			r.Operations = []frame.Operation{{Op: frame.MCPCall, Server: server, Tool: t}}
		}
	}
	var in struct {
		Path    *string `json:"path"`
		Command *string `json:"command"`
	}
	if json.Unmarshal(input, &in) == nil {
		if in.Path != nil {
			r.Subjects = append(r.Subjects, "file:"+*in.Path)
		}
		if in.Command != nil {
			if f := strings.Fields(*in.Command); len(f) > 0 {
				r.Subjects = append(r.Subjects, "proc:"+f[0])
			}
		}
	}
	return r
}
