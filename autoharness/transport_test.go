package autoharness

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// sent is one request as the transport saw it.
type sent struct {
	Method string
	URL    string
	Header http.Header
	Body   string
	// Left is the time the request's context had left when it was sent,
	// and Deadline that deadline.
	Left     time.Duration
	Deadline time.Time
}

// line is the request as "METHOD URL body", for exact comparisons.
func (s sent) line() string {
	if s.Body == "" {
		return s.Method + " " + s.URL
	}
	return s.Method + " " + s.URL + " " + s.Body
}

// Hang modes of the recording transport.
const (
	answer      = iota // the handler answers
	hangHeaders        // the round trip never returns (until the test ends)
	hangBody           // the headers arrive, the body's first read never returns
)

// recorder is an http.RoundTripper that records every request and answers
// it with an in-process handler, or hangs before the headers or in the
// middle of the body, ignoring cancellation as a misbehaving transport
// would. Hung calls are let go when the test ends, so no goroutine
// outlives it.
type recorder struct {
	t       *testing.T
	handler http.Handler
	mode    int

	mu      sync.Mutex
	sent    []sent
	release chan struct{}
}

func newRecorder(t *testing.T, h http.Handler) *recorder {
	r := &recorder{t: t, handler: h, release: make(chan struct{})}
	t.Cleanup(func() { close(r.release) })
	return r
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	s := sent{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone(), Body: string(body)}
	if d, ok := req.Context().Deadline(); ok {
		s.Left, s.Deadline = time.Until(d), d
	}
	r.mu.Lock()
	r.sent = append(r.sent, s)
	mode := r.mode
	r.mu.Unlock()
	if mode == hangHeaders {
		<-r.release
		return nil, io.ErrUnexpectedEOF
	}
	w := httptest.NewRecorder()
	if r.handler != nil {
		r.handler.ServeHTTP(w, req)
	}
	resp := w.Result()
	if mode == hangBody {
		resp.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"id":`), blockingReader(r.release)))
	}
	return resp, nil
}

// requests is what was sent so far.
func (r *recorder) requests() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.sent...)
}

// lines is requests as lines.
func (r *recorder) lines() []string {
	var out []string
	for _, s := range r.requests() {
		out = append(out, s.line())
	}
	return out
}

func (r *recorder) setMode(m int) {
	r.mu.Lock()
	r.mode = m
	r.mu.Unlock()
}

// blockingReader's Read returns only once release is closed.
type blockingReader chan struct{}

func (b blockingReader) Read([]byte) (int, error) {
	<-b
	return 0, io.ErrUnexpectedEOF
}

// routes is a handler answering "METHOD /path?query" keys with a status
// and a body; anything else is a 404 in the control plane's envelope.
type routes map[string]reply

type reply struct {
	status int
	body   string
	header http.Header
}

func (rt routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep, ok := rt[r.Method+" "+r.URL.RequestURI()]
	if !ok {
		rep = reply{404, `{"error":{"code":"NOT_FOUND","message":"not found"}}`, nil}
	}
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	io.WriteString(w, rep.body)
}

// client is a Client of https://harness.test with key "k" over rec.
func client(t *testing.T, rec http.RoundTripper, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{BaseURL: "https://harness.test/api/v1/", APIKey: "k", Transport: rec}
	for _, m := range mod {
		m(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func timeout(d time.Duration) func(*Options) { return func(o *Options) { o.RequestTimeout = d } }

var bg = context.Background()
