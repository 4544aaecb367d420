package attest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"

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
