package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// namingWait bounds how long a decision request waits for the tool_use line
// that names its call: Gemini CLI writes every call's line before it asks
// about any of them, so the wait is only the reading behind the writing.
const namingWait = 10 * time.Second

// NewSession: Gemini CLI is a child whose record is read. Its stdout is
// stream-json; its calls are decided before they run by the BeforeTool
// hook and the owned server it starts, which ask over the decision channel
// (Answer). Neither names the call: the session names each by the id of
// the tool_use line Gemini CLI wrote for it, and binds the Gemini API's
// id-less call on the wire to that id.
func (Kind) NewSession(_ *kind.Spec, plan *kind.Plan, run kind.Services) kind.Session {
	s := &session{run: run, owned: len(plan.MCPServers) > 0, wire: run.Wire()}
	s.named = sync.NewCond(&s.mu)
	return s
}

type session struct {
	run   kind.Services
	owned bool // the plan gave the child the owned server
	wire  *kind.WireView

	// notOnRecord counts the decision requests denied at once.
	notOnRecord atomic.Uint64

	mu    sync.Mutex
	named *sync.Cond
	calls []*pending // the calls the record showed, in order
	done  bool       // the record has ended: nothing more will be named
	texts map[string]int
	// asking are the calls a request waits on a decision for, by id: the
	// wait ends when the record shows the call's result, since Gemini CLI
	// went on without the answer (its hook died, and the admin policy
	// refused the call).
	asking map[string]*asking
}

// asking is one request's wait: cancel ends it, done is closed once the
// decision was written.
type asking struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// pending is a call the record showed, until a request asks about it.
type pending struct {
	id, name string
	input    json.RawMessage
	asked    bool
}

var (
	_ kind.Answerer      = (*session)(nil)
	_ kind.RecordChecker = (*session)(nil)
)

// RequestsNotOnRecord counts the decision requests Answer denied at once
// because the record showed no such call.
func (s *session) RequestsNotOnRecord() uint64 { return s.notOnRecord.Load() }

// Drive reads stdout to the end: every line is kept in the transcript
// first, then mapped. session.started waits for the first line past the
// opening (the model has been asked by then), so that it can say what the
// first request offered the model, as the proxy read it. The terminal
// record is held back for the run to set the census into.
func (s *session) Drive(_ context.Context, p kind.Pipes) *record.SessionEnded {
	defer func() {
		s.mu.Lock()
		s.done = true
		s.named.Broadcast()
		s.mu.Unlock()
	}()
	var tr Reader
	eng := s.run.Engine()
	chk := kind.NewRecordCheck("Gemini CLI", s.run, func(call loopback.Call, ev *record.ToolRequested) error {
		return MatchLine(call, ev.Name, ev.Input)
	}, lastText)
	var opening *kind.Item
	var held []kind.Item
	turn := uint32(0)
	start := func() {
		if opening == nil {
			return
		}
		ev := opening.Event.(*record.SessionStarted)
		s.complete(ev)
		s.run.Started(opening.At, ev)
		opening = nil
		turn++
		_ = eng.StartTurn(turn, nil)
	}
	handle := func(it kind.Item) {
		switch it.Event.(type) {
		case *record.SessionStarted:
			opening = &it
			return
		case *record.Opaque:
			if opening != nil {
				held = append(held, it) // the task's echo, before the model is asked
				return
			}
		}
		start()
		for _, h := range held {
			s.run.Emit(h.At, h.Event)
		}
		held = nil
		s.record(eng, chk, it, turn)
	}
	kind.EachLine(p.Stdout, kind.MaxVendorLine, func(line []byte) {
		_, _ = p.Transcript.Write(line)
		for _, it := range tr.Read(line) {
			handle(it)
		}
	}, func() { s.run.Emit("", kind.LineTooLong("Gemini CLI")) })
	for _, it := range tr.End() {
		handle(it)
	}
	start()
	for _, h := range held {
		s.run.Emit(h.At, h.Event)
	}
	return chk.Final(tr.Terminal())
}

// record takes one event past the opening.
func (s *session) record(eng *frame.Engine, chk *kind.RecordCheck, it kind.Item, turn uint32) {
	switch ev := it.Event.(type) {
	case *record.Text:
		if !s.holdText(ev) {
			return
		}
		s.run.Emit(it.At, ev)
	case *record.ToolRequested:
		s.bind(ev)
		if !chk.Holds(ev) {
			return
		}
		s.mu.Lock()
		s.calls = append(s.calls, &pending{id: ev.CallID, name: ev.Name, input: ev.Input})
		s.named.Broadcast()
		s.mu.Unlock()
		var at *string
		if it.At != "" {
			at = &it.At
		}
		eng.Observe(frame.Call{CallID: ev.CallID, Name: ev.Name, Input: ev.Input, Seam: ev.Seam, At: at})
	case *record.ToolResult:
		if !chk.Holds(ev) {
			return
		}
		s.giveUp(ev.CallID)
		eng.Settle(ev.CallID) // the call first, if no seam presented it
		s.run.Emit(it.At, ev)
	case *record.SessionEnded:
		if turn > 0 {
			_ = eng.EndTurn(turn, ev.StopReason, nil)
		}
	default:
		if chk.Holds(ev) {
			s.run.Emit(it.At, ev)
		}
	}
}

// bind names the wire's id-less call by the id Gemini CLI made for it: the
// first such call with the line's name and input.
func (s *session) bind(ev *record.ToolRequested) {
	if s.wire == nil {
		return
	}
	if _, ok := s.wire.Call(ev.CallID); ok {
		return // the API gave the call an id, which the line names
	}
	s.wire.Bind(ev.CallID, func(c loopback.Call) bool { return MatchLine(c, ev.Name, ev.Input) == nil })
}

