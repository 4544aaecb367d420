package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// startupTimeout bounds each request of the session's opening; app-server
// answers them in well under a second.
const startupTimeout = time.Minute

// controlTimeout bounds how long a command waits for app-server to answer
// turn/steer or turn/interrupt.
const controlTimeout = 10 * time.Second

// stopGrace is how long a halted app-server gets to exit on its own (it
// does in well under a second once its stdin closes) before the run ends
// its process group.
const stopGrace = 2 * time.Second

// NewSession: codex app-server is a child the run converses with. The
// session sends the opening the plan wrote, then answers every request
// app-server makes: a dynamic tool call is performed by the run itself
// (Services.Perform: mcp-serve's checks, decision and performers on the
// checked scratch copy), an approval of a native command or patch is
// decided by the engine at the control_request seam; it turns interrupt,
// halt, steer and message.inject into turn/interrupt and turn/steer.
func (Kind) NewSession(spec *kind.Spec, plan *kind.Plan, run kind.Services) kind.Session {
	s := &session{run: run, reader: NewReader(), turnDone: make(chan struct{})}
	s.check = kind.NewRecordCheck("codex app-server", run, func(call loopback.Call, ev *record.ToolRequested) error {
		return Kind{}.MatchRequest(call, decide.Request{Seam: ev.Seam, CallID: ev.CallID, Tool: ev.Name, Input: ev.Input}, plan)
	}, lastText)
	s.callsDone = sync.NewCond(&s.mu)
	for _, f := range plan.Files {
		if strings.HasSuffix(f.Path, "/"+sessionFile) {
			s.openErr = json.Unmarshal([]byte(f.Content), &s.open)
		}
	}
	return s
}

type session struct {
	run     kind.Services
	open    Opening
	openErr error
	conn    *conn
	reader  *Reader           // read by the loop goroutine only
	check   *kind.RecordCheck // the reader's events held to the wire, by the loop

	mu       sync.Mutex
	threadID string
	turnID   string // the turn running, "" when none
	turnSeen bool   // a turn was started
	stopped  bool   // interrupted or halted before the task started
	ended    bool   // Drive has returned
	turnDone chan struct{}
	doneOnce sync.Once

	// calls counts the dynamic tool calls being answered: a control waits
	// for their answers (the denies it just caused among them) before it
	// reaches app-server, so the decision arrives first (rule 1).
	calls     int
	callsDone *sync.Cond
}

// Drive converses with app-server until the task's turn ends (or the child
// does), then closes its stdin and reads its stdout to the end.
func (s *session) Drive(ctx context.Context, p kind.Pipes) *record.SessionEnded {
	s.conn = newConn(p.Stdin, p.Transcript)
	read := make(chan struct{})
	go func() {
		defer close(read)
		s.conn.readFrom(p.Stdout, func() { s.run.Emit("", kind.LineTooLong("codex app-server")) })
	}()
	loop := make(chan struct{})
	go func() {
		defer close(loop)
		s.loop(ctx)
	}()
	if s.openErr != nil {
		s.run.Emit("", &record.Warning{Code: WarnVendorError, Message: "internal: the planned opening does not read back: " + s.openErr.Error()})
	} else {
		s.converse(ctx, read)
	}
	s.conn.closeInput()
	<-read
	<-loop
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	return s.check.Final(s.reader.Terminal())
}

// lastText is codex's final answer as the wire shows it: the last text of
// the last response that completed.
func lastText(rs []loopback.Response) *string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].End != loopback.EndCompleted {
			continue
		}
		for j := len(rs[i].Items) - 1; j >= 0; j-- {
			if it := rs[i].Items[j]; it.Kind == loopback.KindText && it.Text != "" {
				return &it.Text
			}
		}
		return nil
	}
	return nil
}

