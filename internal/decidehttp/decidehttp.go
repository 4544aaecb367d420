// Package decidehttp serves the run's decision channel as an HTTP endpoint,
// for a vendor that posts each call's decision request itself (Claude
// Code's http hooks): nothing starts per call, and the request is answered
// in the run's own process over a connection the vendor keeps open.
//
// The endpoint takes requests only from the vendor. The launch puts it
// where the vendor reaches it and its commands cannot (a port of its own
// in the child's network namespace, which the command sandbox's Landlock
// rules keep the commands off); and, where the kernel does not hold, two
// checks of its own, both on every request: the connection must be the
// vendor's own process's (Endpoint.Admit, asked once per connection), and
// the request must carry the run's secret as a bearer token, which the
// vendor holds in its environment and the command sandbox takes out of
// every command's (compared in constant time). A request that fails
// either is answered 403 or 401 and told to Endpoint.Refused; a vendor
// told to fail closed (Claude Code's onFailure "block") blocks its call
// on any answer but a 2xx one.
//
// The vendor's own request is held to the decision channel's bounds
// (internal/decide): a body of at most decide.MaxLine bytes arriving within
// decide.ReadTimeout, at most decide.MaxConns connections open at once. A
// request past a bound, or one whose body is no request, is answered with
// a deny naming the fault (so that the model is told why) and told to
// Endpoint.Refused; an answer that is not a valid decision becomes a deny.
// Connections are kept open as long as the vendor keeps them: closing an
// idle one would race the vendor's next request on it, whose failure
// blocks a call the run never saw.
package decidehttp

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

// Path is where the endpoint takes requests: POST, nothing else.
const Path = "/decide"

// writeTimeout bounds writing an answer to a vendor that does not read it.
const writeTimeout = 10 * time.Second

// Endpoint is what the server is built from.
type Endpoint struct {
	// Token is the run's secret, which a request carries as
	// "Authorization: Bearer <Token>". It must not be empty.
	Token string
	// Admit, when set, says whether a connection from remote to local is
	// the vendor's own (nil when it is); it is asked once per connection,
	// at its first request.
	Admit func(local, remote net.Addr) error
	// Read reads a request's body, the vendor's payload, as a decision
	// request.
	Read func(body []byte) (decide.Request, error)
	// Write renders a decision as the body the vendor reads.
	Write func(record.Decision) []byte
	// Answer decides a request.
	Answer func(ctx context.Context, req decide.Request) record.Decision
	// Refused, when set, hears of each request refused before Answer saw
	// it. It is called from many goroutines at once and must not block.
	Refused func(decide.Refusal)
}

// Serve answers the requests arriving on ln until ctx is done (then it
// returns nil, once every answer in flight was written or abandoned) or ln
// fails.
func Serve(ctx context.Context, ln net.Listener, ep Endpoint) error {
	if ep.Token == "" || ep.Read == nil || ep.Write == nil || ep.Answer == nil {
		return errors.New("the decision endpoint needs a token, a reader, a writer and a decider")
	}
	s := &server{ep: ep, maxConns: decide.MaxConns, maxBody: decide.MaxLine, read: decide.ReadTimeout}
	return s.serve(ctx, ln)
}

type server struct {
	ep       Endpoint
	maxConns int
	maxBody  int64
	read     time.Duration

	open     atomic.Int64
	inFlight sync.WaitGroup
	conns    sync.Map // net.Conn → *admission, while it is open
}

// connKey keys a connection's admission in its requests' contexts.
type connKey struct{}

// admission is one connection's answer from Endpoint.Admit, and whether
// any request of it reached the handler.
type admission struct {
	local, remote net.Addr
	once          sync.Once
	err           error
	asked         atomic.Bool
}

func (s *server) serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           http.HandlerFunc(s.handle),
		ReadHeaderTimeout: s.read,
		MaxHeaderBytes:    64 << 10,
		// No IdleTimeout or ReadTimeout: a vendor's idle connection stays
		// until the vendor closes it or the run ends (the package doc).
		BaseContext: func(net.Listener) context.Context { return ctx },
		ConnContext: func(c context.Context, nc net.Conn) context.Context {
			a := &admission{local: nc.LocalAddr(), remote: nc.RemoteAddr()}
			s.conns.Store(nc, a)
			return context.WithValue(c, connKey{}, a)
		},
		ConnState: s.count,
		// What net/http would log (a client gone mid-answer) is no event
		// of the run's.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		s.inFlight.Wait()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("the decision endpoint: %w", err)
	case <-ctx.Done():
		_ = srv.Close()
		<-done
		s.inFlight.Wait()
		return nil
	}
}

