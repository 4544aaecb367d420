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
	var c CompletenessCheck
	for _, l := range lines {
		c.Add(l)
	}
	return c.Result()
}

// CompletenessCheck judges a stream line by line, as CheckCompleteness
// judges it whole, holding nothing of the lines: a reader of a long stream
// adds each line as it reads it.
type CompletenessCheck struct {
	lines   int
	markers int
	at      int           // the first marker's index
	closed  *StreamClosed // the first marker
}

// Add takes the stream's next line.
func (c *CompletenessCheck) Add(l *EventLine) {
	if sc, ok := l.Event.(*StreamClosed); ok {
		if c.markers == 0 {
			c.at, c.closed = c.lines, sc
		}
		c.markers++
	}
	c.lines++
}

// Result is the verdict on the lines added so far.
func (c *CompletenessCheck) Result() Completeness {
	switch {
	case c.markers == 0:
		return Completeness{State: Truncated, Detail: fmt.Sprintf("no stream.closed marker after %d line(s)", c.lines)}
	case c.markers > 1:
		return Completeness{State: Inconsistent, Detail: fmt.Sprintf("%d stream.closed markers", c.markers)}
	}
	if c.at != c.lines-1 {
		return Completeness{State: Inconsistent, Detail: fmt.Sprintf("stream.closed is line %d of %d, not the last", c.at+1, c.lines)}
	}
	if c.closed.Events != uint64(c.at) {
		return Completeness{State: Inconsistent, Detail: fmt.Sprintf("stream.closed counts %d event(s) but %d line(s) precede it", c.closed.Events, c.at)}
	}
	return Completeness{State: Complete, Events: c.closed.Events, Reason: c.closed.Reason}
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
