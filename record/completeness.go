package record

import "fmt"

// Completeness states, the reader's verdict on a whole stream.
const (
	Complete     = "complete"
	Inconsistent = "inconsistent"
	Truncated    = "truncated"
)

// Completeness is the verdict on a recorded stream: complete when exactly
// one stream.closed is the last line and counts the lines before it. It
// never gates an exit code; the audit report prints it.
type Completeness struct {
	State  string
	Events uint64 // lines before the marker (complete only)
	Reason string // the marker's reason (complete only)
	Detail string // what is wrong (inconsistent, truncated)
}

// CheckCompleteness judges a stream from its parsed lines, in order.
func CheckCompleteness(lines []*EventLine) Completeness {
	var markers []int
	for i, l := range lines {
		if _, ok := l.Event.(*StreamClosed); ok {
			markers = append(markers, i)
		}
	}
	switch {
	case len(markers) == 0:
		return Completeness{State: Truncated, Detail: fmt.Sprintf("no stream.closed marker after %d line(s)", len(lines))}
	case len(markers) > 1:
		return Completeness{State: Inconsistent, Detail: fmt.Sprintf("%d stream.closed markers", len(markers))}
	}
	at := markers[0]
	if at != len(lines)-1 {
		return Completeness{State: Inconsistent, Detail: fmt.Sprintf("stream.closed is line %d of %d, not the last", at+1, len(lines))}
	}
	sc := lines[at].Event.(*StreamClosed)
	if sc.Events != uint64(at) {
		return Completeness{State: Inconsistent, Detail: fmt.Sprintf("stream.closed counts %d event(s) but %d line(s) precede it", sc.Events, at)}
	}
	return Completeness{State: Complete, Events: sc.Events, Reason: sc.Reason}
}

// Line renders the verdict as the audit report's stream line.
func (c Completeness) Line() string {
	switch c.State {
	case Complete:
		return fmt.Sprintf("stream: complete — %d event(s) before the marker, reason %s", c.Events, c.Reason)
	case Inconsistent:
		return "stream: INCONSISTENT — " + c.Detail
	default:
		return "stream: TRUNCATED — " + c.Detail
	}
}
