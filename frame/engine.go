package frame

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/metaharness/metaharness/record"
)

// Mode is who decides a run's tool calls (--decisions).
type Mode string

const (
	// ModeFrame: the frame in force decides; with none, every call abstains.
	ModeFrame Mode = "frame"
	// ModeAsk: the embedder decides each call with tool.decide while the
	// call blocks, against a deadline. A frame, if given, bounds the
	// embedder: it denies first what it does not admit, the embedder is
	// asked about the rest, and a replacement input must pass it too.
	ModeAsk Mode = "ask"
	// ModeObserve: every call is allowed and recorded through the same seam.
	ModeObserve Mode = "observe"
)

// Modes lists the three modes in the order help lists them.
var Modes = []Mode{ModeFrame, ModeAsk, ModeObserve}

// Deciders (tool.decided.decided_by).
const (
	ByEmbedder = "embedder"
	ByFrame    = "frame"
	ByDeadline = "deadline"
	ByAdapter  = "adapter"
	ByObserve  = "observe"
)

// DefaultVendorTimeout is the vendor's hook timeout when the launch names
// none.
const DefaultVendorTimeout = 30 * time.Second

// DeadlineFor is metaharness's own deadline for a pending call: strictly
// inside the vendor's timeout (rule 2), five seconds short of it, or half of
// it when it is five seconds or less.
func DeadlineFor(vendorTimeout time.Duration) time.Duration {
	if vendorTimeout > 5*time.Second {
		return vendorTimeout - 5*time.Second
	}
	return vendorTimeout / 2
}

// Config is what a run hands the engine.
type Config struct {
	Mode  Mode
	Frame *Frame // the launch frame, or nil
	// Kind names the adapter in refusal reasons ("claude").
	Kind string
	// Events is the run's event stream; the engine writes tool.requested,
	// tool.decided, warning, turn.started, turn.ended and command.result.
	Events *record.Writer
	// Clock defaults to SystemClock.
	Clock Clock
	// VendorTimeout is the vendor's hook or callback timeout; the deadline
	// is DeadlineFor of it. Zero means DefaultVendorTimeout.
	VendorTimeout time.Duration
	// Resolve maps a vendor tool call to neutral operations and subjects.
	// Nil resolves every call to nothing (a frame denies it as uncovered).
	Resolve func(tool string, input json.RawMessage) Resolution
	// Refuses returns the refusal code with which the kind refuses a command
	// (UNSUPPORTED_CONTROL, SHADOWED), or "" when it honours it. Nil
	// honours every command.
	Refuses func(command string) string
	// Control applies a command the engine cannot apply itself (interrupt,
	// halt, message.inject, steer, permission.set) to the child. It is
	// called after every pending call has been answered, with the engine's
	// lock held: it must not call back into the engine. Nil refuses those
	// commands with UNSUPPORTED_CONTROL.
	Control func(record.Command) error
	// Stderr receives one line for each stdin line that is not a command.
	Stderr io.Writer
}

// Call is one tool call as a seam presents it.
type Call struct {
	CallID string
	Name   string // the vendor's tool name
	Input  json.RawMessage
	Seam   string
	At     *string // the vendor's timestamp, when the seam has one
	// NoReplace says the seam can only run the call as asked or not at
	// all (a codex approval takes no other input), so a replace for it is
	// refused instead of being counted as a replacement that never ran.
	NoReplace bool
}

// Answer delivers a decision to whoever presented the call: it writes the
// hook's response, answers the MCP server, or writes the neutral decision
// line. The engine calls it exactly once per presentation, with its lock
// held, so that the answer reaches the vendor before any later control
// (rule 1). It must not block for long and must not call the engine.
type Answer func(record.Decision)

// Engine decides a run's tool calls and applies its stdin commands. It is
// safe for concurrent use: seams present calls from their own goroutines,
// stdin lines arrive on another, deadlines fire on the clock's.
type Engine struct {
	cfg      Config
	deadline time.Duration
	resolve  func(string, json.RawMessage) Resolution

	mu            sync.Mutex
	frame         *Frame
	staged        *Frame // from frame.set, in force from the next turn
	turn          uint32
	warnedNoFrame bool
	calls         map[string]*callState
	delivered     uint64
	observed      uint64 // observations held so far, for their order
	census        record.Census
	ended         string // set once the run halted or the stream ended
	noEmbedder    string // set once stdin ended in ask mode: why nobody answers
	halted        bool
	interrupted   bool // an interrupt command was applied
	lines         uint64
	ids           map[string]uint64 // command ids answered, and the stdin line of each
	err           error
}

