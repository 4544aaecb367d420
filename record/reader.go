package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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

// readHeader checks that line is one object with the wanted format tag.
func readHeader(line []byte, want string) (*header, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return nil, fmt.Errorf("%w: a %s line is one JSON object", ErrNotAnObject, want)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(line, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAnObject, err)
	}
	var h header
	raw, ok := probe["format"]
	if !ok || string(raw) == "null" {
		return nil, fmt.Errorf("%w: the line must carry \"format\":%q", ErrMissingFormat, want)
	}
	var tag string
	if err := json.Unmarshal(raw, &tag); err != nil || tag != want {
		return nil, fmt.Errorf("%w: %s, want %q", ErrUnknownFormat, raw, want)
	}
	h.Format = &tag
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	return &h, nil
}

// ParseEvent reads one metaharness.event/1 line. Unknown fields are ignored.
func ParseEvent(line []byte) (*EventLine, error) {
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
	if h.Seq == nil || json.Unmarshal(*h.Seq, &out.Seq) != nil || out.Seq == 0 {
		return nil, fmt.Errorf("%w: %s: seq must be an integer from 1", ErrMalformed, *h.Event)
	}
	if h.Run == nil || json.Unmarshal(*h.Run, &out.Run) != nil {
		return nil, fmt.Errorf("%w: %s: run must be a string", ErrMalformed, *h.Event)
	}
	if h.At != nil {
		var at string
		if json.Unmarshal(*h.At, &at) != nil {
			return nil, fmt.Errorf("%w: %s: at must be a string when present", ErrMalformed, *h.Event)
		}
		out.At = &at
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), ev); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrMalformed, *h.Event, err)
	}
	return out, nil
}

// ParseCommand reads one metaharness.command/1 line. Unknown fields are
// ignored; a tool.decide whose decision breaks the variant rules (a blank
// deny reason, say) is ErrMalformed.
func ParseCommand(line []byte) (*CommandLine, error) {
	h, err := readHeader(line, CommandFormat)
	if err != nil {
		return nil, err
	}
	out := &CommandLine{}
	if h.ID == nil || json.Unmarshal(*h.ID, &out.ID) != nil || out.ID == "" {
		return nil, fmt.Errorf("%w: a command needs a non-empty string \"id\" to be answered under", ErrMalformed)
	}
	if !decodedWhole(*h.ID, out.ID) {
		return nil, fmt.Errorf("%w: the command's \"id\" is not UTF-8 text (an invalid byte or an unpaired surrogate escape), and an id is answered exactly as it was sent", ErrMalformed)
	}
	if !utf8.Valid(line) {
		return out, fmt.Errorf("%w: command %q: the line is not UTF-8, and a command is read as sent or not at all", ErrMalformed, out.ID)
	}
	if h.Command == nil {
		return out, fmt.Errorf("%w: command %q has no \"command\" name", ErrMalformed, out.ID)
	}
	out.Name = *h.Command
	c := newCommand(out.Name)
	if c == nil {
		return out, fmt.Errorf("%w: command %q is not one of the %d command names", ErrUnknownName, out.Name, len(CommandNames))
	}
	if err := json.Unmarshal(bytes.TrimSpace(line), c); err != nil {
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
