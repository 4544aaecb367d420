package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// ErrClosed is returned by a Writer after its stream.closed line.
var ErrClosed = errors.New("record: the stream is closed: stream.closed was the last line")

// Writer writes one run's event stream. It is the one place seq is assigned,
// and it guarantees stream.closed is the last line it writes. It is safe for
// concurrent use; lines are written whole, one Write call each.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	run    string
	seq    uint64
	closed bool
}

// NewWriter starts a stream for run id run on w.
func NewWriter(w io.Writer, run string) *Writer {
	return &Writer{w: w, run: run}
}

// Emit writes an untimed event.
func (w *Writer) Emit(ev Event) error { return w.emit(nil, ev) }

// EmitAt writes an event carrying the vendor's own timestamp, verbatim.
func (w *Writer) EmitAt(at string, ev Event) error { return w.emit(&at, ev) }

func (w *Writer) emit(at *string, ev Event) error {
	if _, ok := ev.(*StreamClosed); ok {
		return errors.New("record: stream.closed is written by Writer.Close, not Emit")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.writeLocked(at, ev)
}

// Close writes stream.closed with the count of lines before it and the
// reason, and refuses every later write. process may be nil when the runner
// did not see the child end (scripted runners must not invent it).
func (w *Writer) Close(reason string, process *Process) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	return w.writeLocked(nil, &StreamClosed{Events: w.seq, Reason: reason, RunID: w.run, Process: process})
}

// Closed reports whether stream.closed has been written.
func (w *Writer) Closed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Lines reports how many lines have been written.
func (w *Writer) Lines() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seq
}

func (w *Writer) writeLocked(at *string, ev Event) error {
	line, err := EncodeEvent(w.seq+1, w.run, at, ev)
	if err != nil {
		return err
	}
	if _, err := w.w.Write(line); err != nil {
		return fmt.Errorf("record: writing %s line %d: %w", ev.EventName(), w.seq+1, err)
	}
	w.seq++
	return nil
}

// EncodeEvent renders one event line, newline included. Header keys come
// first in a fixed order; the payload's keys follow in field order.
func EncodeEvent(seq uint64, run string, at *string, ev Event) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"format":"` + EventFormat + `","seq":`)
	b.WriteString(strconv.FormatUint(seq, 10))
	b.WriteString(`,"run":`)
	if err := writeJSON(&b, run); err != nil {
		return nil, err
	}
	if at != nil {
		b.WriteString(`,"at":`)
		if err := writeJSON(&b, *at); err != nil {
			return nil, err
		}
	}
	b.WriteString(`,"event":"` + ev.EventName() + `"`)
	if err := appendPayload(&b, ev); err != nil {
		return nil, fmt.Errorf("record: encoding %s: %w", ev.EventName(), err)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// EncodeCommand renders one command line, newline included.
func EncodeCommand(id string, c Command) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"format":"` + CommandFormat + `","id":`)
	if err := writeJSON(&b, id); err != nil {
		return nil, err
	}
	b.WriteString(`,"command":"` + c.CommandName() + `"`)
	if err := appendPayload(&b, c); err != nil {
		return nil, fmt.Errorf("record: encoding %s: %w", c.CommandName(), err)
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// appendPayload writes the payload object's members after the header keys.
// EncodePayload renders an event's payload alone, as one JSON object whose
// keys are in wire order, the way EncodeEvent writes them.
func EncodePayload(ev Event) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if err := appendPayload(&b, ev); err != nil {
		return nil, err
	}
	out := b.Bytes()
	if len(out) > 1 {
		out = append([]byte{'{'}, out[2:]...) // drop the separating comma
	}
	return append(out, '}'), nil
}

func appendPayload(b *bytes.Buffer, v any) error {
	var p bytes.Buffer
	if err := writeJSON(&p, v); err != nil {
		return err
	}
	obj := bytes.TrimSpace(p.Bytes())
	if len(obj) < 2 || obj[0] != '{' {
		return errors.New("payload is not a JSON object")
	}
	inner := obj[1 : len(obj)-1]
	if len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	return nil
}

// marshal is json.Marshal without HTML escaping, for MarshalJSON methods, so
// that nested values read the same as the rest of the line.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	err := writeJSON(&b, v)
	return b.Bytes(), err
}

// writeJSON encodes v without HTML escaping (the stream is read by programs
// and people, not browsers) and without the encoder's trailing newline.
func writeJSON(b *bytes.Buffer, v any) error {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1)
	return nil
}
