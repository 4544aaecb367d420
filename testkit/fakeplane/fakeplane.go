// Package fakeplane is a stand-in Auto Harness control plane for tests of
// the client and of what is built on it (the dispatch Action, the
// auto-harness CLI): an https server on loopback that answers each route
// with the replies a test gives it, in turn, and records every request as
// it came (method, URI, headers, body). Its certificate can be written to
// a file for SSL_CERT_FILE, so that a process of its own trusts it as a
// real control plane's; NewInsecure serves plain http instead, as a local
// control plane on loopback does.
package fakeplane

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
)

// Reply is one answer to a route.
type Reply struct {
	Status int
	Body   string
	Header http.Header
	// Hang sends nothing until the client gives up or the server closes.
	Hang bool
}

// Request is a request as the server saw it.
type Request struct {
	Method string
	// URI is the path and query as sent: /api/v1/sessions?limit=1.
	URI    string
	Header http.Header
	Body   string
}

// Server is the stand-in control plane.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	replies  map[string][]Reply
	before   map[string]func()
	requests []Request
	closing  chan struct{}
}

// New starts a Server. Unknown routes are 404 NOT_FOUND, as the control
// plane answers them; GET /health is {"ok":true} until a test says
// otherwise.
func New() *Server {
	s := newServer()
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	return s
}

// NewInsecure is New serving plain http.
func NewInsecure() *Server {
	s := newServer()
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

func newServer() *Server {
	s := &Server{replies: map[string][]Reply{}, before: map[string]func(){}, closing: make(chan struct{})}
	s.Handle("GET /health", Reply{Status: 200, Body: `{"ok":true}`})
	return s
}

// Close stops the server, letting hung replies go first.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.Server.Close()
}

// Handle sets the replies to route ("METHOD /path?query", as sent): each
// request takes the next, and the last one answers every request after.
func (s *Server) Handle(route string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies[route] = replies
}

// Before runs f whenever route is requested, before its reply is sent: a
// test's way of changing the world while a request is in flight.
func (s *Server) Before(route string, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.before[route] = f
}

// Requests are the requests so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// WriteCA writes the server's certificate to path in PEM, for
// SSL_CERT_FILE.
func (s *Server) WriteCA(path string) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o644)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + r.URL.RequestURI()
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, URI: r.URL.RequestURI(), Header: r.Header.Clone(), Body: string(body)})
	reply := Reply{Status: 404, Body: `{"error":{"code":"NOT_FOUND","message":"not found"}}`}
	if rs := s.replies[route]; len(rs) > 0 {
		reply = rs[0]
		if len(rs) > 1 {
			s.replies[route] = rs[1:]
		}
	}
	before := s.before[route]
	s.mu.Unlock()
	if before != nil {
		before()
	}
	if reply.Hang {
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	}
	for k, v := range reply.Header {
		w.Header()[k] = v
	}
	if reply.Body != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(reply.Status)
	io.WriteString(w, reply.Body)
}
