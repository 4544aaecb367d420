package b10x

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/b10x/hook"
	"github.com/metaharness/metaharness/record"
)

// recordWait bounds how long a decision request waits for the loop's
// record to show its call: the loop flushes tool-requested before it
// starts the hook, so the line is already on its way when the hook asks.
const recordWait = 5 * time.Second

// MaxArguments is the loop's bound on one call's arguments as compact JSON
// (MAX_TOOL_ARGUMENT_BYTES): a call over it is refused before its hook,
// and no line of the record says so but the failed completion.
const MaxArguments = 64 << 10

// book is what the loop's record says of each call, against what
// metaharness answered at its hook (docs/b10x-hooks.md): a request is
// answered only for a call the record shows, once per showing, with its
// name and arguments; the record's hook-ran and tool-completed lines are
// held to the answers.
type book struct {
	mu    sync.Mutex
	wake  chan struct{} // closed, and replaced, at every change
	calls map[string]*loopCall
	ended bool // the record has ended: nothing more will show
	// open is the call between its tool-requested and tool-completed
	// lines: an unpublished-tool warning there is about it.
	open string
	// unanswered are the gaps of calls that ended failed with nothing on
	// the record to say why no hook answered for them, held until the
	// record goes on: a run cancelled between calls, or past its deadline,
	// records each call it will not run as a request and a failed
	// completion and stops there, which excuses them.
	unanswered []*record.Warning
}

// loopCall is one call id of the loop's record.
type loopCall struct {
	name, digest string
	oversized    bool // over MaxArguments: the loop refuses it before its hook
	shown, asked int
	answer       *record.Decision // metaharness's answer to the request that took the showing
	deniedAtOnce []string         // what the hook was told for each other request, denied at once
	refused      bool             // refused before its hook: unpublished, or the approver said no
	hookRan      bool             // a before-call hook-ran line is on the record
	blocked      bool             // that line blocked or failed the call
	flagged      bool             // a gap was reported for it
}

func newBook() *book { return &book{wake: make(chan struct{}), calls: map[string]*loopCall{}} }

func (b *book) changed() {
	close(b.wake)
	b.wake = make(chan struct{})
}

// show notes a tool-requested line.
func (b *book) show(f Fact) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.calls[f.CallID]
	if c == nil {
		var compact bytes.Buffer
		oversized := json.Compact(&compact, f.Arguments) != nil || compact.Len() > MaxArguments
		c = &loopCall{name: f.Name, digest: frame.RequestDigest(f.CallID, f.Name, f.Arguments), oversized: oversized}
		b.calls[f.CallID] = c
	}
	c.shown++
	b.open = f.CallID
	b.changed()
}

// end says the record is over: a request still waiting will not be shown
// its call, and the calls held unanswered are gaps, for no stop excused
// them.
func (b *book) end() []*record.Warning {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	b.changed()
	found := b.unanswered
	b.unanswered = nil
	return found
}

// claim takes one answer of req's call, waiting briefly for the record to
// show it: "" when it may be decided, else why not.
func (b *book) claim(ctx context.Context, req decide.Request) string {
	timer := time.NewTimer(recordWait)
	defer timer.Stop()
	digest := frame.RequestDigest(req.CallID, req.Tool, req.Input)
	for {
		b.mu.Lock()
		c := b.calls[req.CallID]
		switch {
		case c != nil && c.digest != digest:
			b.mu.Unlock()
			return fmt.Sprintf("it is not the loop's call %s (%s) as its record shows it: the name or the arguments differ", req.CallID, c.name)
		case c != nil && c.asked < c.shown:
			c.asked++
			b.mu.Unlock()
			return ""
		case c != nil:
			b.mu.Unlock()
			return fmt.Sprintf("call %s was decided already (the loop's record shows it %d time(s))", req.CallID, c.shown)
		case b.ended:
			b.mu.Unlock()
			return "the loop's record ended without showing a call " + req.CallID
		}
		wake := b.wake
		b.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return "the loop's record did not show a call " + req.CallID + " before the request was given up"
		case <-timer.C:
			return fmt.Sprintf("the loop's record shows no call %s (waited %s)", req.CallID, recordWait)
		}
	}
}

// answered notes metaharness's answer for a call.
func (b *book) answered(id string, d record.Decision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.calls[id]; c != nil {
		c.answer = &d
	}
}

