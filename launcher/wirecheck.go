package launcher

import (
	"fmt"
	"sync"

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
	wire     *loopback.Wire // nil: the wire is not seen
	view     *kind.WireView // nil with wire
	requests *RequestCheck  // nil with wire

	mu       sync.Mutex
	refused  map[string]bool // call id → the vendor's error result (a call it refused itself)
	mismatch bool            // something was reported
}

func newWireCheck(p *loopback.Proxy, k kind.Kind, plan *kind.Plan) *wireCheck {
	c := &wireCheck{refused: map[string]bool{}}
	if p != nil && p.Wire() != nil {
		c.wire = p.Wire()
		c.view = kind.NewWireView(c.wire)
		var match func(loopback.Call, decide.Request) error
		if m, ok := k.(kind.WireMatcher); ok {
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
	if c.wire == nil {
		return nil
	}
	var out []*record.Warning
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.wire.Responses() {
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
	if c.wire == nil {
		return nil
	}
	st := c.wire.Stats()
	if st.Overflow == 0 {
		return nil
	}
	return &record.Warning{Code: attest.WireUnchecked, Message: fmt.Sprintf("the wire view held %d bytes, its bound, and %d more were not held, so what they carried could not be checked", st.Limit, st.Overflow)}
}
