package loopback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/record"
)

// Quota is an upstream's answer that the account will not be served now
// (record.Quota).
type Quota = record.Quota

// QuotaPhrase renders q as the words a fleet's usage-limit rule matches: the
// status and the vendor's type, e.g. "429 Too Many Requests
// (rate_limit_error, retry after 30)". It is the only text of this program
// that carries such words, and only ever for an answer the upstream gave.
func QuotaPhrase(q Quota) string {
	var b strings.Builder
	if q.InStream {
		b.WriteString("an error event in its 200 stream")
	} else {
		fmt.Fprintf(&b, "%d %s", q.Status, http.StatusText(q.Status))
	}
	var notes []string
	if q.Type != "" {
		notes = append(notes, q.Type)
	}
	if q.RetryAfter != "" {
		notes = append(notes, "retry after "+q.RetryAfter)
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	return b.String()
}

// QuotaTypes are the vendors' error types and codes that mean "out of
// quota or rate-limited": Anthropic's rate_limit_error, OpenAI's
// insufficient_quota and rate_limit_exceeded, and the usage_limit_reached
// of a ChatGPT-plan Codex. Nothing else (an overloaded_error, a 5xx) is a
// quota: those are the vendor's to retry.
var QuotaTypes = []string{"rate_limit_error", "insufficient_quota", "rate_limit_exceeded", "usage_limit_reached"}

// maxSniff bounds what is held of an error answer's body, or of one event
// of a stream, to tell a quota error: vendor error bodies are a few hundred
// bytes.
const maxSniff = 16 << 10

// quotaType is the first of QuotaTypes that the JSON error document doc
// names: error.type, error.code, code, type, or the same under response
// (the Responses API's response.failed). "" when none.
func quotaType(doc []byte) string {
	var v struct {
		Type     json.RawMessage `json:"type"`
		Code     json.RawMessage `json:"code"`
		Error    *errFields      `json:"error"`
		Response *struct {
			Error *errFields `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(doc, &v) != nil {
		return ""
	}
	fields := []json.RawMessage{v.Type, v.Code}
	for _, e := range []*errFields{v.Error, responseError(v.Response)} {
		if e != nil {
			fields = append(fields, e.Type, e.Code)
		}
	}
	for _, f := range fields {
		var s string
		if json.Unmarshal(f, &s) == nil && slices.Contains(QuotaTypes, s) {
			return s
		}
	}
	return ""
}

type errFields struct {
	Type json.RawMessage `json:"type"`
	Code json.RawMessage `json:"code"`
}

func responseError(r *struct {
	Error *errFields `json:"error"`
}) *errFields {
	if r == nil {
		return nil
	}
	return r.Error
}

// retryAfter keeps a Retry-After value only in the two shapes HTTP gives
// it (delta-seconds, an HTTP date), so that nothing else the upstream sent
// is ever repeated.
func retryAfter(h http.Header) string {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return strconv.FormatUint(n, 10)
	}
	if _, err := http.ParseTime(v); err == nil {
		return v
	}
	return ""
}

// sniffer watches a response body as it streams through, for a quota
// error: the start of an error answer's body, or the error events of an
// event stream. It holds at most maxSniff bytes and never changes what is
// relayed.
type sniffer struct {
	stream bool   // an event stream: look at its error events
	body   []byte // an error answer: its first maxSniff bytes

	// The event stream's state: its lines, the current event's name, and
	// the data of an error event.
	lines lineSplitter
	event string
	data  []byte
	found string
}

// newSniffer is the sniffer for a response, or nil when the response can
// carry no quota error (a success that is not an event stream).
func newSniffer(resp *http.Response) *sniffer {
	stream := isEventStream(resp.Header)
	if resp.StatusCode < 400 && !stream {
		return nil
	}
	return &sniffer{stream: stream && resp.StatusCode < 400}
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// write looks at one chunk of the body.
func (s *sniffer) write(b []byte) {
	if !s.stream {
		if n := min(len(b), maxSniff-len(s.body)); n > 0 {
			s.body = append(s.body, b[:n]...)
		}
		return
	}
	if s.found == "" {
		s.lines.write(b, s)
	}
}

// keep holds a line while it may be part of an error event, and never
// more than maxSniff bytes of it.
func (s *sniffer) keep(line []byte) bool {
	return s.found == "" && len(line) <= maxSniff && (len(line) < decideAfter || s.mayMatter(line))
}

// decideAfter is how much of a line tells whether it may matter:
// `data: {"type":"response.failed"` fits.
const decideAfter = 40

// errorEvents are the event names (and data types) an error arrives
// under: Anthropic's error, the Responses API's error and response.failed.
var errorEvents = []string{"error", "response.failed"}

// mayMatter reports whether a line, of which at least decideAfter bytes
// are known, can be part of an error event. Model text sits JSON-escaped
// inside data lines, so it can never start a line of its own.
func (s *sniffer) mayMatter(line []byte) bool {
	if bytes.HasPrefix(line, []byte("event:")) {
		return true
	}
	d, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return false
	}
	return slices.Contains(errorEvents, s.event) || errorData(bytes.TrimLeft(d, " "))
}

// errorData reports whether an event's data starts as an error document
// does ({"type":"error", {"type":"response.failed"): for a stream that
// names no events.
func errorData(d []byte) bool {
	for _, e := range errorEvents {
		if bytes.HasPrefix(d, []byte(`{"type":"`+e+`"`)) {
			return true
		}
	}
	return false
}

// line takes one whole line of the stream (only lines that may matter).
func (s *sniffer) line(line []byte) {
	switch {
	case len(line) == 0:
		s.dispatch()
	case bytes.HasPrefix(line, []byte("event:")):
		s.event = string(bytes.TrimSpace(line[len("event:"):]))
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimLeft(line[len("data:"):], " ")
		if (slices.Contains(errorEvents, s.event) || errorData(d)) && len(s.data)+len(d) <= maxSniff {
			if len(s.data) > 0 {
				s.data = append(s.data, '\n')
			}
			s.data = append(s.data, d...)
		}
	}
}

// dispatch ends one event.
func (s *sniffer) dispatch() {
	if s.found == "" && len(s.data) > 0 {
		s.found = quotaType(s.data)
	}
	s.event, s.data = "", s.data[:0]
}

// quota is what the body said, once it has ended: nil when it was not a
// quota error. status and h are the response's.
func (s *sniffer) quota(status int, h http.Header) *Quota {
	if s.stream {
		if s.found == "" {
			s.lines.end(s) // a last line with no newline
		}
		if s.found == "" {
			s.dispatch() // a last event with no blank line
		}
		if s.found == "" {
			return nil
		}
		return &Quota{Status: status, Type: s.found, InStream: true, RetryAfter: retryAfter(h)}
	}
	typ := quotaType(s.body)
	if typ == "" && status != http.StatusTooManyRequests {
		return nil
	}
	return &Quota{Status: status, Type: typ, RetryAfter: retryAfter(h)}
}
