package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// Framing errors. Each is distinct so that a caller can say exactly why a
// line was refused; test with errors.Is.
var (
	ErrNotAnObject   = errors.New("not a JSON object")
	ErrMissingFormat = errors.New("no format tag")
	ErrUnknownFormat = errors.New("unknown format tag")
	ErrUnknownName   = errors.New("unknown name")
	ErrMalformed     = errors.New("malformed")
)

// EventLine is one parsed event line.
type EventLine struct {
	Seq   uint64
	Run   string
	At    *string
	Event Event
}

// Name is the event's wire name.
func (l *EventLine) Name() string { return l.Event.EventName() }

// CommandLine is one parsed command line. When ParseCommand reports
// ErrMalformed for a known command, ID and Name are still filled in when the
// line carried them, so that the run can answer under the caller's id.
type CommandLine struct {
	ID      string
	Name    string
	Command Command
}

type header struct {
	Format  *string          `json:"format"`
	Seq     *json.RawMessage `json:"seq"`
	Run     *json.RawMessage `json:"run"`
	At      *json.RawMessage `json:"at"`
	Event   *string          `json:"event"`
	ID      *json.RawMessage `json:"id"`
	Command *string          `json:"command"`
}

// readHeader checks that line is one object with the wanted format tag and
// takes its header members. It walks the line's top level only
// (internal/jsonscan): the one decode of the line is its caller's, into the
// payload the line's name calls for. A member that is null is absent.
func readHeader(line []byte, want string) (*header, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("%w: a %s line is one JSON object", ErrNotAnObject, want)
	}
	var h header
	var format, event, command []byte
	err := jsonscan.Members(line, func(key, val []byte) {
		if string(val) == "null" {
			val = nil
		}
		raw := func() *json.RawMessage {
			if val == nil {
				return nil
			}
			r := json.RawMessage(val)
			return &r
		}
		switch string(key) {
		case "format":
			format = val
		case "seq":
			h.Seq = raw()
		case "run":
			h.Run = raw()
		case "at":
			h.At = raw()
		case "event":
			event = val
		case "id":
			h.ID = raw()
		case "command":
			command = val
		}
	})
	if err != nil {
		if e := notJSON(line); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("%w: %v", ErrNotAnObject, err)
	}
	if format == nil {
		return nil, fmt.Errorf("%w: the line must carry \"format\":%q", ErrMissingFormat, want)
	}
	if tag, err := jsonscan.String(format); err != nil || tag != want {
		return nil, fmt.Errorf("%w: %s, want %q", ErrUnknownFormat, format, want)
	}
	for _, f := range []struct {
		raw []byte
		to  **string
	}{{event, &h.Event}, {command, &h.Command}} {
		if f.raw == nil {
			continue
		}
		s, err := jsonscan.String(f.raw)
		if err != nil {
			return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
		}
		*f.to = &s
	}
	return &h, nil
}

// notJSON is the error of a line that is not JSON at all, nil for one that
// is. The header walk checks a line's shape, not its grammar, so a reader
// that found something else wrong first asks this before saying so: a line
// that is not JSON is reported as that, whatever else it lacks.
func notJSON(line []byte) error {
	var raw json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(line), &raw); err != nil {
		return fmt.Errorf("%w: %v", ErrNotAnObject, err)
	}
	return nil
}

// asJSON runs parse and reports a line that is not JSON as ErrNotAnObject
// (notJSON) before anything else parse found.
func asJSON[T any](line []byte, parse func([]byte) (*T, error)) (*T, error) {
	v, err := parse(line)
	if err != nil && !errors.Is(err, ErrNotAnObject) {
		if e := notJSON(line); e != nil {
			return nil, e
		}
	}
	return v, err
}

// ParseEvent reads one metaharness.event/1 line, decoding it once. Unknown
// fields are ignored; the header's keys are matched exactly, as the writer
// spells them.
func ParseEvent(line []byte) (*EventLine, error) { return asJSON(line, parseEvent) }

func parseEvent(line []byte) (*EventLine, error) {
	h, err := readHeader(line, EventFormat)
	if err != nil {
		return nil, err
	}
	if h.Event == nil {
		return nil, fmt.Errorf("%w: the line has no \"event\" name", ErrMalformed)
	}
	ev := newEvent(*h.Event)
	if ev == nil {
		return nil, fmt.Errorf("%w: event %q is not one of the %d event names", ErrUnknownName, *h.Event, len(EventNames))
	}
	out := &EventLine{Event: ev}
	if h.Seq == nil || !seqOf(*h.Seq, &out.Seq) {
		return nil, fmt.Errorf("%w: %s: seq must be an integer from 1", ErrMalformed, *h.Event)
	}
	if h.Run == nil {
		return nil, fmt.Errorf("%w: %s: run must be a string", ErrMalformed, *h.Event)
	}
	if out.Run, err = jsonscan.String(*h.Run); err != nil {
		return nil, fmt.Errorf("%w: %s: run must be a string", ErrMalformed, *h.Event)
	}
	if h.At != nil {
		at, err := jsonscan.String(*h.At)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: at must be a string when present", ErrMalformed, *h.Event)
		}
		out.At = &at
	}
	if err := jsonscan.Decode(bytes.TrimSpace(line), ev, jsonscan.Options{Also: eventKeys}); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, *h.Event, err)
	}
	return out, nil
}