// holdText holds a text line to the wire: it must be the next part of the
// text of some response the model streamed (Gemini CLI writes each chunk's
// text as a delta, which the reader joins up to the next record that is no
// delta), and names that response. Without a wire every text stands.
func (s *session) holdText(t *record.Text) bool {
	if s.wire == nil {
		return true
	}
	if s.texts == nil {
		s.texts = map[string]int{}
	}
	for _, r := range s.wire.Responses() {
		if !r.Stream || r.ID == "" {
			continue
		}
		var b strings.Builder
		for _, it := range r.Items {
			if it.Kind == loopback.KindText {
				b.WriteString(it.Text)
			}
		}
		rest := b.String()[min(s.texts[r.ID], b.Len()):]
		if strings.HasPrefix(rest, t.Text) {
			s.texts[r.ID] += len(t.Text)
			id := r.ID
			t.RequestID = &id
			return true
		}
	}
	s.run.NotOnWire(fmt.Sprintf("Gemini CLI claimed the model wrote %s, which no response on the wire streamed next", quote(t.Text)))
	return false
}

func quote(s string) string {
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return fmt.Sprintf("%q", s)
}

// complete adds to the opening record what the first model request
// offered the model, as the proxy read it (Gemini CLI's record says
// nothing of it): the tools offered, the MCP servers they come from, the
// workspace its session context names, the key variable it authenticates
// with; and what Gemini CLI has none of (output styles).
func (s *session) complete(ev *record.SessionStarted) {
	style := "default" // Gemini CLI 0.61.0 has no output styles
	ev.OutputStyle = &style
	if s.wire == nil {
		return
	}
	for _, r := range s.wire.Responses() {
		if !r.Stream || r.Asked == nil {
			continue
		}
		ev.OfferedTools = r.Asked.Tools
		servers := map[string]bool{}
		for _, t := range r.Asked.Tools {
			if rest, ok := strings.CutPrefix(t, "mcp_"); ok {
				server, _, _ := strings.Cut(rest, "_")
				servers[server] = true
			}
		}
		ev.MCPServers = []record.MCPServer{}
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		sort.Strings(names)
		connected := "connected"
		for _, n := range names {
			ev.MCPServers = append(ev.MCPServers, record.MCPServer{Name: n, Status: &connected})
		}
		// Extensions would add tools, context and commands of their own:
		// --extensions none loads none, and the offer holds none.
		ev.Plugins = []record.Plugin{}
		if dir := workspace(r.Asked.Context); dir != "" {
			ev.Cwd = &dir
		}
		src := KeyEnv
		ev.CredentialSource = &src
		return
	}
}

// workspace is the first workspace directory Gemini CLI's session context
// names ("- **Workspace Directories:**\n  - /path").
func workspace(context string) string {
	_, rest, ok := strings.Cut(context, "**Workspace Directories:**\n")
	if !ok {
		return ""
	}
	line, _, _ := strings.Cut(rest, "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "- ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(dir)
}

// Control: headless Gemini CLI takes no control line, so interrupting or
// halting is stopping the process group.
func (s *session) Control(c record.Command) error { return kind.StopOnly(s.run, "gemini", c) }

// Answer decides a request of the hook or of the owned server. Neither
// names the call, so it is named first: the oldest call on the record not
// asked about yet with the request's tool and input. A request the record
// shows no such call for is denied unasked. The owned server's tools are
// decided at its own seam; a hook that asks about one abstains.
func (s *session) Answer(ctx context.Context, req decide.Request) record.Decision {
	name := req.Tool
	owned := req.Seam == record.SeamOwnedTool
	if owned {
		name = OwnedPrefix + req.Tool
	} else if s.owned && strings.HasPrefix(req.Tool, OwnedPrefix) {
		return record.AbstainDecision()
	}
	id, ok := s.name(ctx, name, req.Input, owned)
	if !ok {
		why := fmt.Sprintf("Gemini CLI's record shows no call of %s with this input that was not asked about already", name)
		s.notOnRecord.Add(1)
		s.run.Emit("", &record.Warning{Code: attest.DecisionNotOnRecord, Message: fmt.Sprintf("a decision request at the %s seam (%s) was denied at once: %s", req.Seam, name, why)})
		return record.DenyDecision("metaharness denied this request, and nothing ran: " + why)
	}
	req.CallID = id
	ctx, cancel := context.WithCancel(ctx)
	w := &asking{cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	if s.asking == nil {
		s.asking = map[string]*asking{}
	}
	s.asking[id] = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.asking, id)
		s.mu.Unlock()
		close(w.done)
		cancel()
	}()
	return s.run.Decide(ctx, req)
}

// giveUp ends the wait of a request for call id, if one still waits, and
// returns once its decision is written: the record shows the call's
// result, so Gemini CLI went on without the answer (its hook died before
// answering, and the admin policy denied the call). The call is abandoned
// (denied, nothing ran) before its result is recorded, and an answer of
// the embedder's that comes later finds it decided.
func (s *session) giveUp(id string) {
	s.mu.Lock()
	w := s.asking[id]
	s.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// name waits for the record to show the call asked about and claims it.
func (s *session) name(ctx context.Context, tool string, input json.RawMessage, owned bool) (string, bool) {
	deadline := time.Now().Add(namingWait)
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.named.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	timer := time.AfterFunc(namingWait, func() {
		s.mu.Lock()
		s.named.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	want := loopback.Call{Name: tool, Input: input}
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for _, c := range s.calls {
			if c.asked || c.name != tool {
				continue
			}
			if sameCall(want, c.name, c.input, owned) == nil {
				c.asked = true
				return c.id, true
			}
		}
		if s.done || ctx.Err() != nil || !time.Now().Before(deadline) {
			return "", false
		}
		s.named.Wait()
	}
}