// deniedAtOnce notes a request for a call the record shows that was
// denied without a decision, with reason: should the loop's hook-ran line
// carry it, that request was the loop's own hook.
func (b *book) deniedAtOnce(id, reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.calls[id]; c != nil {
		c.deniedAtOnce = append(c.deniedAtOnce, hook.Said(reason))
	}
}

// hold holds one line of the record (f, the zero Fact for a line that says
// nothing of the calls) to the answers: ours says the line is a block
// carrying a reason metaharness gave (its tool.decided or its
// DECISION_NOT_ON_RECORD says it already), and found are the gaps it
// shows.
func (b *book) hold(f Fact) (ours bool, found []*record.Warning) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch f.Kind {
	case "tool-requested", "tool-completed":
		// Possibly the calls a stopping run refused: judged on the line
		// after them.
	case "finished":
		if f.Stop != "cancelled" && f.Stop != "deadline" {
			found = b.unanswered
		}
		b.unanswered = nil
	default:
		found, b.unanswered = b.unanswered, nil
	}
	c := b.calls[f.CallID]
	var answer *record.Decision
	if c != nil {
		answer = c.answer
	}
	gap := func(code, msg string) {
		if c != nil {
			if c.flagged {
				return
			}
			c.flagged = true
		}
		found = append(found, &record.Warning{Code: code, Message: msg})
	}
	admitted := answer != nil && (answer.Decision == record.Allow || answer.Decision == record.Abstain)
	switch {
	case f.Kind == "warning" && f.Code == "unpublished-tool":
		if open := b.calls[b.open]; open != nil {
			open.refused = true
		}
	case f.Kind == "approval-resolved" && !f.Approved && c != nil:
		c.refused = true
	case f.Kind == "hook-ran" && f.Point == "before-call":
		if c != nil {
			c.hookRan = true
			c.blocked = f.Decision != "proceed"
		}
		switch {
		case f.Decision == "proceed" && answer == nil:
			gap(attest.HookSkipped, fmt.Sprintf("the loop's record says its before-call hooks let call %s proceed, and metaharness's hook was never asked about it", f.CallID))
		case f.Decision == "proceed" && !admitted:
			gap(attest.HookOverruled, fmt.Sprintf("metaharness denied call %s at the loop's before-call hook (%s), and the loop's record says its hooks let it proceed", f.CallID, answer.Reason))
		case f.Decision != "block" || c == nil:
		case answer != nil && answer.Decision == record.Deny && f.Reason == hook.Said(answer.Reason):
			ours = true
		case slices.Contains(c.deniedAtOnce, f.Reason):
			// The loop's hook was a request metaharness denied at once; the
			// one that took the call's answer was not the loop's.
			ours = true
			if answer != nil {
				gap(attest.DecisionForged, fmt.Sprintf("the request that took call %s's one answer (%s, its tool.decided) was not the loop's before-call hook: the loop's hook asked after it and was denied at once, as its hook-ran line shows, so the call did not run; the first request was a forgery with the call's id, name and arguments", f.CallID, answer.Decision))
			}
		}
	case f.Kind == "tool-completed":
		b.open = ""
		switch {
		case c != nil && answer != nil && !c.hookRan:
			gap(attest.HookSkipped, fmt.Sprintf("metaharness answered a request for call %s (%s), and the loop's record shows no before-call hook-ran line for it: the loop did not record asking its hook, so the answer went to a request that was not its hook's", f.CallID, answer.Decision))
		case !f.Failed && answer == nil:
			gap(attest.HookSkipped, fmt.Sprintf("the loop ran call %s (it completed, not failed) without metaharness's before-call hook answering for it", f.CallID))
		case !f.Failed && !admitted:
			gap(attest.HookOverruled, fmt.Sprintf("the loop ran call %s (it completed, not failed) though metaharness denied it at the before-call hook (%s)", f.CallID, answer.Reason))
		case f.Failed && answer == nil && c != nil && !c.refused && !c.oversized && !c.blocked && !c.flagged:
			c.flagged = true
			b.unanswered = append(b.unanswered, &record.Warning{Code: attest.HookSkipped, Message: fmt.Sprintf("call %s ended failed without metaharness's before-call hook answering for it, and the loop's record shows nothing that refused it before its hook (no unpublished-tool warning, no denial by the approver, arguments within the loop's %d-byte bound, no hook-ran line, no stop right after it): a tool that fails may have done its damage first", f.CallID, MaxArguments)})
		}
	}
	return ours, found
}