// converse sends the opening and the task, and waits for the task's turn
// to end, the child to go, or ctx.
func (s *session) converse(ctx context.Context, read <-chan struct{}) {
	if _, err := s.startup(ctx, "initialize", s.open.Initialize); err != nil {
		return
	}
	if err := s.conn.notify("initialized"); err != nil {
		return
	}
	res, err := s.startup(ctx, "thread/start", s.open.ThreadStart)
	if err != nil {
		return
	}
	var th struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if json.Unmarshal(res, &th) != nil || th.Thread.ID == "" {
		s.run.Emit("", &record.Warning{Code: WarnVendorError, Message: "codex answered thread/start without a thread id"})
		return
	}
	s.mu.Lock()
	s.threadID = th.Thread.ID
	s.mu.Unlock()
	// What the opening record is made of: the effective config (the
	// provider's key variable, the personality), and the plugins, MCP
	// servers and skills app-server has. An error here leaves that field
	// unknown; the session goes on.
	_, _ = s.startup(ctx, "config/read", map[string]any{"cwd": s.open.ThreadStart.Cwd})
	_, _ = s.startup(ctx, "plugin/installed", map[string]any{})
	_, _ = s.startup(ctx, "mcpServerStatus/list", map[string]any{})
	_, _ = s.startup(ctx, "skills/list", map[string]any{})

	s.mu.Lock()
	stopped := s.stopped
	s.turnSeen = !stopped
	s.mu.Unlock()
	if stopped {
		return
	}
	turn := s.open.TurnStart
	turn.ThreadID = th.Thread.ID
	res, err = s.startup(ctx, "turn/start", turn)
	if err != nil {
		return
	}
	var ts struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(res, &ts)
	s.mu.Lock()
	if s.turnID == "" && !s.turnOver() {
		s.turnID = ts.Turn.ID
	}
	s.mu.Unlock()
	select {
	case <-s.turnDone:
	case <-read:
	case <-ctx.Done():
	}
}

func (s *session) turnOver() bool {
	select {
	case <-s.turnDone:
		return true
	default:
		return false
	}
}

// startup is one request of the opening, bounded.
func (s *session) startup(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	res, err := s.conn.call(ctx, method, params)
	var ce *callError
	if err != nil && !errors.As(err, &ce) && !errors.Is(err, errClosed) {
		// An error answer is in the stream already (the reader maps it).
		s.run.Emit("", &record.Warning{Code: WarnVendorError, Message: fmt.Sprintf("%s: %v", method, err)})
	}
	return res, err
}

// loop maps every line of the conversation, in the order it crossed the
// pipe, and hands app-server's requests to their seams.
func (s *session) loop(ctx context.Context) {
	eng := s.run.Engine()
	for {
		line, ok := s.conn.lines.pop()
		if !ok {
			return
		}
		for _, it := range s.reader.Read(line) {
			if !s.check.Holds(it.Event) {
				continue
			}
			var at *string
			if it.At != "" {
				a := it.At
				at = &a
			}
			switch ev := it.Event.(type) {
			case *record.SessionStarted:
				s.run.Started(it.At, ev)
			case *record.ToolRequested:
				eng.Observe(frame.Call{CallID: ev.CallID, Name: ev.Name, Input: ev.Input, Seam: ev.Seam, At: at})
			case *record.ToolResult:
				eng.Settle(ev.CallID) // the call first, if no seam presented it
				s.run.Emit(it.At, ev)
			case *record.TurnStarted:
				_ = eng.StartTurn(ev.Turn, at)
			case *record.TurnEnded:
				_ = eng.EndTurn(ev.Turn, ev.StopReason, at)
			default:
				s.run.Emit(it.At, ev)
			}
		}
		var m message
		if json.Unmarshal(line, &m) != nil || m.Method == "" {
			continue
		}
		switch {
		case len(m.ID) > 0 && !clientID(m.ID):
			s.serve(ctx, &m)
		case m.Method == "turn/started":
			var v struct {
				Turn struct {
					ID string `json:"id"`
				} `json:"turn"`
			}
			_ = json.Unmarshal(m.Params, &v)
			s.mu.Lock()
			s.turnID = v.Turn.ID
			s.mu.Unlock()
		case m.Method == "turn/completed":
			s.mu.Lock()
			s.turnID = ""
			s.mu.Unlock()
			s.doneOnce.Do(func() { close(s.turnDone) })
		}
	}
}