type phase int

const (
	recorded phase = iota // seen only in the vendor's record; never decided
	pending               // presented, waiting for the embedder
	closed                // decided, expired or abandoned
)

type callState struct {
	id, name, seam, digest string
	noReplace              bool
	phase                  phase
	order                  uint64
	armedAt                time.Time
	deadlineMS             *uint64
	timer                  Timer
	answers                []Answer
	decision               record.Decision
	how                    string // how it closed, for TOO_LATE
	// held is the vendor's record of the call, not written yet: a seam
	// will present it, and one tool.requested is written for both.
	held      *Call
	heldOrder uint64
}

// New builds an engine. observe with a frame is refused (exit 2).
func New(cfg Config) (*Engine, error) {
	if cfg.Events == nil {
		return nil, errors.New("frame: the engine needs the run's event writer")
	}
	if !validMode(cfg.Mode) {
		return nil, fmt.Errorf("frame: decision mode %q is not frame, ask or observe", cfg.Mode)
	}
	if err := CheckMode(cfg.Mode, cfg.Frame); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.VendorTimeout <= 0 {
		cfg.VendorTimeout = DefaultVendorTimeout
	}
	if cfg.Kind == "" {
		cfg.Kind = "this kind"
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	e := &Engine{
		cfg:      cfg,
		deadline: DeadlineFor(cfg.VendorTimeout),
		resolve:  cfg.Resolve,
		frame:    cfg.Frame,
		calls:    map[string]*callState{},
		ids:      map[string]uint64{},
		census:   record.Census{BySeam: map[string]uint64{}, ByDecider: map[string]uint64{}},
	}
	if e.resolve == nil {
		e.resolve = func(string, json.RawMessage) Resolution { return Resolution{} }
	}
	return e, nil
}

func validMode(m Mode) bool {
	for _, x := range Modes {
		if m == x {
			return true
		}
	}
	return false
}

// Deadline is the per-call deadline this engine arms in ask mode.
func (e *Engine) Deadline() time.Duration { return e.deadline }

// Request presents a call for a decision and returns at once; answer is
// called exactly once with the decision, possibly before Request returns
// (frame and observe modes, a closed call re-presented) or later from
// another goroutine (ask mode). tool.requested is written first and, in ask
// mode, the call's deadline is armed as it is written.
//
// A call_id presented again with the same request (name and input, however
// the keys are ordered) is recorded again and not decided twice: it gets
// the decision the first presentation got. With a different request it is
// REQUEST_MUTATED and denied by the adapter, and so is the first
// presentation if it is still pending.
func (e *Engine) Request(c Call, answer Answer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.resolve(c.Name, c.Input)
	digest := RequestDigest(c.CallID, c.Name, c.Input)
	prev := e.calls[c.CallID]
	if prev != nil && prev.held != nil {
		if prev.digest == digest {
			// The record's call, now presented: one event for both, with
			// the record's timestamp and the seam's decision facts.
			if c.At == nil {
				c.At = prev.held.At
			}
			prev.held = nil
		} else {
			e.flush(prev) // the record's own request, written as it was
		}
	}
	switch {
	case prev != nil && prev.digest != digest:
		e.emitRequested(c, res, false, nil)
		e.warn(WarnRequestMutated, fmt.Sprintf("call %s was presented at the %s seam with a request that differs from the one first seen (request digest %s, first %s); a decision answers exactly one request, so metaharness denies it",
			c.CallID, c.Seam, digest[:12], prev.digest[:12]))
		if prev.phase == pending {
			e.close(prev, record.DenyDecision(fmt.Sprintf("metaharness denied call %s: before it was decided it was presented again with a different input, and a decision answers exactly one request, so nothing ran", c.CallID)),
				ByAdapter, prev.seam, "denied when it was re-presented with a different input")
		}
		mutated := &callState{id: c.CallID, name: c.Name, seam: c.Seam, digest: digest, answers: []Answer{answer}, armedAt: e.cfg.Clock.Now()}
		e.close(mutated, record.DenyDecision(fmt.Sprintf("metaharness denied this presentation of call %s: its input differs from the one first presented, and a decision answers exactly one request, so nothing ran", c.CallID)),
			ByAdapter, c.Seam, "denied: its request was mutated")
		if prev.phase == recorded {
			e.calls[c.CallID] = mutated
		}
		return
	case prev != nil && prev.phase == pending:
		e.emitRequested(c, res, true, prev.deadlineMS)
		prev.answers = append(prev.answers, answer)
		return
	case prev != nil && prev.phase == closed:
		e.emitRequested(c, res, false, nil)
		answer(prev.decision)
		return
	}
	e.delivered++
	cs := &callState{id: c.CallID, name: c.Name, seam: c.Seam, digest: digest, noReplace: c.NoReplace, order: e.delivered,
		answers: []Answer{answer}, armedAt: e.cfg.Clock.Now()}
	e.calls[c.CallID] = cs
	if e.ended != "" {
		e.emitRequested(c, res, false, nil)
		e.close(cs, record.DenyDecision(fmt.Sprintf("%s before call %s was presented, so nothing ran", e.ended, c.CallID)), ByAdapter, c.Seam, e.ended)
		return
	}
	switch {
	case e.cfg.Mode == ModeObserve:
		e.emitRequested(c, res, false, nil)
		e.close(cs, record.AllowDecision(), ByObserve, c.Seam, "allowed in observe mode")
		return
	case e.cfg.Mode == ModeFrame && e.frame == nil:
		e.emitRequested(c, res, false, nil)
		if !e.warnedNoFrame {
			e.warnedNoFrame = true
			e.warn(WarnNoFrameInForce, "decisions are frame but no frame is in force, so metaharness abstains on every call and the vendor's own pipeline decides")
		}
		e.close(cs, record.AbstainDecision(), ByAdapter, record.SeamNone, "abstained: no frame was in force")
		return
	case e.frame != nil:
		v := e.frame.Verdict(c.Name, res)
		if e.cfg.Mode == ModeFrame || v.Decision.Decision == record.Deny {
			e.emitRequested(c, res, false, nil)
			if v.Warning != nil {
				e.warn(v.Warning.Code, v.Warning.Message)
			}
			e.close(cs, v.Decision, ByFrame, c.Seam, "decided by the frame")
			return
		}
	}
	if e.noEmbedder != "" {
		e.emitRequested(c, res, false, nil)
		e.close(cs, record.DenyDecision(fmt.Sprintf("%s, so metaharness denied call %s at once and nothing ran", e.noEmbedder, c.CallID)), ByAdapter, c.Seam, "denied: "+e.noEmbedder)
		return
	}
	// Ask: the embedder decides, against a deadline armed now.
	ms := uint64(e.deadline.Milliseconds())
	cs.phase = pending
	cs.deadlineMS = &ms
	e.emitRequested(c, res, true, &ms)
	cs.timer = e.cfg.Clock.AfterFunc(e.deadline, func() { e.expire(cs) })
}

// Decide is Request for a seam goroutine that waits for its answer: write is
// called with the decision (under the engine's ordering, see Answer), then
// Decide returns it. If ctx ends first the call is abandoned: denied by the
// adapter, and write still gets that deny.
func (e *Engine) Decide(ctx context.Context, c Call, write Answer) record.Decision {
	got := make(chan record.Decision, 1)
	e.Request(c, func(d record.Decision) {
		if write != nil {
			write(d)
		}
		got <- d
	})
	select {
	case d := <-got:
		return d
	case <-ctx.Done():
		e.mu.Lock()
		if cs := e.calls[c.CallID]; cs != nil && cs.phase == pending {
			e.abandon(cs, fmt.Sprintf("the %s seam stopped waiting before call %s was decided, so nothing ran", c.Seam, c.CallID))
		}
		e.mu.Unlock()
		return <-got
	}
}

// Observe records a call the vendor's own record shows (a transcript
// tool_use): never decided. A call the record names a seam for is held, so
// that it is written once: when that seam presents it (one tool.requested,
// with the record's timestamp and the seam's decision facts), or, when no
// seam does, at Settle or at the end of the turn or stream, as a record
// (seam none, decision_required false). A record with no seam is written at
// once. If the same call_id was presented with a different request, that
// is REQUEST_MUTATED, and a pending presentation is denied by the adapter.
func (e *Engine) Observe(c Call) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.Seam == "" {
		c.Seam = record.SeamNone
	}
	digest := RequestDigest(c.CallID, c.Name, c.Input)
	prev := e.calls[c.CallID]
	switch {
	case prev == nil:
		cs := &callState{id: c.CallID, seam: c.Seam, digest: digest, phase: recorded}
		e.calls[c.CallID] = cs
		if c.Seam == record.SeamNone || e.ended != "" {
			e.emitRecord(c)
			return
		}
		e.observed++
		cs.held, cs.heldOrder = &c, e.observed
		return
	case prev.digest == digest:
		return // already written, by the seam that presented it
	}
	e.flush(prev)
	e.emitRecord(c)
	e.warn(WarnRequestMutated, fmt.Sprintf("the vendor's record of call %s differs from the request presented at the %s seam (request digest %s, presented %s)",
		c.CallID, prev.seam, digest[:12], prev.digest[:12]))
	if prev.phase == pending {
		e.close(prev, record.DenyDecision(fmt.Sprintf("metaharness denied call %s: the vendor's record of it differs from the request that was presented, so nothing ran", c.CallID)),
			ByAdapter, prev.seam, "denied when the vendor's record differed from the presented request")
	}
}

