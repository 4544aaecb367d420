package b10x

import (
	"context"
	"fmt"
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
}

// loopCall is one call id of the loop's record.
type loopCall struct {
	name, digest string
	shown, asked int
	answer       *record.Decision // metaharness's last answer at the hook
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
		c = &loopCall{name: f.Name, digest: frame.RequestDigest(f.CallID, f.Name, f.Arguments)}
		b.calls[f.CallID] = c
	}
	c.shown++
	b.changed()
}

// end says the record is over: a request still waiting will not be shown
// its call.
func (b *book) end() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended = true
	b.changed()
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

// hold holds a hook-ran or tool-completed line to the answers: ours says
// the line is a block carrying metaharness's own reason (its tool.decided
// says it already), and found are the gaps it shows.
func (b *book) hold(f Fact) (ours bool, found []*record.Warning) {
	b.mu.Lock()
	defer b.mu.Unlock()
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
	case f.Kind == "hook-ran" && f.Point == "before-call" && f.Decision == "proceed":
		switch {
		case answer == nil:
			gap(attest.HookSkipped, fmt.Sprintf("the loop's record says its before-call hooks let call %s proceed, and metaharness's hook was never asked about it", f.CallID))
		case !admitted:
			gap(attest.HookOverruled, fmt.Sprintf("metaharness denied call %s at the loop's before-call hook (%s), and the loop's record says its hooks let it proceed", f.CallID, answer.Reason))
		}
	case f.Kind == "hook-ran" && f.Point == "before-call" && f.Decision == "block":
		ours = answer != nil && answer.Decision == record.Deny && f.Reason == hook.Said(answer.Reason)
	case f.Kind == "tool-completed" && !f.Failed:
		switch {
		case answer == nil:
			gap(attest.HookSkipped, fmt.Sprintf("the loop ran call %s (it completed, not failed) without metaharness's before-call hook answering for it", f.CallID))
		case !admitted:
			gap(attest.HookOverruled, fmt.Sprintf("the loop ran call %s (it completed, not failed) though metaharness denied it at the before-call hook (%s)", f.CallID, answer.Reason))
		}
	}
	return ours, found
}