// serve answers one request of app-server's.
func (s *session) serve(ctx context.Context, m *message) {
	switch m.Method {
	case "item/tool/call":
		s.mu.Lock()
		s.calls++
		s.mu.Unlock()
		go func() {
			defer func() {
				s.mu.Lock()
				s.calls--
				s.mu.Unlock()
				s.callsDone.Broadcast()
			}()
			s.toolCall(ctx, m)
		}()
	case "item/commandExecution/requestApproval":
		var p struct {
			ItemID  string `json:"itemId"`
			Command string `json:"command"`
			Cwd     string `json:"cwd"`
		}
		_ = json.Unmarshal(m.Params, &p)
		name, input, ok := s.reader.Input(p.ItemID)
		if !ok {
			name, input = ShellTool, ShellInput(p.Command, p.Cwd)
		}
		s.approve(m.ID, p.ItemID, name, input)
	case "item/fileChange/requestApproval":
		var p struct {
			ItemID string `json:"itemId"`
		}
		_ = json.Unmarshal(m.Params, &p)
		name, input, ok := s.reader.Input(p.ItemID)
		if !ok {
			name, input = PatchTool, json.RawMessage(`{"changes":[]}`)
		}
		s.approve(m.ID, p.ItemID, name, input)
	default:
		_ = s.conn.replyError(m.ID, -32601, "metaharness serves no "+m.Method+" in a governed run")
	}
}