// Settle writes the vendor's record of call id if no seam presented it
// (the record shows the call done, a tool result, so none will): every call
// is in the stream before its result.
func (e *Engine) Settle(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cs := e.calls[id]; cs != nil {
		e.flush(cs)
	}
}

// flush writes a held observation no seam presented.
func (e *Engine) flush(cs *callState) {
	if cs.held == nil {
		return
	}
	c := *cs.held
	cs.held = nil
	e.emitRecord(c)
}

// emitRecord writes the vendor's record of a call that no seam presented
// as it stands: seam none, a record and not a call (never decided).
func (e *Engine) emitRecord(c Call) {
	c.Seam = record.SeamNone
	e.emitRequested(c, e.resolve(c.Name, c.Input), false, nil)
}

// flushAll writes every held observation, in the order they were seen.
func (e *Engine) flushAll() {
	var held []*callState
	for _, cs := range e.calls {
		if cs.held != nil {
			held = append(held, cs)
		}
	}
	sort.Slice(held, func(i, j int) bool { return held[i].heldOrder < held[j].heldOrder })
	for _, cs := range held {
		e.flush(cs)
	}
}

// StdinEnded tells the engine that no command can arrive any more: stdin
// has reached its end. In ask mode nobody is left to decide, so every call
// waiting for the embedder, and every later call it would be asked about,
// is denied by the adapter at once instead of waiting out its deadline; the
// run says so once (NO_EMBEDDER). In the other modes nothing changes.
func (e *Engine) StdinEnded() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cfg.Mode != ModeAsk || e.noEmbedder != "" || e.ended != "" {
		return
	}
	e.noEmbedder = fmt.Sprintf("stdin ended after line %d: no embedder can answer", e.lines)
	if e.lines == 0 {
		e.noEmbedder = "stdin ended before any command: no embedder can answer"
	}
	e.warn(WarnNoEmbedder, e.noEmbedder+", so every call the embedder would decide is denied at once instead of waiting out its deadline")
	for _, cs := range e.pendingLocked() {
		e.close(cs, record.DenyDecision(fmt.Sprintf("%s, so metaharness denied call %s and nothing ran", e.noEmbedder, cs.id)), ByAdapter, cs.seam, "denied: "+e.noEmbedder)
	}
}

