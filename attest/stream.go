package attest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/metaharness/metaharness/record"
)

// Bounds on a stream read from a file: one line, and the whole stream.
const (
	maxLineBytes   = 16 << 20
	maxStreamLines = 1 << 20
)

// ReadStream parses a recorded event stream, one metaharness.event/1 line
// per line; blank lines are skipped. A line that does not parse is an error
// naming its line number: a stream that cannot be read cannot be audited.
func ReadStream(r io.Reader) ([]*record.EventLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLineBytes)
	var lines []*record.EventLine
	for n := 1; sc.Scan(); n++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		if len(lines) == maxStreamLines {
			return nil, fmt.Errorf("event stream line %d: more than %d events", n, maxStreamLines)
		}
		l, err := record.ParseEvent(raw)
		if err != nil {
			return nil, fmt.Errorf("event stream line %d: %w", n, err)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the event stream: %w", err)
	}
	return lines, nil
}

// Tap collects a run's stream as the record.Writer writes it, for Evaluate:
// put it beside the run's stdout with io.MultiWriter. It keeps every line's
// place (completeness counts them) but drops the payloads evaluation never
// reads (texts, tool inputs and results: it keeps only that they were, and
// a result's error flag), so a long session costs little.
type Tap struct {
	mu      sync.Mutex
	lines   []*record.EventLine
	partial []byte
	err     error
}

// Write takes whole or partial lines; it never fails, so that the run's own
// stream is never cut short by the tap. A line that does not parse keeps
// its place, empty, and is reported by Err.
func (t *Tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		t.add(t.partial[:i])
		t.partial = t.partial[i+1:]
	}
}

func (t *Tap) add(raw []byte) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return
	}
	l, err := record.ParseEvent(raw)
	if err != nil {
		if t.err == nil {
			t.err = fmt.Errorf("event stream line %d: %w", len(t.lines)+1, err)
		}
		t.lines = append(t.lines, &record.EventLine{})
		return
	}
	switch ev := l.Event.(type) {
	case *record.SessionStarted, *record.SessionEnded, *record.StreamClosed, *record.ToolDecided, *record.Warning:
	case *record.ToolRequested: // H13 reads which calls there were, not their inputs
		l.Event = &record.ToolRequested{CallID: ev.CallID, Name: ev.Name, Seam: ev.Seam}
	case *record.ToolResult:
		l.Event = &record.ToolResult{CallID: ev.CallID, IsError: ev.IsError}
	case *record.Text:
		l.Event = &record.Text{}
	default:
		l.Event = nil
	}
	t.lines = append(t.lines, l)
}

// Lines returns what the tap has seen so far, in order. A line whose
// payload was dropped has a nil Event: these lines are for Evaluate only.
func (t *Tap) Lines() []*record.EventLine {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*record.EventLine{}, t.lines...)
}

// Err reports the first line that did not parse.
func (t *Tap) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
