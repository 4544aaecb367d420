package traceir

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/record"
)

// Run is one run a page shows: its event stream and, when it was given,
// the attestation document the run wrote beside it (run --attestation,
// --records-dir), which alone holds the verdicts, the exit code and the
// loopback proxy's records of the model requests.
type Run struct {
	Stream *Stream
	// Attestation is the run's attestation document; nil when none was
	// given, and the page then says that the verdicts are not on it.
	Attestation *attest.Document
	// AttestationName is where the document was read from, for the page.
	AttestationName string
}

// decision is what became of a tool call, as its last tool.decided says.
type decision uint8

const (
	undecided decision = iota
	allowed
	denied
	replaced
	abstained
)

var decisionWords = [...]string{undecided: "undecided", allowed: "allowed", denied: "denied", replaced: "replaced", abstained: "abstained"}

func (d decision) String() string { return decisionWords[d] }

func decisionOf(s string) decision {
	switch s {
	case record.Allow:
		return allowed
	case record.Deny:
		return denied
	case record.Replace:
		return replaced
	case record.Abstain:
		return abstained
	}
	return undecided
}

// point is where something happened in a run: the stream's line, and the
// time the stream had reached by then (the last timestamp at or before
// that line; 0 before the first), in milliseconds.
type point struct {
	line int32
	ms   int64
}

// callRef is a tool call as the first pass finds it: where its lines lie
// in the stream (n 0: none), when it began and ended, and the few facts
// that place it on the timeline and compare it with another run's calls.
type callRef struct {
	requested, decided, result lineRef
	step                       int32 // the step it was made in, -1 before any
	turn                       uint32
	from, to                   point
	dec                        decision
	asked                      bool // a seam asked for a decision (decision_required)
	failed                     bool // its result is an error
	name, input                uint32
}

// span is a turn: when it started and ended (open: no turn.ended).
type span struct {
	turn     uint32
	from, to point
	open     bool
}

// mark is one thing on a lane of the timeline that is not a call: a
// model request the stream records, or a warning.
type mark struct {
	at   point
	ref  lineRef
	kind warnKind
}

// runView is everything the page shows of a run but its calls' and
// events' text, which are read again from the stream as they are written.
type runView struct {
	s       *Stream
	doc     *attest.Document
	docName string
	digest  string
	lines   int

	run, kind, version, model string
	observed                  []string // models session.ended observed, other than model
	hermetic                  *record.Attestation
	withheld                  []record.Withheld
	withheldStated            bool
	ended                     *record.SessionEnded
	closed                    *record.StreamClosed
	complete                  record.Completeness
	counted                   record.Census // from the tool.decided events
	names                     map[string]int

	calls    []callRef // in the order they were requested
	steps    []string  // each step.entered, in order
	turns    []span
	relayed  []mark // the loopback proxy's records of model requests, as warnings
	usage    []mark // usage events, the vendor's accounting of its requests
	warnings []mark // every other warning

	firstMS, lastMS int64 // the stream's earliest and latest timestamps
	timed           bool  // the stream carries timestamps
	from, to        int64 // the timeline's axis (settleAxis)
	byTime          bool  // in milliseconds, else in lines
}

