package b10x

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// NewSession: the loop is a child whose record is read and never answered
// on a wire of its own. Under observe its calls are shown to the engine as
// observations (tool.requested, no decision); under frame and ask each is
// held until metaharness's before-call hook presents it, and decided then
// (Answer). Its turns open the engine's turns.
func (Kind) NewSession(spec *kind.Spec, plan *kind.Plan, run kind.Services) kind.Session {
	return &session{run: run, plan: plan, spec: spec, reader: &Reader{Model: spec.Model}, hooked: decides(spec), book: newBook()}
}

type session struct {
	run    kind.Services
	plan   *kind.Plan
	spec   *kind.Spec
	reader *Reader
	// hooked: the plan put metaharness's hook first in the loop's hooks
	// file, so every call the approver admits is decided at it.
	hooked bool
	book   *book
	// notOnRecord counts the decision requests denied at once.
	notOnRecord atomic.Uint64
}

var (
	_ kind.Refuser       = (*session)(nil)
	_ kind.Answerer      = (*session)(nil)
	_ kind.RecordChecker = (*session)(nil)
)

// Drive reads stdout to its end, each line kept in the transcript before it
// is mapped; the terminal record is held back for the run to set the
// census into. Under frame and ask each line that says something of a call
// is held to metaharness's answers first (book.hold).
func (s *session) Drive(_ context.Context, p kind.Pipes) *record.SessionEnded {
	eng := s.run.Engine()
	kind.EachLine(p.Stdout, kind.MaxVendorLine, func(line []byte) {
		_, _ = p.Transcript.Write(line)
		items := s.reader.Read(line)
		fact, _ := s.reader.Fact()
		ours, found := false, []*record.Warning(nil)
		if s.hooked {
			ours, found = s.book.hold(fact)
		}
		for _, it := range items {
			switch ev := it.Event.(type) {
			case *record.SessionStarted:
				s.run.Started("", ev)
			case *record.TurnStarted:
				_ = eng.StartTurn(ev.Turn, nil)
			case *record.ToolRequested:
				seam := ev.Seam
				if s.hooked {
					seam = record.SeamHook // held until the hook presents it: one tool.requested
				}
				eng.Observe(frame.Call{CallID: ev.CallID, Name: ev.Name, Input: ev.Input, Seam: seam})
			case *record.ToolResult:
				eng.Settle(ev.CallID) // the call first, if no seam presented it
				s.run.Emit("", ev)
			case *record.Warning:
				if !ours { // a block with metaharness's own reason is its tool.decided already
					s.run.Emit("", ev)
				}
			case *record.SessionEnded:
			default:
				s.run.Emit("", ev)
			}
		}
		if s.hooked && fact.Kind == "tool-requested" {
			s.book.show(fact) // after the engine holds it, so the hook's presentation meets it
		}
		for _, w := range found {
			s.run.Emit("", w)
		}
	}, func() { s.run.Emit("", kind.LineTooLong("the b10x loop")) })
	for _, w := range s.book.end() {
		s.run.Emit("", w)
	}
	for _, it := range s.reader.End() {
		s.run.Emit("", it.Event)
	}
	return s.reader.Terminal()
}

// Answer decides a request of the decision channel: under frame and ask,
// the before-call hook's, for a call the loop's record shows and only once
// for each time it shows it (the loop dials its provider itself, so its
// record is what a request is held to). The call is presented as one that
// runs only as asked: the hook cannot hand the loop a new input. Anything
// else is denied at once, and recorded.
func (s *session) Answer(ctx context.Context, req decide.Request) record.Decision {
	why := ""
	switch {
	case !s.hooked:
		why = fmt.Sprintf("under --decisions %s metaharness decides none of the loop's calls", s.spec.Decisions)
	case req.Seam != record.SeamHook:
		why = "the loop is asked about its calls only at its before-call hook, and this request is at the " + req.Seam + " seam"
	default:
		why = s.book.claim(ctx, req)
	}
	if why != "" {
		s.notOnRecord.Add(1)
		s.run.Emit("", &record.Warning{Code: attest.DecisionNotOnRecord, Message: fmt.Sprintf("a decision request at the %s seam for %s (%s) was denied at once: %s", req.Seam, req.CallID, req.Tool, why)})
		d := record.DenyDecision("metaharness denied this request, and nothing ran: " + why)
		s.book.deniedAtOnce(req.CallID, d.Reason)
		return d
	}
	if d := s.run.Verify(req); d != nil {
		return *d
	}
	d := s.run.Engine().Decide(ctx, frame.Call{CallID: req.CallID, Name: req.Tool, Input: req.Input, Seam: record.SeamHook, NoReplace: true}, nil)
	s.book.answered(req.CallID, d)
	return d
}

// RequestsNotOnRecord counts the decision requests Answer denied at once
// (census.not_on_record).
func (s *session) RequestsNotOnRecord() uint64 { return s.notOnRecord.Load() }

// Control: the loop takes no control line, so interrupting or halting it is
// stopping it, SIGINT first (Descriptor.StopSignal), which the loop answers
// between calls with its own cancelled stop.
func (s *session) Control(c record.Command) error {
	switch c.(type) {
	case *record.Interrupt, *record.Halt:
		s.run.Stop()
		return nil
	}
	return fmt.Errorf("b10x cannot apply %s", c.CommandName())
}

// Refusal turns the loop's refused record into metaharness's refusal: the
// loop refused before any model request, so metaharness could not do its
// job (exit 2), named for what the loop could not read.
func (s *session) Refusal() error {
	reason, ok := s.reader.Refused()
	if !ok || s.reader.Terminal() != nil {
		return nil
	}
	b := flagsOf(s.spec)
	switch {
	case strings.HasPrefix(reason, "reading the context file"):
		return exit.Refuse(RefuseContextUnreadable, "b10x-harness refused the run before it started: %s; metaharness had read each --context file beneath --cwd and handed the loop a copy in its scratch tree, which the loop could not read: check that the scratch tree (under TMPDIR) is readable from the loop", reason)
	case b.APIKeySecret != "" && strings.Contains(reason, SecretMissing):
		return exit.Refuse(RefuseAPIKeySecretNotFound, "--api-key-secret %s: b10x-harness asked the OS secret store, which holds no such item (%s); store the key under that name first, or name the item that holds it", b.APIKeySecret, reason)
	case b.APIKeySecret != "" && strings.Contains(reason, SecretUnavailable):
		return exit.Refuse(RefuseAPIKeySecretUnavailable, "--api-key-secret %s: b10x-harness could not open the OS secret store (%s) with %s; start a session bus with an unlocked Secret Service (for example gnome-keyring-daemon) and export its address, or use --credentials api-key with %s", b.APIKeySecret, reason, s.busGiven(), KeyEnv)
	}
	return exit.Refuse(RefuseB10xRefused, "b10x-harness refused the run before it started: %s; nothing was sent to the model", reason)
}

// busGiven says which of the bus variables the loop was given.
func (s *session) busGiven() string {
	var given []string
	for _, kv := range s.plan.Env {
		k, v, _ := strings.Cut(kv, "=")
		if slices.Contains(BusEnv, k) {
			given = append(given, k+"="+v)
		}
	}
	if len(given) == 0 {
		return "neither " + strings.Join(BusEnv, " nor ") + " (the caller has neither)"
	}
	return strings.Join(given, " and ")
}
