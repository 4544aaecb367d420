package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// ErrClosed is returned by a Writer after its stream.closed line.
var ErrClosed = errors.New("record: the stream is closed: stream.closed was the last line")

// ErrNoSink is returned for a line that no sink took: every sink of the
// stream has failed.
var ErrNoSink = errors.New("record: every sink of the stream has failed")

// WarnSinkFailed is the warning a Writer writes into its other sinks when
// one stops taking lines, naming it, the line and the error.
const WarnSinkFailed = "STREAM_SINK_FAILED"

// Sink is one destination of a stream (stdout, an --events file, the
// floor's tap); Name is how a failure names it.
type Sink struct {
	Name string
	W    io.Writer
}

// SinkFailure is a sink that stopped taking lines: Line is the first line
// it did not take. The stream goes on in the other sinks.
type SinkFailure struct {
	Sink  string `json:"sink"`
	Line  uint64 `json:"line"`
	Error string `json:"error"`
}

// Writer writes one run's event stream to one or more sinks. It is the one
// place seq is assigned, and it guarantees stream.closed is the last line it
// writes. A sink whose write fails is written no more: the others go on
// with every line, numbered without a gap or a repeat, and hear of the
// failure in a WarnSinkFailed line. It is safe for concurrent use; lines
// are written whole, one Write call per sink each.
type Writer struct {
	mu       sync.Mutex
	sinks    []sink
	run      string
	seq      uint64
	closed   bool
	failures []SinkFailure
	onFail   func(SinkFailure)
	first    func() Event // Precede's, until the next line
}

type sink struct {
	Sink
	failed bool
}

// NewWriter starts a stream for run id run on w alone.
func NewWriter(w io.Writer, run string) *Writer {
	return NewStream(run, nil, Sink{Name: "the stream", W: w})
}

// NewStream starts a stream for run id run on sinks, in order. onFail, when
// set, hears of each sink's failure once, as it happens, with the Writer's
// lock held: it must not write to the Writer.
func NewStream(run string, onFail func(SinkFailure), sinks ...Sink) *Writer {
	w := &Writer{run: run, onFail: onFail}
	for _, s := range sinks {
		w.sinks = append(w.sinks, sink{Sink: s})
	}
	return w
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
	w.settleLocked()
	return w.writeLocked(at, ev)
}

// Precede puts first before the next line written, whoever writes it
// (Close included): that write waits for first, and the event first
// returns, if not nil, is written ahead of it. A fact worked out alongside
// the run (the vendor's --version, probed beside the spawn) so lands where
// it would have landed had the run waited for it. first runs with the
// Writer's lock held and must not write to it.
func (w *Writer) Precede(first func() Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.first = first
}

// Settle writes what Precede put before the next line now, without a line
// after it.
func (w *Writer) Settle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.settleLocked()
	}
}

func (w *Writer) settleLocked() {
	f := w.first
	if f == nil {
		return
	}
	w.first = nil
	if ev := f(); ev != nil {
		_ = w.writeLocked(nil, ev)
	}
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
	w.settleLocked()
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

// Failures lists the sinks that failed, in the order they did.
func (w *Writer) Failures() []SinkFailure {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]SinkFailure{}, w.failures...)
}

// writeLocked writes one line to every sink still taking lines. The line
// counts (seq moves on) when at least one took it. Each sink that failed on
// it is reported, and, unless the line was stream.closed, which stays last,
// named in a warning line to the sinks left.
func (w *Writer) writeLocked(at *string, ev Event) error {
	n := w.seq + 1
	line, err := EncodeEvent(n, w.run, at, ev)
	if err != nil {
		return err
	}
	var failed []SinkFailure
	took := 0
	for i := range w.sinks {
		s := &w.sinks[i]
		if s.failed {
			continue
		}
		if _, err := s.W.Write(line); err != nil {
			s.failed = true
			failed = append(failed, SinkFailure{Sink: s.Name, Line: n, Error: err.Error()})
			continue
		}
		took++
	}
	for _, f := range failed {
		w.failures = append(w.failures, f)
		if w.onFail != nil {
			w.onFail(f)
		}
	}
	if took == 0 {
		if len(failed) > 0 {
			return fmt.Errorf("%w: writing %s line %d: %s", ErrNoSink, ev.EventName(), n, failed[len(failed)-1].Error)
		}
		return fmt.Errorf("%w: %s line %d was not written", ErrNoSink, ev.EventName(), n)
	}
	w.seq = n
	if _, last := ev.(*StreamClosed); !last {
		for _, f := range failed {
			msg := fmt.Sprintf("%s stopped taking the stream at line %d (%s); the lines from there on are in the other sinks only", f.Sink, f.Line, f.Error)
			if err := w.writeLocked(nil, &Warning{Code: WarnSinkFailed, Message: msg}); err != nil {
				return err
			}
		}
	}
	return nil
}

// lineCheck is SetLineCheck's check, nil in a release binary.
var lineCheck atomic.Pointer[func(line []byte)]