// viewOf is the first pass over a run: everything the page shows of it
// but its calls' text and its events.
func viewOf(r Run) (*runView, error) {
	s := r.Stream
	v := &runView{s: s, doc: r.Attestation, docName: r.AttestationName, names: map[string]int{},
		counted: record.Census{BySeam: map[string]uint64{}, ByDecider: map[string]uint64{}}}
	var complete record.CompletenessCheck
	byCall := map[string]int{}
	var now int64 // the last timestamp seen
	var turn uint32
	h := newDigest()
	n, err := s.events(h, false, func(p *parsedLine) error {
		l := p.l
		if v.run == "" {
			v.run = l.Run
		}
		complete.Add(l)
		v.names[l.Name()]++
		if ms, ok := stamp(l); ok {
			if !v.timed || ms < v.firstMS {
				v.firstMS = ms
			}
			if !v.timed || ms > v.lastMS {
				v.lastMS = ms
			}
			v.timed = true
		}
		at := pointOf(l, p.n, &now)
		here := lineRef{n: p.n, off: p.off, size: len(p.line)}
		switch e := l.Event.(type) {
		case *record.SessionStarted:
			if v.kind == "" {
				v.kind, v.version, v.model = e.Adapter, deref(e.HarnessVersion), deref(e.Model)
				v.hermetic, v.withheld, v.withheldStated = e.Hermetic, e.Withheld, e.Withheld != nil
			}
		case *record.SessionEnded:
			if v.ended == nil {
				v.ended = e
			}
		case *record.StreamClosed:
			if v.closed == nil {
				v.closed = e
			}
		case *record.StepEntered:
			v.steps = append(v.steps, fmt.Sprintf("%s/%s #%d, attempt %d", e.Step.Workflow, e.Step.State, e.Step.Index, e.Step.Attempt))
		case *record.TurnStarted:
			turn = e.Turn
			v.turns = append(v.turns, span{turn: e.Turn, from: at, to: at, open: true})
		case *record.TurnEnded:
			for i := len(v.turns) - 1; i >= 0; i-- {
				if t := &v.turns[i]; t.turn == e.Turn && t.open {
					t.to, t.open = at, false
					break
				}
			}
		case *record.ToolRequested:
			if i, seen := byCall[e.CallID]; seen {
				// The vendor's record and the seam present one call twice.
				v.calls[i].asked = v.calls[i].asked || e.DecisionRequired
				return nil
			}
			byCall[e.CallID] = len(v.calls)
			v.calls = append(v.calls, callRef{requested: here, step: int32(len(v.steps) - 1), turn: turn, from: at, to: at,
				asked: e.DecisionRequired, name: hash32(e.Name), input: hash32(string(e.Input))})
		case *record.ToolDecided:
			v.counted.Count(e.Decision.Decision, e.Seam, e.DecidedBy)
			if i, ok := byCall[e.CallID]; ok {
				c := &v.calls[i]
				c.decided, c.dec = here, decisionOf(e.Decision.Decision)
				if c.result.n == 0 {
					c.to = at
				}
			}
		case *record.ToolResult:
			if i, ok := byCall[e.CallID]; ok {
				c := &v.calls[i]
				c.result, c.to, c.failed = here, at, e.IsError != nil && *e.IsError
			}
		case *record.UsageEvent:
			v.usage = append(v.usage, mark{at: at, ref: here, kind: warnRequest})
		case *record.Warning:
			switch e.Code {
			case attest.DecisionNotOnWire:
				v.counted.NotOnWire++
			case attest.DecisionNotOnRecord:
				v.counted.NotOnRecord++
			}
			k := warnKindOf(e.Code)
			if k == warnRequest {
				v.relayed = append(v.relayed, mark{at: at, ref: here, kind: k})
			} else {
				v.warnings = append(v.warnings, mark{at: at, ref: here, kind: k})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	v.digest, v.lines = digestOf(h), n
	v.complete = complete.Result()
	if v.ended != nil {
		for _, m := range v.ended.ObservedModels {
			if m.Model != v.model && !slices.Contains(v.observed, m.Model) {
				v.observed = append(v.observed, m.Model)
			}
		}
	}
	if v.kind == "" {
		v.kind, v.version, v.model = "?", "?", "?"
	}
	if d := v.doc; d != nil && d.Kind != "" {
		v.kind = d.Kind
	}
	v.settleAxis()
	return v, nil
}

// stamp is the line's timestamp in milliseconds, when it carries one.
func stamp(l *record.EventLine) (int64, bool) {
	if l.At == nil {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, *l.At)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// warnKind sorts a warning by what a reviewer looks for on the timeline.
type warnKind uint8

const (
	warnOther warnKind = iota
	// warnRequest: a model request the loopback proxy relayed (or a
	// usage event, the vendor's accounting of one); not a warning at all.
	warnRequest
	// warnForged: a decision request for a call the model (or the
	// vendor's own record) never made, or a model request that was not
	// the vendor's own.
	warnForged
	// warnNotOnWire: a line of the record the wire does not hold, a call
	// nobody decided, a hook skipped or overruled.
	warnNotOnWire
	// warnThrottle: the upstream throttled a request, or refused the
	// account for its quota.
	warnThrottle
	// warnEgress: a request the proxy or its egress gate refused.
	warnEgress
)

var warnKinds = [...]struct{ class, label string }{
	warnOther:     {"w-other", "warning"},
	warnRequest:   {"w-request", "model request"},
	warnForged:    {"w-forged", "forged request"},
	warnNotOnWire: {"w-wire", "not on the wire"},
	warnThrottle:  {"w-throttle", "throttle"},
	warnEgress:    {"w-egress", "refused egress"},
}

func warnKindOf(code string) warnKind {
	switch code {
	case record.WarnLoopbackRequest:
		return warnRequest
	case attest.DecisionNotOnWire, attest.DecisionNotOnRecord, attest.DecisionForged, attest.ModelRequestNotVendor:
		return warnForged
	case attest.RecordNotOnWire, attest.CallNotDecided, attest.WireUnchecked, attest.HookSkipped, attest.HookOverruled:
		return warnNotOnWire
	case record.WarnLoopbackUpstreamThrottled, record.WarnLoopbackUpstreamQuota:
		return warnThrottle
	case attest.EgressRefused, record.WarnLoopbackRefused:
		return warnEgress
	}
	return warnOther
}

// census is the run's decision census and where it came from: the
// attestation's, the terminal record's, or the tool.decided events
// counted.
func (v *runView) census() (record.Census, string) {
	switch {
	case v.doc != nil:
		return v.doc.Census, v.doc.CensusSource
	case v.ended != nil && v.ended.Census != nil:
		return *v.ended.Census, "terminal record"
	}
	return v.counted, "tool.decided events"
}

// settleAxis fixes the run's time axis once the first pass is done: in
// milliseconds when the stream carries timestamps that differ (the loopback
// proxy's records of the model requests widen it), else in lines, the
// events' order.
func (v *runView) settleAxis() {
	v.from, v.to, v.byTime = 1, int64(max(v.lines, 2)), false
	if !v.timed {
		return
	}
	from, to := v.firstMS, v.lastMS
	for _, r := range v.proxyRecords() {
		from, to = min(from, r.Start.UnixMilli()), max(to, r.Start.Add(r.Duration).UnixMilli())
	}
	if to > from {
		v.from, v.to, v.byTime = from, to, true
	}
}

// proxyRecords are the loopback proxy's records of the run's requests, from
// its attestation document; none without one.
func (v *runView) proxyRecords() []record.ProxyRecord {
	if v.doc == nil || v.doc.Loopback == nil {
		return nil
	}
	return v.doc.Loopback.Requests
}

// on is where p lies on the run's axis.
func (v *runView) on(p point) int64 {
	switch {
	case !v.byTime:
		return int64(p.line)
	case p.ms == 0:
		return v.firstMS // before the stream's first timestamp
	}
	return p.ms
}

// duration is how long the run took and how the page knows it.
func (v *runView) duration() string {
	if v.ended != nil && v.ended.DurationMS != nil {
		return fmtMS(int64(*v.ended.DurationMS)) + " (the vendor's terminal record)"
	}
	if v.timed && v.lastMS > v.firstMS {
		return "about " + fmtMS(v.lastMS-v.firstMS) + " (from the stream's first timestamp to its last)"
	}
	if recs := v.proxyRecords(); len(recs) > 0 {
		from, to := recs[0].Start, recs[0].Start.Add(recs[0].Duration)
		for _, r := range recs {
			if r.Start.Before(from) {
				from = r.Start
			}
			if end := r.Start.Add(r.Duration); end.After(to) {
				to = end
			}
		}
		return "at least " + fmtMS(to.Sub(from).Milliseconds()) + " (the loopback proxy's records, from the first model request to the last answer)"
	}
	return "not recorded (no terminal record gives it, and the stream carries no timestamps)"
}

// fmtMS is a duration in milliseconds as a reader takes it in.
func fmtMS(ms int64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%d ms", ms)
	case ms < 60_000:
		return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", float64(ms)/1000), "0"), ".0") + " s"
	}
	return (time.Duration(ms) * time.Millisecond).Round(time.Second).String()
}
