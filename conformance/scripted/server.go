package scripted

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Turn numbers a Request carries besides a script index.
const (
	// PastEnd: the request came after the last turn and got Script.Final.
	PastEnd = -1
	// NotAnswered: the request was not a model request, or was refused
	// (wrong key, unreadable body); it consumed no turn.
	NotAnswered = -2
	// SideCall: a model request that asked for JSON beside the turns
	// (Gemini CLI's router), answered from its schema; it consumed no turn.
	SideCall = -3
)

// maxBody bounds a recorded request body (vendor APIs cap requests near here).
const maxBody = 32 << 20

// Request is one request the server saw, as it arrived.
type Request struct {
	Seq      int // 1-based, in arrival order
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Parsed from a model request's body.
	Model       string
	Stream      bool
	Tools       []string     // tool names offered; a Responses namespace tool as <namespace>__<name>
	ToolResults []ToolResult // tool results at the end of the conversation sent
	// Lite: the Responses request came from a responses-lite slug, its tools
	// in an additional_tools input item (Tools lists them all the same).
	Lite bool
	// UserTexts are the texts of the user messages the request carries, in
	// order (where a steer or an injected message shows up).
	UserTexts []string
	// Side: a side call asking for JSON (Turn SideCall); sideSchema is the
	// schema it asked for.
	Side       bool
	sideSchema json.RawMessage
	// Turn is the script index answered, PastEnd or NotAnswered.
	Turn   int
	Status int // the status answered
	// Abandoned: the turn held its stream (Turn.HoldMS) and the client went
	// away before the hold ended. Requests reports it once the answer ended.
	Abandoned bool
}

// ToolResult is a tool's result as the client handed it back to the model.
type ToolResult struct {
	CallID  string
	Content string // text blocks joined by newlines
	IsError bool
}

// Credential is the key the request carried: x-api-key, else
// x-goog-api-key, else the bearer token of Authorization, else "".
func (r Request) Credential() string {
	if k := r.Header.Get("X-Api-Key"); k != "" {
		return k
	}
	if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
		return k
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return a
	}
	return ""
}

// Option changes how a server is started.
type Option func(*options)

type options struct {
	tls  bool
	key  string
	hook func(Request)
}

// WithTLS serves https with httptest's self-signed certificate (see
// Server.CertPool): a client that does not trust it must fail.
func WithTLS() Option { return func(o *options) { o.tls = true } }

// RequireKey answers 401, consuming no turn, to a request whose credential
// (Request.Credential) is not key.
func RequireKey(key string) Option { return func(o *options) { o.key = key } }

// OnRequest calls hook with every request after it is read and before it is
// answered; the answer waits for the hook. A test uses it to look at the
// client process while the client is certainly running.
func OnRequest(hook func(Request)) Option { return func(o *options) { o.hook = hook } }

// dialect is what differs between the vendor APIs.
type dialect interface {
	isModelRequest(r *http.Request) bool
	parse(body []byte, req *Request)
	// answer streams (or writes) turn t; hold is called once the stream has
	// started and reports whether the client is still there.
	answer(w http.ResponseWriter, req *Request, t Turn, id int, hold func() bool)
	fail(w http.ResponseWriter, status int, typ, message string)
}

// Server is a scripted model server on 127.0.0.1.
type Server struct {
	ts     *httptest.Server
	d      dialect
	script Script
	opts   options
	// finalFrom is the script's FinalFrom, compiled.
	finalFrom *regexp.Regexp

	mu   sync.Mutex
	next int
	reqs []Request
}

func newServer(d dialect, s Script, opts []Option) *Server {
	srv := &Server{d: d, script: s}
	for _, o := range opts {
		o(&srv.opts)
	}
	if srv.script.Final == "" {
		srv.script.Final = DefaultFinal
	}
	re, err := s.finalFrom()
	if err != nil {
		panic("scripted: " + err.Error()) // ParseScript refuses it; a script built in Go is a test's own bug
	}
	srv.finalFrom = re
	h := http.HandlerFunc(srv.serve)
	if srv.opts.tls {
		srv.ts = httptest.NewTLSServer(h)
	} else {
		srv.ts = httptest.NewServer(h)
	}
	return srv
}

// NewAnthropicServer starts a fake Anthropic Messages API answering
// POST …/v1/messages from s, streamed as Claude Code consumes it.
func NewAnthropicServer(s Script, opts ...Option) *Server {
	return newServer(anthropic{}, s, opts)
}

// NewOpenAIServer starts a fake OpenAI Responses API answering
// POST …/responses from s, streamed as Codex consumes it.
func NewOpenAIServer(s Script, opts ...Option) *Server {
	return newServer(openAI{}, s, opts)
}

// NewGeminiServer starts a fake Gemini API answering POST
// …/models/MODEL:streamGenerateContent and :generateContent from s, as
// Gemini CLI consumes it.
func NewGeminiServer(s Script, opts ...Option) *Server {
	return newServer(gemini{}, s, opts)
}

// The model APIs the servers speak, by the names a kind's descriptor and
// b10x's --model-wire use.
const (
	AnthropicMessages = "anthropic-messages"
	OpenAIResponses   = "openai-responses"
	GeminiAPI         = "gemini-generate-content"
)

