// Package traceir projects a metaharness event stream into a trace-ir/1
// document, the shape a side-by-side viewer or a bench reads, and renders
// one or two runs as a static HTML page. A projection has no clock and no
// network: the same bytes in give the same bytes out.
//
// The event stream stays the record a checker reads; the document is a
// view of it. Every event keeps its place (index and source line); an event
// trace-ir has no family for is carried as "unk" with its payload, never
// dropped; metaharness-only facts (the attestation, withheld tools,
// available operations, the census) live under "metaharness" alone.
package traceir

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/record"
)

// Format is the document's format tag.
const Format = "trace-ir/1"

// RefuseUnreadable: a line of the stream is not an event line. A projection
// is never made shorter than its stream.
const RefuseUnreadable exit.Name = "projection-unreadable"

// MaxInputBytes bounds a stream or raw record project reads, which it holds
// whole: far past any one session's record, and never all of memory.
const MaxInputBytes = 256 << 20

// family is each event's trace-ir family; an event not listed has none.
var family = map[string]string{
	"session.started":   "session_start",
	"session.ended":     "run_outcome",
	"usage":             "run_outcome",
	"text":              "assistant_text",
	"thinking":          "assistant_thinking",
	"thinking.estimate": "thinking_estimate",
	"injection":         "synthetic_injection",
	"tool.requested":    "tool_call",
	"tool.result":       "tool_result",
	"rate_limit":        "rate_limit",
	"opaque":            "opaque",
	"stream.closed":     "stream_closed",
}

// Source says what was projected: the stream's own format, or the vendor
// format a raw record was read from (project --from), and the bytes the
// digest covers.
type Source struct {
	Format string
	Bytes  []byte
}

// Stream is a parsed event stream and the name it is known by in errors.
type Stream struct {
	Name  string
	Lines []*record.EventLine
}

// ReadStream parses every line of an event stream. A line that is not an
// event line is refused, naming the file and its 1-based line number.
func ReadStream(name string, data []byte) (*Stream, error) {
	s := &Stream{Name: name}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	n := 0
	for sc.Scan() {
		n++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			return nil, exit.Refuse(RefuseUnreadable, "%s line %d is blank; an event stream has one event per line", name, n)
		}
		l, err := record.ParseEvent(sc.Bytes())
		if err != nil {
			return nil, exit.Refuse(RefuseUnreadable, "%s line %d is not an event line (%v); nothing was projected", name, n, err)
		}
		s.Lines = append(s.Lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, exit.Refuse(RefuseUnreadable, "%s after line %d: %v", name, n, err)
	}
	if n == 0 {
		return nil, exit.Refuse(RefuseUnreadable, "%s holds no event line", name)
	}
	return s, nil
}

// Document is a trace-ir/1 document; its field order is its key order.
type Document struct {
	Format           string      `json:"format"`
	TranscriptDigest string      `json:"transcript_digest"`
	Adapter          adapterRef  `json:"adapter"`
	Events           []Event     `json:"events"`
	Requests         []Request   `json:"requests"`
	Metaharness      Metaharness `json:"metaharness"`
}

type adapterRef struct {
	Name           string   `json:"name"`
	WrittenAgainst []string `json:"written_against"`
}

// Event is one event in its place.
type Event struct {
	Index       int             `json:"index"`
	SourceLine  int             `json:"source_line"`
	Timestamp   *string         `json:"timestamp"`
	TimestampMS *int64          `json:"timestamp_ms"`
	Kind        json.RawMessage `json:"kind"`
}

// Request is one model request, from a usage event, and the events that
// carry its request id.
type Request struct {
	SourceLine               int     `json:"source_line"`
	RequestID                *string `json:"request_id"`
	Model                    *string `json:"model"`
	InputTokens              *uint64 `json:"input_tokens"`
	OutputTokens             *uint64 `json:"output_tokens"`
	CacheReadInputTokens     *uint64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens *uint64 `json:"cache_creation_input_tokens"`
	Events                   []int   `json:"events"`
}

// Metaharness holds what only metaharness knows of the run.
type Metaharness struct {
	Source              string                `json:"source"`
	Run                 string                `json:"run"`
	EventsTotal         int                   `json:"events_total"`
	Families            map[string]int        `json:"families"`
	UnkKinds            map[string]int        `json:"unk_kinds"`
	VendorTranscript    *record.TranscriptRef `json:"vendor_transcript"`
	Withheld            []record.Withheld     `json:"withheld"`
	AvailableOperations []string              `json:"available_operations"`
	Hermetic            *record.Attestation   `json:"hermetic"`
	Census              *record.Census        `json:"census"`
	StreamComplete      bool                  `json:"stream_complete"`
}