// StartTurn writes turn.started for turn (counted from 1) with the digest of
// the frame in force, after putting a frame from frame.set in force.
func (e *Engine) StartTurn(turn uint32, at *string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.staged != nil {
		e.frame, e.staged = e.staged, nil
	}
	e.turn = turn
	var digest *string
	if e.frame != nil {
		d := e.frame.Digest()
		digest = &d
	}
	e.emit(at, &record.TurnStarted{Turn: turn, FrameDigest: digest})
	return e.err
}

// EndTurn abandons every pending call (denied by the adapter,
// PENDING_CALL_ABANDONED) and then writes turn.ended.
func (e *Engine) EndTurn(turn uint32, stopReason *string, at *string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushAll()
	e.abandonAll(fmt.Sprintf("turn %d ended", turn))
	e.emit(at, &record.TurnEnded{Turn: turn, StopReason: stopReason})
	return e.err
}

// Close ends the engine with the stream: every pending call is abandoned,
// and any call presented later is denied by the adapter. It does not close
// the event writer; the launcher writes session.ended (with Census) and
// stream.closed after it.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.flushAll()
	e.abandonAll("the stream ended")
	if e.ended == "" {
		e.ended = "the stream ended"
	}
	return e.err
}

// Census sums the decisions written so far, for session.ended.census.
func (e *Engine) Census() record.Census {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.census
	c.BySeam = make(map[string]uint64, len(e.census.BySeam))
	for k, v := range e.census.BySeam {
		c.BySeam[k] = v
	}
	c.ByDecider = make(map[string]uint64, len(e.census.ByDecider))
	for k, v := range e.census.ByDecider {
		c.ByDecider[k] = v
	}
	return c
}

