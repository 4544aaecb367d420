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

// Tap evaluates a run's stream as the record.Writer writes it: put it
// beside the run's stdout with io.MultiWriter. It keeps no line: each is
// read and added to a Scan, which holds only what a verdict needs, so a
// long session costs what its tool calls do and nothing per event.
type Tap struct {
	mu      sync.Mutex
	scan    Scan
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
			t.err = fmt.Errorf("event stream line %d: %w", t.scan.lines+1, err)
		}
		l = &record.EventLine{}
	}
	t.scan.Add(l)
}

// Evaluate judges what the tap has seen so far, as Evaluate judges those
// lines.
func (t *Tap) Evaluate(l Launch) *Evaluation {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.scan.Evaluate(l)
}

// Err reports the first line that did not parse.
func (t *Tap) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