// unkKind is an event trace-ir has no family for: "unk" says the IR has no
// home for it, not that anything is unknown about the run.
type unkKind struct {
	Event     string          `json:"event"`
	EventKind string          `json:"event_kind"`
	Reason    string          `json:"reason"`
	Payload   json.RawMessage `json:"payload"`
}

// Project builds the document of s, read from src.
func Project(s *Stream, src Source) (*Document, error) {
	sum := sha256.Sum256(src.Bytes)
	d := &Document{
		Format: Format, TranscriptDigest: hex.EncodeToString(sum[:]),
		Adapter:  adapterRef{Name: "metaharness/project", WrittenAgainst: []string{record.EventFormat}},
		Events:   []Event{},
		Requests: []Request{},
		Metaharness: Metaharness{
			Source: src.Format, EventsTotal: len(s.Lines), Families: map[string]int{}, UnkKinds: map[string]int{},
			StreamComplete: record.CheckCompleteness(s.Lines).State == record.Complete,
		},
	}
	if len(s.Lines) > 0 {
		d.Metaharness.Run = s.Lines[0].Run
	}
	byRequest := map[string][]int{}
	for i, l := range s.Lines {
		kind, err := kindOf(l.Event)
		if err != nil {
			return nil, exit.Refuse(RefuseUnreadable, "%s line %d: %v", s.Name, i+1, err)
		}
		ev := Event{Index: i, SourceLine: i + 1, Timestamp: l.At, Kind: kind}
		if l.At != nil {
			if t, err := time.Parse(time.RFC3339Nano, *l.At); err == nil {
				ms := t.UnixMilli()
				ev.TimestampMS = &ms
			}
		}
		d.Events = append(d.Events, ev)
		if f, ok := family[l.Name()]; ok {
			d.Metaharness.Families[f]++
		} else {
			d.Metaharness.Families["unk"]++
			d.Metaharness.UnkKinds[l.Name()]++
		}
		if id := requestID(l.Event); id != nil {
			byRequest[*id] = append(byRequest[*id], i)
		}
		switch e := l.Event.(type) {
		case *record.SessionStarted:
			m := &d.Metaharness
			m.VendorTranscript, m.Withheld, m.AvailableOperations, m.Hermetic = e.Transcript, e.Withheld, e.AvailableOperations, e.Hermetic
		case *record.SessionEnded:
			d.Metaharness.Census = e.Census
		case *record.UsageEvent:
			d.Requests = append(d.Requests, Request{
				SourceLine: i + 1, RequestID: e.RequestID, Model: e.Model,
				InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens,
				CacheReadInputTokens: e.Usage.CacheReadInputTokens, CacheCreationInputTokens: e.Usage.CacheCreationInputTokens,
			})
		}
	}
	for i := range d.Requests {
		r := &d.Requests[i]
		r.Events = []int{}
		if r.RequestID != nil {
			r.Events = append(r.Events, byRequest[*r.RequestID]...)
		}
	}
	return d, nil
}

// Encode is the document's byte-stable form: indented JSON, keys in a fixed
// order (maps sorted), and a trailing newline.
func (d *Document) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// kindOf is the event's own fields with "event" naming its family, or the
// unk wrapper around its payload.
func kindOf(ev record.Event) (json.RawMessage, error) {
	payload, err := record.EncodePayload(ev)
	if err != nil {
		return nil, err
	}
	if _, ok := ev.(*record.SessionStarted); ok {
		if payload, err = dropKeys(payload, metaharnessOnly); err != nil {
			return nil, err
		}
	}
	f, ok := family[ev.EventName()]
	if !ok {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(unkKind{Event: "unk", EventKind: ev.EventName(), Reason: "no trace-ir/1 family", Payload: payload}); err != nil {
			return nil, err
		}
		return bytes.TrimSpace(b.Bytes()), nil
	}
	out := []byte(`{"event":"` + f + `"`)
	if inner := payload[1 : len(payload)-1]; len(inner) > 0 {
		out = append(append(out, ','), inner...)
	}
	return append(out, '}'), nil
}

// metaharnessOnly are session.started's keys that are metaharness's own
// facts, not the vendor's: the document keeps them under "metaharness" only.
var metaharnessOnly = map[string]bool{"withheld": true, "available_operations": true, "hermetic": true}

// dropKeys removes keys from a JSON object, keeping the others in order.
func dropKeys(obj []byte, keys map[string]bool) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return nil, err
	}
	out := []byte{'{'}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		name, _ := k.(string)
		if keys[name] {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(name)
		out = append(append(append(out, kb...), ':'), v...)
	}
	return append(out, '}'), nil
}

func requestID(ev record.Event) *string {
	switch e := ev.(type) {
	case *record.Text:
		return e.RequestID
	case *record.Thinking:
		return e.RequestID
	case *record.UsageEvent:
		return e.RequestID
	}
	return nil
}
