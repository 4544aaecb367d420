package kind

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// settleWithin bounds how long a check waits for the proxy to have read
// what it relayed: the vendor acts on a chunk the moment it arrives, the
// view reads it just after.
const settleWithin = 2 * time.Second

// WireMatcher is a kind whose model traffic the proxy reads
// (Descriptor.ModelAPI). It says whether a decision request is the wire's
// call as the pinned vendor shows it at that seam (docs/wire-facts.md):
// nil, or why not.
type WireMatcher interface {
	MatchRequest(call loopback.Call, req decide.Request, plan *Plan) error
}

// WireView is what a session reads of the wire: the proxy's view, read up
// to what has been relayed when it asks.
type WireView struct{ w *loopback.Wire }

// NewWireView is a session's view of w.
func NewWireView(w *loopback.Wire) *WireView { return &WireView{w} }

// Call is the model's call id as the wire shows it.
func (v *WireView) Call(id string) (loopback.Call, bool) {
	if c, ok := v.w.Call(id); ok && c.Complete {
		return c, true
	}
	v.w.Settle(settleWithin)
	return v.w.Call(id)
}

// Bind names, by the id its vendor made for it, the first call the wire
// gave no id (the Gemini API's functionCall) that match accepts, read up
// to now; it reports whether one was.
func (v *WireView) Bind(id string, match func(loopback.Call) bool) bool {
	if v.w.Bind(id, match) {
		return true
	}
	v.w.Settle(settleWithin)
	return v.w.Bind(id, match)
}

// Responses are the model's responses so far, read up to now.
func (v *WireView) Responses() []loopback.Response {
	v.w.Settle(settleWithin)
	return v.w.Responses()
}

// WireInput is a wire call's input as JSON the vendor parsed: its text,
// for an input the view kept unparsed (a duplicate key, which the vendors
// read last-wins).
func WireInput(call loopback.Call) json.RawMessage {
	if call.InputForm != loopback.InputUnparsed {
		return call.Input
	}
	var text string
	if json.Unmarshal(call.Input, &text) == nil {
		return json.RawMessage(text)
	}
	return call.Input
}

// RecordCheck holds a vendor's lines that claim model output to the wire
// (docs/wire-facts.md): a text to a text the model emitted under the id it
// names (a response's or an item's), a tool line to the model's call of
// that id, the vendor's own error lines to an exchange that failed, and
// the terminal record's final answer to the wire's. What the wire does not
// hold is reported (Services.NotOnWire) and not recorded, and a forged
// call's result goes with it. Without a wire every line stands.
type RecordCheck struct {
	vendor     string
	run        Services
	wire       *WireView
	matchCall  func(loopback.Call, *record.ToolRequested) error
	final      func([]loopback.Response) *string
	vendorText []string // warning codes of the vendor's own words
	forged     map[string]bool
}

// NewRecordCheck is the check of vendor's lines: matchCall holds a tool
// line to the model's call, final picks the final answer from the
// responses, and vendorText are the warning codes the kind records its
// vendor's own error lines under.
func NewRecordCheck(vendor string, run Services, matchCall func(loopback.Call, *record.ToolRequested) error, final func([]loopback.Response) *string, vendorText ...string) *RecordCheck {
	return &RecordCheck{vendor: vendor, run: run, wire: run.Wire(), matchCall: matchCall, final: final, vendorText: vendorText, forged: map[string]bool{}}
}

// Holds reports whether ev may be recorded as read.
func (c *RecordCheck) Holds(ev record.Event) bool {
	if c.wire == nil {
		return true
	}
	switch ev := ev.(type) {
	case *record.Text:
		id := ""
		if ev.RequestID != nil {
			id = *ev.RequestID
		}
		if !c.wire.hasText(id, ev.Text) {
			c.run.NotOnWire(fmt.Sprintf("%s claimed the model wrote %s under id %q", c.vendor, quoteShort(ev.Text), id))
			return false
		}
	case *record.ToolRequested:
		call, ok := c.wire.Call(ev.CallID)
		err := fmt.Errorf("the model made no call %s", ev.CallID)
		if ok {
			err = c.matchCall(call, ev)
		}
		if err != nil {
			c.forged[ev.CallID] = true
			c.run.NotOnWire(fmt.Sprintf("%s claimed the model called %s (%s): %v", c.vendor, ev.CallID, ev.Name, err))
			return false
		}
	case *record.ToolResult:
		if c.forged[ev.CallID] {
			c.run.NotOnWire(fmt.Sprintf("%s carried a result for %s, a call the model never made", c.vendor, ev.CallID))
			return false
		}
	case *record.Warning:
		if slices.Contains(c.vendorText, ev.Code) && !c.wire.failedExchange() {
			c.run.NotOnWire(fmt.Sprintf("%s carried an error line of its own (%s) while every model exchange on the wire succeeded", c.vendor, quoteShort(ev.Message)))
			return false
		}
	}
	return true
}

// Final holds the terminal record's answer to the wire: it stands when
// it is a text the model emitted (which of them a vendor calls final is
// its own rule), and is otherwise reported and replaced by the wire's.
func (c *RecordCheck) Final(t *record.SessionEnded) *record.SessionEnded {
	if c.wire == nil || t == nil || t.FinalAnswer == nil {
		return t
	}
	rs := c.wire.Responses()
	for _, r := range rs {
		for _, it := range r.Items {
			if it.Kind == loopback.KindText && it.Text == t.FinalAnswer.Text {
				return t
			}
		}
	}
	want := c.final(rs)
	c.run.NotOnWire(fmt.Sprintf("%s's terminal record claimed the final answer %s", c.vendor, quoteShort(t.FinalAnswer.Text)))
	if want == nil {
		t.FinalAnswer = nil
	} else {
		t.FinalAnswer = &record.FinalAnswer{Text: *want, TurnID: t.FinalAnswer.TurnID}
	}
	return t
}

// hasText: the model emitted exactly text under id, a response's id or an
// item's.
func (v *WireView) hasText(id, text string) bool {
	look := func() bool {
		r, ok := v.w.Response(id)
		for _, it := range r.Items {
			if ok && it.Kind == loopback.KindText && it.Text == text && (r.ID == id || it.ID == id) {
				return true
			}
		}
		return false
	}
	if look() {
		return true
	}
	v.w.Settle(settleWithin)
	return look()
}

// failedExchange: some model exchange did not end as a response ends (an
// error, a cut stream), or none was made: what licenses a vendor's own
// error lines.
func (v *WireView) failedExchange() bool {
	rs := v.Responses()
	if len(rs) == 0 {
		return true
	}
	for _, r := range rs {
		if r.End != loopback.EndCompleted || r.Status >= 400 {
			return true
		}
	}
	return false
}

// quoteShort quotes s for a warning, bounded.
func quoteShort(s string) string {
	const max = 120
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
