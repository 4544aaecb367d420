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
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/record"
)

// Format is the document's format tag.
const Format = "trace-ir/1"

// RefuseUnreadable: a line of the stream is not an event line. A projection
// is never made shorter than its stream.
const RefuseUnreadable exit.Name = "projection-unreadable"

// MaxRecordBytes bounds a raw record project --from reads: the kind's
// reader takes it whole. An event stream has no bound but its lines'
// (MaxLineBytes), since a projection reads it a line at a time.
const MaxRecordBytes = 256 << 20

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
// format a raw record was read from (project --from), and the digest of
// the bytes read, "" for a stream's own (Project computes it).
type Source struct {
	Format string
	Digest string
}

type adapterRef struct {
	Name           string   `json:"name"`
	WrittenAgainst []string `json:"written_against"`
}

// request is one model request, from a usage event, as the document lists
// it: the values kept, not the decoded event, so that a long session's
// requests cost a few dozen bytes each.
type request struct {
	line            int
	id, model       string // each shares the decoded line's bytes
	hasID, hasModel bool
	tokens          [4]uint64 // input, output, cache read, cache creation
	has             [4]bool
}

func requestOf(n int, e *record.UsageEvent) request {
	r := request{line: n}
	if e.RequestID != nil {
		r.id, r.hasID = *e.RequestID, true
	}
	if e.Model != nil {
		r.model, r.hasModel = *e.Model, true
	}
	for i, t := range []*uint64{e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CacheReadInputTokens, e.Usage.CacheCreationInputTokens} {
		if t != nil {
			r.tokens[i], r.has[i] = *t, true
		}
	}
	return r
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

// Project writes the trace-ir/1 document of s, read from src, to w: indented
// JSON, keys in a fixed order (maps sorted), a trailing newline; the same
// bytes in give the same bytes out. It passes over s twice and holds one
// line of it at a time. The first pass reads every line, so that a stream
// that cannot be projected whole is refused before anything is written, and
// gathers what the document states after its events; the second writes each
// event as it reads it. What it keeps between them grows with the model
// requests alone (each one's usage and the indices of the events carrying
// its id, which the document lists after the events), never with the
// stream's bytes.
func Project(w io.Writer, s *Stream, src Source) error {
	sum, err := summarize(s)
	if err != nil {
		return err
	}
	if src.Digest == "" {
		src.Digest = sum.digest
	}
	sum.m.Source = src.Format
	out := bufio.NewWriterSize(w, 64<<10)
	adapter, err := indented(adapterRef{Name: "metaharness/project", WrittenAgainst: []string{record.EventFormat}}, "  ")
	if err != nil {
		return err
	}
	out.WriteString("{\n  \"format\": \"" + Format + "\",\n  \"transcript_digest\": \"" + src.Digest + "\",\n  \"adapter\": ")
	out.Write(adapter)
	out.WriteString(",\n  \"events\": [")
	if err := writeEvents(out, s, sum); err != nil {
		return err
	}
	out.WriteString("\n  ],\n  \"requests\": ")
	writeRequests(out, sum)
	m, err := indented(sum.m, "  ")
	if err != nil {
		return err
	}
	out.WriteString(",\n  \"metaharness\": ")
	out.Write(m)
	out.WriteString("\n}\n")
	return out.Flush()
}

// summary is what the first pass over a stream gathers for its document.
type summary struct {
	digest    string
	lines     int
	canonical bool // every line as a record.Writer writes it
	m         Metaharness
	requests  []request        // one per usage event
	byRequest map[string][]int // request id → the indices of its events
}

// lineRef is where a line was found: its number and its bytes' span.
type lineRef struct {
	n    int
	off  int64
	size int
}

func summarize(s *Stream) (*summary, error) {
	sum := &summary{canonical: true, byRequest: map[string][]int{},
		m: Metaharness{Families: map[string]int{}, UnkKinds: map[string]int{}}}
	var complete record.CompletenessCheck
	h := newDigest()
	n, err := s.events(h, true, func(p *parsedLine) error {
		n, l := p.n, p.l
		if n == 1 {
			sum.m.Run = l.Run
		}
		complete.Add(l)
		sum.canonical = sum.canonical && p.canonical
		if f, ok := family[l.Name()]; ok {
			sum.m.Families[f]++
		} else {
			sum.m.Families["unk"]++
			sum.m.UnkKinds[l.Name()]++
		}
		if id := requestID(l.Event); id != nil {
			sum.byRequest[*id] = append(sum.byRequest[*id], n-1)
		}
		switch e := l.Event.(type) {
		case *record.SessionStarted:
			m := &sum.m
			m.VendorTranscript, m.Withheld, m.AvailableOperations, m.Hermetic = e.Transcript, e.Withheld, e.AvailableOperations, e.Hermetic
		case *record.SessionEnded:
			sum.m.Census = e.Census
		case *record.UsageEvent:
			sum.requests = append(sum.requests, requestOf(n, e))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sum.digest, sum.lines = digestOf(h), n
	sum.m.EventsTotal = n
	sum.m.StreamComplete = complete.Result().State == record.Complete
	return sum, nil
}

// writeEvents is the second pass: each event in its place, written as it
// is read, the stream's bytes held to the first pass's.
func writeEvents(out *bufio.Writer, s *Stream, sum *summary) error {
	var buf []byte
	h := newDigest()
	n, err := s.each(h, func(n int, _ int64, line []byte) error {
		var at, name, payload, kind []byte
		ok := sum.canonical
		if ok {
			if at, name, payload, ok = record.SplitCanonical(line); !ok {
				return s.changed(fmt.Sprintf("line %d is no longer as it was", n))
			}
		}
		if ok && string(name) != "session.started" {
			kind = canonicalKind(name, payload)
		} else {
			l, err := s.parse(n, line)
			if err != nil {
				return err
			}
			if kind, err = kindOf(l.Event); err != nil {
				return exit.Refuse(RefuseUnreadable, "%s line %d: %v", s.Name, n, err)
			}
			if at = nil; l.At != nil {
				at = jsonString(*l.At)
			}
		}
		if n > 1 {
			buf = append(buf[:0], ',')
		} else {
			buf = buf[:0]
		}
		buf = append(buf, "\n    {\n      \"index\": "...)
		buf = strconv.AppendInt(buf, int64(n-1), 10)
		buf = append(buf, ",\n      \"source_line\": "...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, ",\n      \"timestamp\": "...)
		ms := []byte("null")
		if at == nil {
			buf = append(buf, "null"...)
		} else {
			buf = append(buf, at...)
			if v, err := jsonscan.String(at); err == nil {
				if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
					ms = strconv.AppendInt(nil, t.UnixMilli(), 10)
				}
			}
		}
		buf = append(buf, ",\n      \"timestamp_ms\": "...)
		buf = append(buf, ms...)
		buf = append(buf, ",\n      \"kind\": "...)
		buf = indentCompact(buf, kind, "      ")
		buf = append(buf, "\n    }"...)
		_, err := out.Write(buf)
		return err
	})
	if err != nil {
		return err
	}
	if n != sum.lines || digestOf(h) != sum.digest {
		return s.changed(fmt.Sprintf("%d lines, then %d", sum.lines, n))
	}
	return nil
}

// canonicalKind is kindOf for an event as a canonical line holds it: its
// payload's members as they stand, under its family or the unk wrapper.
func canonicalKind(name, payload []byte) []byte {
	f, ok := family[string(name)]
	if !ok {
		out := append([]byte(`{"event":"unk","event_kind":"`), name...)
		out = append(out, `","reason":"no trace-ir/1 family","payload":{`...)
		out = append(out, payload...)
		return append(out, "}}"...)
	}
	out := []byte(`{"event":"` + f + `"`)
	if len(payload) > 0 {
		out = append(append(out, ','), payload...)
	}
	return append(out, '}')
}

// writeRequests lists each usage event's request and the events carrying
// its id, as the document's encoder writes them at their depth.
func writeRequests(out *bufio.Writer, sum *summary) {
	if len(sum.requests) == 0 {
		out.WriteString("[]")
		return
	}
	out.WriteString("[")
	var b []byte
	str := func(s string, has bool) []byte {
		if !has {
			return []byte("null")
		}
		return jsonString(s)
	}
	num := func(r request, i int) []byte {
		if !r.has[i] {
			return []byte("null")
		}
		return strconv.AppendUint(nil, r.tokens[i], 10)
	}
	for i, r := range sum.requests {
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    {\n      \"source_line\": "...)
		b = strconv.AppendInt(b, int64(r.line), 10)
		for _, f := range []struct {
			key string
			v   []byte
		}{{"request_id", str(r.id, r.hasID)}, {"model", str(r.model, r.hasModel)}, {"input_tokens", num(r, 0)}, {"output_tokens", num(r, 1)},
			{"cache_read_input_tokens", num(r, 2)}, {"cache_creation_input_tokens", num(r, 3)}} {
			b = append(append(append(b, ",\n      \""...), f.key...), "\": "...)
			b = append(b, f.v...)
		}
		b = append(b, ",\n      \"events\": "...)
		var events []int
		if r.hasID {
			events = sum.byRequest[r.id]
		}
		if len(events) == 0 {
			b = append(b, "[]"...)
		} else {
			for k, e := range events {
				if k > 0 {
					b = append(b, ',')
				} else {
					b = append(b, '[')
				}
				b = strconv.AppendInt(append(b, "\n        "...), int64(e), 10)
			}
			b = append(b, "\n      ]"...)
		}
		b = append(b, "\n    }"...)
		out.Write(b)
	}
	out.WriteString("\n  ]")
}

// indented is v as the document's encoder writes it at a depth whose lines
// start with prefix, without the newline after it.
func indented(v any, prefix string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// indentCompact appends compact JSON src (as an encoder writes it) to dst,
// indented as the document's encoder indents a value whose lines after the
// first start with prefix: what json.Indent writes, without its validation
// of a value an encoder wrote (FuzzIndentCompact holds the two together).
func indentCompact(dst, src []byte, prefix string) []byte {
	depth := 0
	newline := func() {
		dst = append(append(dst, '\n'), prefix...)
		for range depth {
			dst = append(dst, "  "...)
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			j := i + 1
			for j < len(src) {
				k := bytes.IndexAny(src[j:], `"\`)
				if k < 0 {
					j = len(src)
					break
				}
				j += k
				if src[j] == '"' {
					break
				}
				j += 2 // an escape
			}
			end := min(j+1, len(src))
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, src[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// jsonString is s as the document's encoder writes a string.
func jsonString(s string) []byte {
	b, _ := indented(s, "")
	return b
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
