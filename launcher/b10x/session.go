package b10x

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/record"
)

// NewSession: the loop is a child whose record is read and never answered.
// Its calls are shown to the engine as observations (tool.requested, no
// decision); its turns open the engine's turns.
func (Kind) NewSession(spec *launcher.Spec, plan *launcher.Plan, run launcher.Services) launcher.Session {
	return &session{run: run, plan: plan, spec: spec, reader: &Reader{Model: spec.Model}}
}

type session struct {
	run    launcher.Services
	plan   *launcher.Plan
	spec   *launcher.Spec
	reader *Reader
}

var _ launcher.Refuser = (*session)(nil)

// Drive reads stdout to its end, each line kept in the transcript before it
// is mapped; the terminal record is held back for the run to set the
// census into.
func (s *session) Drive(_ context.Context, p launcher.Pipes) *record.SessionEnded {
	eng := s.run.Engine()
	launcher.EachLine(p.Stdout, launcher.MaxVendorLine, func(line []byte) {
		_, _ = p.Transcript.Write(line)
		for _, it := range s.reader.Read(line) {
			switch ev := it.Event.(type) {
			case *record.SessionStarted:
				s.run.Started("", ev)
			case *record.TurnStarted:
				_ = eng.StartTurn(ev.Turn, nil)
			case *record.ToolRequested:
				eng.Observe(frame.Call{CallID: ev.CallID, Name: ev.Name, Input: ev.Input, Seam: ev.Seam})
			case *record.SessionEnded:
			default:
				s.run.Emit("", ev)
			}
		}
	}, func() { s.run.Emit("", launcher.LineTooLong("the b10x loop")) })
	for _, it := range s.reader.End() {
		s.run.Emit("", it.Event)
	}
	return s.reader.Terminal()
}

// Control: the loop takes no control line, so interrupting or halting it is
// stopping its process group.
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
