package claude

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// NewSession: Claude Code is a child whose record is read. Its stdout is
// stream-json; its calls are decided before they run by the PreToolUse hook
// and the owned surface's server it starts, which ask over the decision channel
// (Answer), and shown to the engine as observations when the record names
// them.
func (Kind) NewSession(_ *kind.Spec, plan *kind.Plan, run kind.Services) kind.Session {
	return &session{run: run, owned: len(plan.MCPServers) > 0, cwd: plan.Dir, home: envOf(plan, "HOME")}
}

type session struct {
	run   kind.Services
	owned bool // the plan gave the child the owned surface's server
	// cwd and home resolve a line's paths the way the hook shows them.
	cwd, home string
}

var _ kind.Answerer = (*session)(nil)

// Drive reads stdout to the end: every line is kept in the transcript first,
// then mapped. The terminal record is held back for the run to set the
// census into.
func (s *session) Drive(_ context.Context, p kind.Pipes) *record.SessionEnded {
	var tr Reader
	eng := s.run.Engine()
	started, turn := false, uint32(0)
	chk := kind.NewRecordCheck("Claude Code", s.run, func(call loopback.Call, ev *record.ToolRequested) error {
		return MatchLine(call, ev.Name, ev.Input)
	}, lastBlockText, WarnVendorText)
	kind.EachLine(p.Stdout, kind.MaxVendorLine, func(line []byte) {
		_, _ = p.Transcript.Write(line)
		for _, it := range tr.Read(line) {
			if !chk.Holds(it.Event) {
				continue
			}
			switch ev := it.Event.(type) {
			case *record.SessionStarted:
				if started {
					sum := sha256.Sum256(line)
					system, again := "system", "init (again)"
					s.run.Emit(it.At, &record.Opaque{Digest: hex.EncodeToString(sum[:]), VendorType: &system, VendorSubtype: &again})
					continue
				}
				started = true
				s.run.Started(it.At, ev)
				turn++
				_ = eng.StartTurn(turn, nil)
			case *record.ToolRequested:
				var at *string
				if it.At != "" {
					at = &it.At
				}
				eng.Observe(frame.Call{CallID: ev.CallID, Name: ev.Name, Input: hookForm(ev.Name, ev.Input, s.cwd, s.home), Seam: ev.Seam, At: at})
			case *record.ToolResult:
				eng.Settle(ev.CallID) // the call first, if no seam presented it
				s.run.Emit(it.At, ev)
			case *record.SessionEnded:
				if turn > 0 {
					_ = eng.EndTurn(turn, ev.StopReason, nil)
				}
			default:
				s.run.Emit(it.At, ev)
			}
		}
	}, func() { s.run.Emit("", kind.LineTooLong("Claude Code")) })
	return chk.Final(tr.Terminal())
}

// Control: headless Claude Code takes no control line, so interrupting or
// halting the turn is stopping the process group (reference notes a23).
func (s *session) Control(c record.Command) error { return kind.StopOnly(s.run, "claude", c) }

// Answer decides a request of the hook or the owned surface's server (the
// catalogue, or the default verbs). That server's tools are decided at its
// own seam, where the call is performed: the hook's matcher leaves them out
// (OwnedHookMatcher), and a hook that asks about one all the same
// abstains, so no call is decided twice.
func (s *session) Answer(ctx context.Context, req decide.Request) record.Decision {
	if req.Seam == record.SeamHook && s.owned && strings.HasPrefix(req.Tool, OwnedPrefix) {
		return record.AbstainDecision()
	}
	return s.run.Decide(ctx, req)
}

// lastBlockText is Claude Code's final answer as the wire shows it: the
// last block of the last response that completed, when that block is text
// and not blank (docs/wire-facts.md A2).
func lastBlockText(rs []loopback.Response) *string {
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].End != loopback.EndCompleted {
			continue
		}
		if n := len(rs[i].Items); n > 0 && rs[i].Items[n-1].Kind == loopback.KindText && strings.TrimSpace(rs[i].Items[n-1].Text) != "" {
			return &rs[i].Items[n-1].Text
		}
		return nil
	}
	return nil
}
