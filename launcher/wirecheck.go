package launcher

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// The wire check (H13): the loopback proxy sees every model response
// outside the child's reach, so what it read is the ground truth of what
// the model said. A decision request is answered only for a call the model
// made on the wire, once, and as the vendor shows that call (the kind's
// WireMatcher says through which rewrites); a vendor line that claims model
// output is recorded as the model's only when the wire holds it (the kind's
// session asks Services.Wire and reports a miss with NotOnWire); and, under
// frame or ask, a call the model made that no seam decided is a gap.

// settleWithin bounds how long a check waits for the proxy to have read
// what it relayed: the vendor acts on a chunk the moment it arrives, the
// view reads it just after.
const settleWithin = 2 * time.Second

// WireMatcher is a kind whose model traffic the proxy reads
// (Descriptor.ModelAPI). It says whether a decision request is the wire's
// call as the pinned vendor shows it at that seam (docs/wire-facts.md):
// nil, or why not.
type WireMatcher interface {
	MatchRequest(call loopback.Call, req decide.Request, plan *kind.Plan) error
}

// WireView is what a session reads of the wire: the proxy's view, read up
// to what has been relayed when it asks.
type WireView struct{ w *loopback.Wire }

// Call is the model's call id as the wire shows it.
func (v *WireView) Call(id string) (loopback.Call, bool) {
	if c, ok := v.w.Call(id); ok && c.Complete {
		return c, true
	}
	v.w.Settle(settleWithin)
	return v.w.Call(id)
}

// Responses are the model's responses so far, read up to now.
func (v *WireView) Responses() []loopback.Response {
	v.w.Settle(settleWithin)
	return v.w.Responses()
}

// RequestCheck holds decision requests to the calls the model made: a
// request is answered only for a call the wire shows, at most once for
// each time the model made it, and as the vendor shows that call (match;
// nil takes any input). Anything else is denied at once and counted apart
// from the decisions. The run's wire check builds one on the proxy's
// view; the C3 vectors build one on a scripted wire.
type RequestCheck struct {
	calls func(id string) (loopback.Call, bool)
	match func(loopback.Call, decide.Request) error

	mu      sync.Mutex
	decided map[string]int // call id → requests answered
	denied  uint64
}

// NewRequestCheck is a check of requests against calls, which looks a
// call up by its id on the wire.
func NewRequestCheck(calls func(id string) (loopback.Call, bool), match func(loopback.Call, decide.Request) error) *RequestCheck {
	return &RequestCheck{calls: calls, match: match, decided: map[string]int{}}
}

// Verify answers nil for a request the wire holds, else a deny and the
// warning that records it (not a decision: it is counted apart).
func (c *RequestCheck) Verify(req decide.Request) (*record.Decision, *record.Warning) {
	why := ""
	call, ok := c.calls(req.CallID)
	c.mu.Lock()
	switch {
	case !ok:
		why = "the model made no call " + req.CallID + " on the wire"
	case c.decided[req.CallID] >= call.Emitted:
		why = fmt.Sprintf("call %s was decided already (the model made it %d time(s))", req.CallID, call.Emitted)
	case c.match != nil:
		if err := c.match(call, req); err != nil {
			why = fmt.Sprintf("it is not the model's call %s (%s) as the wire shows it: %v", req.CallID, call.Name, err)
		}
	}
	if why == "" {
		c.decided[req.CallID]++
		c.mu.Unlock()
		return nil, nil
	}
	c.denied++
	c.mu.Unlock()
	d := record.DenyDecision("metaharness denied this request, and nothing ran: " + why)
	return &d, &record.Warning{Code: attest.DecisionNotOnWire, Message: fmt.Sprintf("a decision request at the %s seam for %s (%s) was denied at once: %s", req.Seam, req.CallID, req.Tool, why)}
}

// Decided counts the requests answered for call id.
func (c *RequestCheck) Decided(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.decided[id]
}

// Denied counts the requests Verify denied.
func (c *RequestCheck) Denied() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.denied
}

// wireCheck is the run's side of the check.
type wireCheck struct {
	view     *WireView     // nil: the wire is not seen
	requests *RequestCheck // nil with view

	mu       sync.Mutex
	refused  map[string]bool // call id → the vendor's error result (a call it refused itself)
	mismatch bool            // something was reported
}

func newWireCheck(p *loopback.Proxy, k Kind, plan *kind.Plan) *wireCheck {
	c := &wireCheck{refused: map[string]bool{}}
	if p != nil && p.Wire() != nil {
		c.view = &WireView{p.Wire()}
		var match func(loopback.Call, decide.Request) error
		if m, ok := k.(WireMatcher); ok {
			match = func(call loopback.Call, req decide.Request) error { return m.MatchRequest(call, req, plan) }
		}
		c.requests = NewRequestCheck(c.view.Call, match)
	}
	return c
}

// verify is the request check, where the wire is seen.
func (c *wireCheck) verify(req decide.Request) (*record.Decision, *record.Warning) {
	if c.requests == nil {
		return nil, nil
	}
	d, w := c.requests.Verify(req)
	if w != nil {
		c.noteMismatch()
	}
	return d, w
}

// requestsDenied counts the decision requests verify denied.
func (c *wireCheck) requestsDenied() uint64 {
	if c.requests == nil {
		return 0
	}
	return c.requests.Denied()
}

// result notes a tool result the record carries: an error result for a
// call no seam decided is the vendor refusing it itself.
func (c *wireCheck) result(r *record.ToolResult) {
	if r.IsError != nil && *r.IsError {
		c.mu.Lock()
		c.refused[r.CallID] = true
		c.mu.Unlock()
	}
}

// noteMismatch is told of a mismatch a session found in a vendor line.
func (c *wireCheck) noteMismatch() {
	c.mu.Lock()
	c.mismatch = true
	c.mu.Unlock()
}

// undecided are the warnings, at the wind-up under frame or ask, for each
// call the model made on the wire that no seam decided and the vendor did
// not refuse itself.
func (c *wireCheck) undecided() []*record.Warning {
	if c.view == nil {
		return nil
	}
	var out []*record.Warning
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.view.w.Responses() {
		for _, it := range r.Items {
			call := it.Call
			if call == nil || !it.Complete || c.requests.Decided(call.ID) > 0 || c.refused[call.ID] {
				continue
			}
			out = append(out, &record.Warning{Code: attest.CallNotDecided, Message: fmt.Sprintf("the model called %s (%s) in response %s on the wire, and no seam decided it: the vendor ran it, or could have, unasked", call.ID, call.Name, r.ID)})
		}
	}
	return out
}

// unchecked is the warning for a wire view whose bound kept content out,
// nil when it held everything.
func (c *wireCheck) unchecked() *record.Warning {
	if c.view == nil {
		return nil
	}
	st := c.view.w.Stats()
	if st.Overflow == 0 {
		return nil
	}
	return &record.Warning{Code: attest.WireUnchecked, Message: fmt.Sprintf("the wire view held %d bytes, its bound, and %d more were not held, so what they carried could not be checked", st.Limit, st.Overflow)}
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