// toolCall performs a dynamic tool call through the run's catalogue server
// and answers it; a refused call is success:false with the reason as its
// only text, which is all the model is shown.
func (s *session) toolCall(ctx context.Context, m *message) {
	var p struct {
		CallID    string          `json:"callId"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	text, isErr, err := s.run.Perform(ctx, p.Tool, p.Arguments, p.CallID)
	if err != nil {
		text, isErr = fmt.Sprintf("metaharness refused %s: %v, so nothing ran", p.Tool, err), true
	}
	_ = s.conn.reply(m.ID, map[string]any{
		"contentItems": []map[string]string{{"type": "inputText", "text": text}},
		"success":      !isErr,
	})
}

// approve presents a native call codex asks approval for, and answers
// with the decision as it is made: allow is accept, deny (or an abstention,
// which claims nothing codex could act on) is decline, so the turn goes on
// and the model is told (a deny's reason too, see tellDenied), and a call
// the embedder's halt abandoned is cancel, which ends the turn. A
// replacement cannot be honoured here (codex takes no other input in an
// approval), so the call is presented as NoReplace and the engine refuses
// a replace for it.
func (s *session) approve(id json.RawMessage, callID, name string, input json.RawMessage) {
	if d := s.run.Verify(decide.Request{Seam: record.SeamControlRequest, CallID: callID, Tool: name, Input: input}); d != nil {
		_ = s.conn.reply(id, map[string]string{"decision": "decline"})
		return
	}
	s.run.Engine().Request(frame.Call{CallID: callID, Name: name, Input: input, Seam: record.SeamControlRequest, NoReplace: true}, func(d record.Decision) {
		answer := "decline"
		switch {
		case d.Decision == record.Allow:
			answer = "accept"
		case d.Decision == record.Deny && strings.HasPrefix(d.Reason, frame.Halted):
			answer = "cancel"
		case d.Decision == record.Deny && !strings.HasPrefix(d.Reason, frame.Interrupted):
			s.tellDenied(callID, name, d.Reason)
		}
		_ = s.conn.reply(id, map[string]string{"decision": answer})
	})
}

// tellDenied hands a deny's reason to the model, which a decline alone
// does not: app-server tells it only that the user rejected the call. The
// reason goes as a steer while the approval is still pending, so codex
// appends it right after the call's output in the next request.
func (s *session) tellDenied(callID, name, reason string) {
	text := fmt.Sprintf("metaharness denied the %s call %s: %s", name, callID, reason)
	if err := s.steer("the deny's reason", text); err != nil {
		s.run.Emit("", &record.Warning{Code: WarnVendorError, Message: fmt.Sprintf("call %s was declined, but its reason did not reach the model: %v", callID, err)})
	}
}

// Control applies interrupt, halt, steer and message.inject to the live
// session. It runs with the engine's lock held, so it never waits on the
// loop: app-server's answers reach it straight from the pipe reader.
func (s *session) Control(c record.Command) error {
	switch cmd := c.(type) {
	case *record.Interrupt:
		return s.interrupt(false)
	case *record.Halt:
		return s.interrupt(true)
	case *record.Steer:
		return s.steer(cmd.CommandName(), cmd.Text)
	case *record.MessageInject:
		return s.steer(cmd.CommandName(), cmd.Text)
	}
	return fmt.Errorf("codex cannot apply %s", c.CommandName())
}

// interrupt stops the running turn (turn/interrupt); before the task has
// started it keeps the task from starting. halt also ends app-server: its
// stdin is closed, and its process group is ended if it is still there
// after stopGrace.
func (s *session) interrupt(halt bool) error {
	s.answered(answerWait)
	s.mu.Lock()
	thread, turn, seen := s.threadID, s.turnID, s.turnSeen
	if !seen {
		s.stopped = true
	}
	s.mu.Unlock()
	var err error
	if turn != "" {
		ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		_, err = s.conn.call(ctx, "turn/interrupt", map[string]string{"threadId": thread, "turnId": turn})
		cancel()
	}
	if halt {
		s.conn.closeInput()
		time.AfterFunc(stopGrace, func() {
			s.mu.Lock()
			ended := s.ended
			s.mu.Unlock()
			if !ended {
				s.run.Stop()
			}
		})
		return nil
	}
	switch {
	case err != nil:
		return &frame.ControlRefusal{Code: record.TooLate, Reason: fmt.Sprintf("codex did not interrupt turn %s: %v", turn, err)}
	case turn == "" && seen:
		return &frame.ControlRefusal{Code: record.TooLate, Reason: "no codex turn is running to interrupt: the task's turn has ended"}
	}
	return nil
}

// answerWait bounds how long a control waits for the tool calls in flight
// to be answered. The engine has denied every pending one by then, so
// their answers are on their way; a call still before its decision waits on
// the engine, which this control holds, and is not waited for.
const answerWait = 250 * time.Millisecond

// answered waits up to d for the tool calls in flight to be answered.
func (s *session) answered(d time.Duration) {
	deadline := time.Now().Add(d)
	t := time.AfterFunc(d, s.callsDone.Broadcast)
	defer t.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.calls > 0 && time.Now().Before(deadline) {
		s.callsDone.Wait()
	}
}

// steer hands text to the running turn (turn/steer): codex abandons the
// model's answer in flight and asks again with the text as a user message,
// or appends it after a pending tool call's result.
func (s *session) steer(command, text string) error {
	s.mu.Lock()
	thread, turn := s.threadID, s.turnID
	s.mu.Unlock()
	if turn == "" {
		return &frame.ControlRefusal{Code: record.TooLate, Reason: command + " needs a codex turn running, and none is: the task's turn has not started or has ended, so the text reached nobody"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	_, err := s.conn.call(ctx, "turn/steer", map[string]any{
		"threadId": thread, "expectedTurnId": turn, "input": []UserInput{{Type: "text", Text: text}},
	})
	if err != nil {
		return &frame.ControlRefusal{Code: record.TooLate, Reason: fmt.Sprintf("codex did not take the %s into turn %s: %v, so the text reached nobody", command, turn, err)}
	}
	return nil
}