// The header keys of each kind of line, read apart from its payload.
var (
	eventKeys   = []string{"format", "seq", "run", "at", "event"}
	commandKeys = []string{"format", "id", "command"}
)

// seqOf reads a seq: a JSON integer from 1 that fits in 64 bits, written
// as JSON writes one (no sign, fraction, exponent or leading zero).
func seqOf(raw []byte, seq *uint64) bool {
	if len(raw) == 0 || raw[0] == '0' {
		return false
	}
	var n uint64
	for _, c := range raw {
		d := uint64(c - '0')
		if c < '0' || c > '9' || n > (math.MaxUint64-d)/10 {
			return false
		}
		n = n*10 + d
	}
	*seq = n
	return true
}

// ParseCommand reads one metaharness.command/1 line. A key given twice or
// spelled in another case than the command's is ErrMalformed, with no ID
// when that key is "id" itself (the line cannot say whom to answer). Unknown
// fields are ignored, except in tool.decide, which decides a call and takes
// no key it does not know; a tool.decide whose decision breaks the variant
// rules (a blank deny reason, say) is ErrMalformed.
func ParseCommand(line []byte) (*CommandLine, error) { return asJSON(line, parseCommand) }

func parseCommand(line []byte) (*CommandLine, error) {
	h, err := readHeader(line, CommandFormat)
	if err != nil {
		return nil, err
	}
	out := &CommandLine{}
	keys := jsonscan.Check(bytes.TrimSpace(line), nil, jsonscan.Options{Also: commandKeys})
	var ke *jsonscan.KeyError
	if errors.As(keys, &ke) && ke.Path == "" && strings.EqualFold(ke.Key, "id") {
		return nil, fmt.Errorf("%w: %v; without one id the command cannot be answered", ErrMalformed, keys)
	}
	if h.ID == nil || json.Unmarshal(*h.ID, &out.ID) != nil || out.ID == "" {
		return nil, fmt.Errorf("%w: a command needs a non-empty string \"id\" to be answered under", ErrMalformed)
	}
	if !decodedWhole(*h.ID, out.ID) {
		return nil, fmt.Errorf("%w: the command's \"id\" is not UTF-8 text (an invalid byte or an unpaired surrogate escape), and an id is answered exactly as it was sent", ErrMalformed)
	}
	if !utf8.Valid(line) {
		return out, fmt.Errorf("%w: command %q: the line is not UTF-8, and a command is read as sent or not at all", ErrMalformed, out.ID)
	}
	if keys != nil {
		return out, fmt.Errorf("%w: command %q: %v", ErrMalformed, out.ID, keys)
	}
	if h.Command == nil {
		return out, fmt.Errorf("%w: command %q has no \"command\" name", ErrMalformed, out.ID)
	}
	out.Name = *h.Command
	c := newCommand(out.Name)
	if c == nil {
		return out, fmt.Errorf("%w: command %q is not one of the %d command names", ErrUnknownName, out.Name, len(CommandNames))
	}
	_, decides := c.(*ToolDecide)
	if err := jsonscan.Decode(bytes.TrimSpace(line), c, jsonscan.Options{Also: commandKeys, RefuseUnknown: decides}); err != nil {
		return out, fmt.Errorf("%w: %s: %v", ErrMalformed, out.Name, err)
	}
	if err := checkCommand(c); err != nil {
		return out, fmt.Errorf("%w: %s: %v", ErrMalformed, out.Name, err)
	}
	out.Command = c
	return out, nil
}

// checkCommand enforces the fields each command cannot do without.
func checkCommand(c Command) error {
	switch c := c.(type) {
	case *ToolDecide:
		if c.CallID == "" {
			return errors.New("call_id is required")
		}
		return c.Decision.Validate()
	case *FrameSet:
		if len(c.Frame) == 0 || string(c.Frame) == "null" {
			return errors.New("frame is required")
		}
	case *MessageInject:
		if c.Text == "" {
			return errors.New("text is required")
		}
	case *Steer:
		if c.Text == "" {
			return errors.New("text is required")
		}
	case *PermissionSet:
		if c.Posture == "" {
			return errors.New("posture is required")
		}
	}
	return nil
}

// decodedWhole reports whether s, decoded from the JSON string raw, holds
// what raw says: encoding/json turns an invalid byte or an unpaired
// surrogate escape into U+FFFD without an error, so a U+FFFD in s that raw
// neither spells nor escapes means the text was altered.
func decodedWhole(raw []byte, s string) bool {
	if !utf8.Valid(raw) {
		return false
	}
	spelt := strings.Count(string(raw), "\uFFFD") + bytes.Count(bytes.ToLower(raw), []byte(`\ufffd`))
	return strings.Count(s, "\uFFFD") <= spelt
}
