package loopback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/metaharness/metaharness/record"
)

// Quota is an upstream's answer that the account will not be served now
// (record.Quota); Throttle one the proxy waited out (record.Throttle).
type (
	Quota    = record.Quota
	Throttle = record.Throttle
)

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
// insufficient_quota and rate_limit_exceeded, the usage_limit_reached
// of a ChatGPT-plan Codex, and the Gemini API's RESOURCE_EXHAUSTED (its
// error's status). Nothing else (an overloaded_error, a 5xx) is a
// quota: those are the vendor's to retry.
var QuotaTypes = []string{"rate_limit_error", "insufficient_quota", "rate_limit_exceeded", "usage_limit_reached", "RESOURCE_EXHAUSTED"}

// hardQuota are the quota types no wait within a run clears: the account
// is out of credit, or its plan's allowance is spent. A 429 with one of
// them is never waited out.
var hardQuota = []string{"insufficient_quota", "usage_limit_reached"}

// MaxThrottleRetries bounds how often one request is sent again after a
// throttle, whatever the budget left.
const MaxThrottleRetries = 8

// firstBackoff is the wait before the first retry of a throttle that names
// no wait of its own; each further one doubles it.
const firstBackoff = time.Second

// ThrottleWait is how long to wait before retry n (from 0) of a 429 whose
// headers are h, with left of the budget: the wait the upstream asked for
// (retry-after-ms, else Retry-After), or a doubling backoff from
// firstBackoff cut to what is left; asked is the upstream's words for its
// wait ("" when it named none). ok is false when the request must not be
// sent again: nothing is left, the retries are spent, or the upstream
// asked for more than is left (a long wait is a usage limit, not a
// throttle).
func ThrottleWait(h http.Header, n int, left time.Duration) (wait time.Duration, asked string, ok bool) {
	if left <= 0 || n < 0 || n >= MaxThrottleRetries {
		return 0, "", false
	}
	if d, words, given := askedWait(h); given {
		return d, words, d <= left
	}
	wait = min(firstBackoff<<n, left)
	return wait, "", true
}

// askedWait reads the wait an upstream asks for: retry-after-ms (a number
// of milliseconds, as the vendors' SDKs read it), else Retry-After in
// either of HTTP's shapes. given is false when neither holds one.
func askedWait(h http.Header) (d time.Duration, words string, given bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), "retry-after-ms " + strconv.FormatFloat(ms, 'f', -1, 64), true
		}
	}
	v := retryAfter(h)
	if v == "" {
		return 0, "", false
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second, "Retry-After " + v, true
	}
	t, _ := http.ParseTime(v)
	return max(time.Until(t), 0), "Retry-After " + v, true
}