// count holds the connections open at once to maxConns: one past it is
// closed before it is read, and told to Refused. A connection that ends
// without a request reaching the handler (it sent none, none whole within
// the read timeout, or one net/http answered 400 itself) is told to
// Refused too: nothing of it was decided.
func (s *server) count(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		if s.open.Add(1) > int64(s.maxConns) {
			_ = c.Close()
			s.conns.Delete(c)
			s.refused(decide.FaultTooMany, fmt.Sprintf("more than %d connections to the decision endpoint were open at once", s.maxConns))
		}
	case http.StateClosed, http.StateHijacked:
		s.open.Add(-1)
		if a, ok := s.conns.LoadAndDelete(c); ok && !a.(*admission).asked.Load() {
			s.refused(decide.FaultIncomplete, fmt.Sprintf("a connection from %s ended before a whole request reached the decision endpoint", a.(*admission).remote))
		}
	}
}

func (s *server) refused(f decide.Fault, detail string) {
	if s.ep.Refused != nil {
		s.ep.Refused(decide.Refusal{Fault: f, Detail: detail})
	}
}

func (s *server) handle(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Done()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(writeTimeout))
	// Who asks, before anything it sent is read: a refused asker learns
	// nothing but the status, and its connection is closed.
	if err := s.admitted(r); err != nil {
		s.shut(w, http.StatusForbidden, decide.FaultNotVendor, "the connection is not the vendor's: "+err.Error())
		return
	}
	if !s.tokenHeld(r.Header.Values("Authorization")) {
		s.shut(w, http.StatusUnauthorized, decide.FaultToken, "the request does not carry the run's decision token")
		return
	}
	if r.URL.Path != Path || r.Method != http.MethodPost {
		s.shut(w, http.StatusNotFound, decide.FaultMalformed, fmt.Sprintf("%s %s is not the decision endpoint (POST %s)", r.Method, r.URL.Path, Path))
		return
	}
	_ = rc.SetReadDeadline(time.Now().Add(s.read))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	_ = rc.SetReadDeadline(time.Time{})
	var tooLong *http.MaxBytesError
	switch {
	case errors.As(err, &tooLong):
		s.deny(w, decide.FaultTooLong, fmt.Sprintf("its body is longer than the decision endpoint's %d-byte limit", s.maxBody))
		return
	case isTimeout(err):
		s.deny(w, decide.FaultTimeout, fmt.Sprintf("no whole body arrived within %s", s.read))
		return
	case err != nil:
		s.deny(w, decide.FaultIncomplete, "the connection ended before a whole body: "+err.Error())
		return
	}
	req, err := s.ep.Read(body)
	body = nil // the request holds what it needs
	if err != nil {
		s.deny(w, decide.FaultMalformed, err.Error())
		return
	}
	d := s.ep.Answer(r.Context(), req)
	if err := d.Validate(); err != nil {
		d = record.DenyDecision("the decider gave no valid decision: " + err.Error())
	}
	s.answer(w, d)
}

// admitted is Endpoint.Admit's answer for r's connection, nil without
// Admit.
func (s *server) admitted(r *http.Request) error {
	a, ok := r.Context().Value(connKey{}).(*admission)
	if !ok {
		return errors.New("its ends are unknown")
	}
	a.asked.Store(true)
	if s.ep.Admit == nil {
		return nil
	}
	a.once.Do(func() { a.err = s.ep.Admit(a.local, a.remote) })
	return a.err
}

// tokenHeld reports whether the one Authorization header is the run's
// bearer token, compared in constant time.
func (s *server) tokenHeld(h []string) bool {
	if len(h) != 1 {
		return false
	}
	got, ok := strings.CutPrefix(h[0], "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.ep.Token)) == 1
}

// shut answers a refused asker with status alone, closes its connection
// and tells Refused.
func (s *server) shut(w http.ResponseWriter, status int, f decide.Fault, detail string) {
	s.refused(f, detail)
	w.Header().Set("Connection", "close")
	http.Error(w, http.StatusText(status), status)
}

// deny answers the vendor's request that broke a bound with a deny naming
// it, and tells Refused first: a vendor that reads the deny finds it
// recorded.
func (s *server) deny(w http.ResponseWriter, f decide.Fault, detail string) {
	s.refused(f, detail)
	w.Header().Set("Connection", "close") // what was left unread of the body goes with it
	s.answer(w, record.DenyDecision("metaharness refused the decision request: "+detail))
}

func (s *server) answer(w http.ResponseWriter, d record.Decision) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.ep.Write(d))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