// Pending lists the call_ids waiting for a decision, in delivery order.
func (e *Engine) Pending() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, cs := range e.pendingLocked() {
		out = append(out, cs.id)
	}
	return out
}

// Halted reports whether a halt command was applied; the stream then closes
// with reason steer-halt.
func (e *Engine) Halted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.halted
}

// Interrupted reports whether an interrupt command was applied: the
// embedder ended the turn, so a run that then ends unfinished ended by its
// choice.
func (e *Engine) Interrupted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.interrupted
}

// FrameInForce is the frame deciding calls now, or nil.
func (e *Engine) FrameInForce() *Frame {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.frame
}

// Err is the first error writing the event stream, if any.
func (e *Engine) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

func (e *Engine) pendingLocked() []*callState {
	var out []*callState
	for _, cs := range e.calls {
		if cs.phase == pending {
			out = append(out, cs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// expire is the deadline firing: deny by deadline, unless the call was
// answered first.
func (e *Engine) expire(cs *callState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cs.phase != pending {
		return
	}
	reason := fmt.Sprintf("no decision arrived within metaharness's deadline of %d ms (the vendor's timeout is %d ms), so metaharness denied call %s and nothing ran",
		e.deadline.Milliseconds(), e.cfg.VendorTimeout.Milliseconds(), cs.id)
	e.close(cs, record.DenyDecision(reason), ByDeadline, cs.seam, fmt.Sprintf("its deadline of %d ms expired and it was denied", e.deadline.Milliseconds()))
}

// abandonAll denies every pending call, in delivery order, because of what
// happened (an interrupt, a halt, a turn or the stream ending).
func (e *Engine) abandonAll(what string) {
	for _, cs := range e.pendingLocked() {
		e.abandon(cs, fmt.Sprintf("%s before call %s was decided, so nothing ran", what, cs.id))
	}
}

func (e *Engine) abandon(cs *callState, reason string) {
	e.warn(WarnPendingCallAbandoned, reason)
	e.close(cs, record.DenyDecision(reason), ByAdapter, cs.seam, "it was abandoned: "+reason)
}

// close writes the decision, counts it and answers every presentation.
func (e *Engine) close(cs *callState, d record.Decision, by, seam, how string) {
	if cs.timer != nil {
		cs.timer.Stop()
	}
	cs.phase, cs.decision, cs.how = closed, d, how
	latency := uint64(0)
	if el := e.cfg.Clock.Now().Sub(cs.armedAt); el > 0 {
		latency = uint64(el.Milliseconds())
	}
	e.emit(nil, &record.ToolDecided{CallID: cs.id, Decision: d, DecidedBy: by, Seam: seam, LatencyMS: &latency})
	e.census.Count(d.Decision, seam, by)
	for _, a := range cs.answers {
		a(d)
	}
	cs.answers = nil
}

func (e *Engine) emitRequested(c Call, res Resolution, required bool, deadlineMS *uint64) {
	input := c.Input
	if len(input) > 0 && !json.Valid(input) {
		// Still write the record: the bytes as a JSON string, not a broken line.
		input, _ = json.Marshal(string(input))
	}
	e.emit(c.At, &record.ToolRequested{
		CallID: c.CallID, Name: c.Name, Input: input,
		Operations: res.OperationNames(), Subjects: res.Subjects,
		DecisionRequired: required, DeadlineMS: deadlineMS, Seam: c.Seam,
	})
}

func (e *Engine) warn(code, msg string) { e.emit(nil, &record.Warning{Code: code, Message: msg}) }

func (e *Engine) emit(at *string, ev record.Event) {
	var err error
	if at != nil {
		err = e.cfg.Events.EmitAt(*at, ev)
	} else {
		err = e.cfg.Events.Emit(ev)
	}
	if err != nil && e.err == nil {
		e.err = err
	}
}