// APIs are the model APIs the servers speak.
var APIs = []string{AnthropicMessages, OpenAIResponses, GeminiAPI}

// New starts the scripted server speaking api.
func New(api string, s Script, opts ...Option) (*Server, error) {
	switch api {
	case AnthropicMessages:
		return NewAnthropicServer(s, opts...), nil
	case OpenAIResponses:
		return NewOpenAIServer(s, opts...), nil
	case GeminiAPI:
		return NewGeminiServer(s, opts...), nil
	}
	return nil, fmt.Errorf("the scripted servers speak %s, %s and %s, not %q", AnthropicMessages, OpenAIResponses, GeminiAPI, api)
}

// URL is the server's root (no /v1): http://127.0.0.1:PORT, or https.
func (s *Server) URL() string { return s.ts.URL }

// CertPool trusts the server's certificate (only meaningful WithTLS).
func (s *Server) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	if c := s.ts.Certificate(); c != nil {
		pool.AddCert(c)
	}
	return pool
}

// CertPEM is the server's certificate in PEM, for a client that reads its
// trust from a file (curl --cacert, SSL_CERT_FILE). Nil without TLS.
func (s *Server) CertPEM() []byte {
	c := s.ts.Certificate()
	if c == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// TLSConfig is a client TLS configuration trusting the server.
func (s *Server) TLSConfig() *tls.Config { return &tls.Config{RootCAs: s.CertPool()} }

// Requests is every request seen so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Close stops the server and waits for the requests in flight.
func (s *Server) Close() { s.ts.Close() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	req := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Turn: NotAnswered}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req.Body = body
	switch {
	case err != nil:
		var tooLarge *http.MaxBytesError
		req.Status = http.StatusBadRequest
		if errors.As(err, &tooLarge) {
			req.Status = http.StatusRequestEntityTooLarge
		}
		s.record(&req)
		s.d.fail(w, req.Status, "invalid_request_error", "the scripted server could not read the request body: "+err.Error())
		return
	case !s.d.isModelRequest(r):
		req.Status = http.StatusNotFound
		s.record(&req)
		s.d.fail(w, req.Status, "not_found_error", fmt.Sprintf("the scripted server answers model requests only, not %s %s", r.Method, r.URL.Path))
		return
	case s.opts.key != "" && req.Credential() != s.opts.key:
		req.Status = http.StatusUnauthorized
		s.d.parse(body, &req)
		s.record(&req)
		s.d.fail(w, req.Status, "authentication_error", "invalid x-api-key")
		return
	}
	s.d.parse(body, &req)
	if req.Side {
		req.Turn, req.Status = SideCall, http.StatusOK
		s.record(&req)
		if s.opts.hook != nil {
			s.opts.hook(req)
		}
		s.d.answer(w, &req, Turn{}, req.Seq, func() bool { return true })
		return
	}
	turn := s.take(&req)
	if turn.Error != nil {
		req.Status = turn.Error.Status
	} else {
		req.Status = http.StatusOK
	}
	s.record(&req)
	if s.opts.hook != nil {
		s.opts.hook(req)
	}
	if turn.Error != nil {
		if turn.Error.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.Error.RetryAfter)
		}
		s.d.fail(w, turn.Error.Status, turn.Error.errorType(), turn.Error.Message)
		return
	}
	hold := func() bool {
		if turn.HoldMS == 0 {
			return true
		}
		t := time.NewTimer(time.Duration(turn.HoldMS) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			s.mu.Lock()
			s.reqs[req.Seq-1].Abandoned = true
			s.mu.Unlock()
			return false
		}
	}
	s.d.answer(w, &req, turn, req.Seq, hold)
}

// take consumes the next turn for req and numbers it.
func (s *Server) take(req *Request) Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next < len(s.script.Turns) {
		req.Turn = s.next
		s.next++
		return s.script.Turns[req.Turn]
	}
	req.Turn = PastEnd
	if s.script.FinalError != nil {
		return Turn{Error: s.script.FinalError}
	}
	if s.finalFrom != nil {
		if text, ok := answerFrom(s.finalFrom, req.UserTexts); ok && text != "" {
			return Turn{Text: text}
		}
	}
	return Turn{Text: s.script.Final}
}

func (s *Server) record(req *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.Seq = len(s.reqs) + 1
	s.reqs = append(s.reqs, *req)
}

// sse writes server-sent events, flushing each one as it is written.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w: w}
}

func (s sse) event(name string, payload any) {
	data, _ := json.Marshal(payload) // payloads are maps of plain values
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, data)
	_ = http.NewResponseController(s.w).Flush()
}

// data writes an event of data alone, as the Gemini API streams
// (alt=sse): one line, then a blank one.
func (s sse) data(payload any) {
	data, _ := json.Marshal(payload)
	fmt.Fprintf(s.w, "data: %s\r\n\r\n", data)
	_ = http.NewResponseController(s.w).Flush()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// textOf joins the text of a tool result's content: a string, or a list of
// blocks whose "text" fields are joined by newlines.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}