// SetLineCheck installs check, which EncodeEvent and EncodeCommand call
// with every line they render, and returns the one it replaces; nil
// removes it. A test binary installs testkit/schemacheck's, so that every
// line any test writes is held to the published schemas; the release
// binary installs none and pays one atomic load a line.
func SetLineCheck(check func(line []byte)) (previous func(line []byte)) {
	var p *func([]byte)
	if check != nil {
		p = &check
	}
	if old := lineCheck.Swap(p); old != nil {
		return *old
	}
	return nil
}

func checked(line []byte) []byte {
	if c := lineCheck.Load(); c != nil {
		(*c)(line)
	}
	return line
}

// EncodeEvent renders one event line, newline included. Header keys come
// first in a fixed order; the payload's keys follow in field order.
func EncodeEvent(seq uint64, run string, at *string, ev Event) ([]byte, error) {
	var b bytes.Buffer
	if err := writeHeader(&b, seq, run, at, ev.EventName()); err != nil {
		return nil, err
	}
	if err := appendPayload(&b, ev); err != nil {
		return nil, fmt.Errorf("record: encoding %s: %w", ev.EventName(), err)
	}
	b.WriteString("}\n")
	return checked(b.Bytes()), nil
}

// writeHeader writes an event line's opening brace and header keys.
func writeHeader(b *bytes.Buffer, seq uint64, run string, at *string, name string) error {
	b.WriteString(headPrefix)
	b.WriteString(strconv.FormatUint(seq, 10))
	b.WriteString(`,"run":`)
	if err := writeJSON(b, run); err != nil {
		return err
	}
	if at != nil {
		b.WriteString(`,"at":`)
		if err := writeJSON(b, *at); err != nil {
			return err
		}
	}
	b.WriteString(`,"event":"` + name + `"`)
	return nil
}

const headPrefix = `{"format":"` + EventFormat + `","seq":`

// Canonical reports whether line (without its newline) is byte for byte
// the line EncodeEvent writes for l, which every line a Writer wrote is. A
// reader that passes over a stream twice checks each line once, and on the
// second pass takes what it needs from a canonical line's bytes
// (SplitCanonical) instead of decoding it again.
func Canonical(line []byte, l *EventLine) bool {
	b := canonicalBuf.Get().(*bytes.Buffer)
	defer canonicalBuf.Put(b)
	b.Reset()
	if writeHeader(b, l.Seq, l.Run, l.At, l.Event.EventName()) != nil || !bytes.HasPrefix(line, b.Bytes()) {
		return false
	}
	head := b.Len()
	if writeJSON(b, l.Event) != nil {
		return false
	}
	// The payload's object, whose braces the line shares with the header.
	obj, rest := bytes.TrimSpace(b.Bytes()[head:]), line[head:]
	if len(obj) < 2 || obj[0] != '{' {
		return false
	}
	if inner := obj[1 : len(obj)-1]; len(inner) > 0 {
		if len(rest) == 0 || rest[0] != ',' {
			return false
		}
		rest = rest[1:]
		if !bytes.HasPrefix(rest, inner) {
			return false
		}
		rest = rest[len(inner):]
	}
	return string(rest) == "}"
}

// canonicalBuf holds Canonical's renderings between calls: it runs once
// for every line of a long stream.
var canonicalBuf = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// SplitCanonical takes a canonical line (Canonical) apart: its "at" as the
// raw JSON string it holds (nil when the line has none), its event name,
// and its payload's members as they stand in the line (EncodePayload's
// object without its braces; empty when it has none). ok is false for a
// line not shaped as a canonical one.
func SplitCanonical(line []byte) (at, name, payload []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte(headPrefix))
	if !ok {
		return nil, nil, nil, false
	}
	rest = bytes.TrimLeft(rest, "0123456789")
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"run":`)); !ok {
		return nil, nil, nil, false
	}
	str := func(b []byte) int { // the length of the JSON string b opens with, -1 if none
		if len(b) == 0 || b[0] != '"' {
			return -1
		}
		end, err := jsonscan.StringEnd(b, 0)
		if err != nil {
			return -1
		}
		return end
	}
	end := str(rest)
	if end < 0 {
		return nil, nil, nil, false
	}
	rest = rest[end:]
	if r, ok := bytes.CutPrefix(rest, []byte(`,"at":`)); ok {
		if end = str(r); end < 0 {
			return nil, nil, nil, false
		}
		at, rest = r[:end], r[end:]
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"event":"`)); !ok {
		return nil, nil, nil, false
	}
	q := bytes.IndexByte(rest, '"')
	if q < 0 || !bytes.HasSuffix(rest, []byte("}")) {
		return nil, nil, nil, false
	}
	name, payload = rest[:q], rest[q+1:len(rest)-1]
	if len(payload) > 0 {
		if payload[0] != ',' {
			return nil, nil, nil, false
		}
		payload = payload[1:]
	}
	return at, name, payload, true
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
	return checked(b.Bytes()), nil
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