// waitOutThrottles sends r again while the upstream throttles it (a 429
// that is no hard quota) and the waits fit in Config.ThrottleBudget,
// recording each wait in rec; the answer returned is the last one, whole
// (what was read of it to tell the throttle is put back). A body too large
// to hold (streamed) is never sent twice. An error is the client gone
// during a wait, or the upstream gone on a retry.
func (p *Proxy) waitOutThrottles(r *http.Request, rec *Record, resp *http.Response, held []byte, streamed bool) (*http.Response, error) {
	left := p.cfg.ThrottleBudget
	for n := 0; resp.StatusCode == http.StatusTooManyRequests && !streamed; n++ {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, maxSniff))
		typ := quotaType(head)
		wait, asked, ok := ThrottleWait(resp.Header, n, left)
		if !ok || slices.Contains(hardQuota, typ) {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		_ = resp.Body.Close()
		th := Throttle{Status: resp.StatusCode, Type: typ, RetryAfter: asked, Waited: wait}
		if p.cfg.OnThrottle != nil {
			p.cfg.OnThrottle(r.Method, scrub(r.URL.Path, p.secrets()), n+1, th)
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
			return nil, r.Context().Err()
		}
		rec.Throttled = append(rec.Throttled, th)
		left -= wait
		var token string
		if p.tokens != nil {
			token = p.tokens.current()
		}
		var err error
		if resp, err = p.tr.RoundTrip(p.outbound(r, token, held, nil)); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// StopReason is why an upstream's answer ends a run at once, before the
// vendor sits through its own retries of an answer that will not change.
type StopReason string

const (
	// StopQuota: the account will not be served now (Record.Quota), and
	// no throttle budget covers the wait.
	StopQuota StopReason = "quota"
	// StopKeyRejected: the upstream answered 401 to the credential it was
	// sent (after the token was re-read, where it can be).
	StopKeyRejected StopReason = "key-rejected"
	// StopRefused: the upstream answered 403, 404 or 405: it does not serve
	// this request here (another API, a wrong endpoint or path, an account
	// not allowed).
	StopRefused StopReason = "upstream-refused"
	// StopUnreachable: MaxUnreachable requests in a row found no upstream.
	StopUnreachable StopReason = "upstream-unreachable"
)

// MaxUnreachable is how many requests in a row may find the upstream
// unreachable before the run stops: room for a vendor's retry through a
// blip, not for minutes of them against an endpoint nobody serves.
const MaxUnreachable = 3

// refusingStatus are the answers of an upstream that does not serve the
// request where it was sent; no retry of it is answered otherwise.
var refusingStatus = []int{http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed}

// UpstreamStop is the record a run stops at, and why.
type UpstreamStop struct {
	Reason StopReason
	Record Record
}

// What says what the upstream answered, in words: the method and path,
// then the status and, for a quota, the vendor's type (QuotaPhrase); for
// an unreachable upstream, how often and why.
func (s *UpstreamStop) What() string {
	rec := s.Record
	switch s.Reason {
	case StopQuota:
		return fmt.Sprintf("the model API answered %s %s with %s", rec.Method, rec.Path, QuotaPhrase(*rec.Quota))
	case StopUnreachable:
		return fmt.Sprintf("%d requests in a row (the last %s %s) found no model API to answer them (%s)", MaxUnreachable, rec.Method, rec.Path, strings.TrimPrefix(rec.Error, ErrUpstreamUnreachable+": "))
	}
	return fmt.Sprintf("the model API answered %s %s with %d %s", rec.Method, rec.Path, rec.UpstreamStatus, http.StatusText(rec.UpstreamStatus))
}

// Stopper tells, record by record, when the upstream's answers call for
// the run to stop. Safe for the proxy's concurrent requests.
type Stopper struct {
	mu          sync.Mutex
	unreachable int // requests in a row that found no upstream
}

// Observe is the stop rec calls for, nil when none. Only the reverse
// endpoint's records count.
func (s *Stopper) Observe(rec Record) *UpstreamStop {
	if rec.Route != RouteReverse || rec.Refused != "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.HasPrefix(rec.Error, ErrUpstreamUnreachable) {
		if s.unreachable++; s.unreachable >= MaxUnreachable {
			return &UpstreamStop{StopUnreachable, rec}
		}
		return nil
	}
	if rec.UpstreamStatus != 0 {
		s.unreachable = 0
	}
	switch {
	case rec.Quota != nil:
		return &UpstreamStop{StopQuota, rec}
	case rec.UpstreamStatus == http.StatusUnauthorized:
		return &UpstreamStop{StopKeyRejected, rec}
	case slices.Contains(refusingStatus, rec.UpstreamStatus):
		return &UpstreamStop{StopRefused, rec}
	}
	return nil
}

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
			fields = append(fields, e.Type, e.Code, e.Status)
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
	Type   json.RawMessage `json:"type"`
	Code   json.RawMessage `json:"code"`
	Status json.RawMessage `json:"status"`
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
// does ({"type":"error", {"type":"response.failed", the Gemini API's
// {"error":): for a stream that names no events.
func errorData(d []byte) bool {
	if bytes.HasPrefix(d, []byte(`{"error":`)) {
		return true
	}
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
