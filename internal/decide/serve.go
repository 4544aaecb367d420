package decide

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/record"
)

// The server's bounds (the package doc says why each is there).
const (
	// MaxConns bounds the connections open at once.
	MaxConns = 64
	// Budget bounds the bytes of request lines held across all connections
	// at once, beyond the first few KiB each: one request of MaxLine and
	// room for many small ones.
	Budget = MaxLine + 8<<20
	// ReadTimeout is how long a connection has, from its accept, to send
	// its whole request line. An asker writes it at once; a 16 MiB line
	// takes milliseconds.
	ReadTimeout = 10 * time.Second
	// writeTimeout bounds writing the answer to an asker that does not
	// read it.
	writeTimeout = 10 * time.Second
)

// Options are Serve's optional parts.
type Options struct {
	// Refused, when set, hears of each request the channel refused, and
	// answered with a deny, before the decider saw it, so that the run can
	// record it. It is called from the connection's goroutine, from many
	// at once, and must not block.
	Refused func(Refusal)
}

// Refusal is one request the channel refused.
type Refusal struct {
	Fault Fault
	// Detail says what was wrong, naming the bound; the deny's reason
	// says the same.
	Detail string
}

// Fault names what a refused request broke.
type Fault string

// The faults a request is refused for.
const (
	FaultTooLong    Fault = "line-too-long"        // a line past MaxLine
	FaultBudget     Fault = "over-budget"          // the lines held at once past Budget
	FaultTooMany    Fault = "too-many-connections" // past MaxConns
	FaultTimeout    Fault = "read-timeout"         // no whole line within ReadTimeout
	FaultIncomplete Fault = "incomplete"           // the connection ended before its line did
	FaultMalformed  Fault = "malformed"            // the line is not a request
	// An HTTP endpoint's own (internal/decidehttp): the asker is not the
	// vendor, by its connection or its token.
	FaultNotVendor Fault = "not-the-vendor" // a connection the vendor's process does not hold
	FaultToken     Fault = "bad-token"      // no run's decision token
)

type limits struct {
	line, conns, budget int
	read, write         time.Duration
}

var defaultLimits = limits{line: MaxLine, conns: MaxConns, budget: Budget, read: ReadTimeout, write: writeTimeout}

type server struct {
	answer  func(context.Context, Request) record.Decision
	refused func(Refusal)
	lim     limits

	mu      sync.Mutex
	open    int     // connections counted against lim.conns
	reading []*conn // counted connections still reading their line, oldest first
	held    int     // buffer bytes charged against lim.budget
}

// conn is one asker's connection. Its fields are the server's, under mu.
type conn struct {
	net.Conn
	counted bool
	held    int
	cut     *Refusal // why the server cut it off
}

func newServer(answer func(context.Context, Request) record.Decision, opts Options, lim limits) *server {
	return &server{answer: answer, refused: opts.Refused, lim: lim}
}

var errOverBudget = errors.New("over budget")

func (s *server) serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	pause := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			// Out of descriptors (or a connection gone before its accept):
			// the channel waits and goes on rather than end every later
			// decision.
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ECONNABORTED) {
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				select {
				case <-time.After(pause):
				case <-ctx.Done():
				}
				continue
			}
			return fmt.Errorf("the decision socket: %w", err)
		}
		pause = 0
		c := &conn{Conn: nc}
		s.admit(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(ctx, c)
		}()
	}
}

// admit counts c against lim.conns. Past the bound the oldest connection
// still sending its line is cut off, so that idle connections cannot keep
// a real asker out; when every connection is waiting for its answer, c is
// the one refused.
func (s *server) admit(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open >= s.lim.conns {
		if len(s.reading) == 0 {
			c.cut = &Refusal{FaultTooMany, fmt.Sprintf("%d requests were already waiting for their answers, the most the decision channel holds at once", s.lim.conns)}
			return
		}
		s.cutLocked(s.reading[0], Refusal{FaultTooMany, fmt.Sprintf("more than %d connections to the decision channel were open at once, and this one had waited longest without sending its whole request line", s.lim.conns)})
	}
	s.open++
	c.counted = true
	s.reading = append(s.reading, c)
	// Set here, before any cut can set its own.
	_ = c.SetReadDeadline(time.Now().Add(s.lim.read))
}

// cutLocked refuses v while it reads: its slot is free at once, its
// buffer's charge when its goroutine lets the buffer go.
func (s *server) cutLocked(v *conn, r Refusal) {
	v.cut = &r
	s.uncountLocked(v)
	_ = v.SetReadDeadline(time.Now())
}

func (s *server) uncountLocked(c *conn) {
	if i := slices.Index(s.reading, c); i >= 0 {
		s.reading = slices.Delete(s.reading, i, i+1)
	}
	if c.counted {
		c.counted = false
		s.open--
	}
}

// charge lets c's buffer grow by extra bytes, within the budget.
func (s *server) charge(c *conn, extra int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.cut != nil {
		return errors.New("cut off")
	}
	if s.held+extra > s.lim.budget {
		return errOverBudget
	}
	s.held += extra
	c.held += extra
	return nil
}

func (s *server) handle(ctx context.Context, c *conn) {
	defer func() {
		_ = c.Close()
		s.mu.Lock()
		s.uncountLocked(c)
		s.held -= c.held
		c.held = 0
		s.mu.Unlock()
	}()
	s.mu.Lock()
	cut := c.cut
	s.mu.Unlock()
	if cut != nil { // refused at its accept
		s.refuse(c, *cut)
		return
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	line, err := readLine(c, s.lim.line, func(extra int) error { return s.charge(c, extra) })
	s.mu.Lock()
	cut = c.cut
	if i := slices.Index(s.reading, c); i >= 0 {
		s.reading = slices.Delete(s.reading, i, i+1)
	}
	s.mu.Unlock()
	switch {
	case ctx.Err() != nil:
		return // the run is ending; the asker denies on its side
	case cut != nil:
		s.refuse(c, *cut)
		return
	case errors.Is(err, errTooLong):
		s.refuse(c, Refusal{FaultTooLong, fmt.Sprintf("its line is longer than the decision channel's %d-byte limit", s.lim.line)})
		return
	case errors.Is(err, errOverBudget):
		s.refuse(c, Refusal{FaultBudget, fmt.Sprintf("the request lines held at once would pass the decision channel's %d-byte budget", s.lim.budget)})
		return
	case isTimeout(err):
		s.refuse(c, Refusal{FaultTimeout, fmt.Sprintf("no whole request line arrived within %s", s.lim.read)})
		return
	case err != nil:
		s.refuse(c, Refusal{FaultIncomplete, "the connection ended before a whole request line: " + err.Error()})
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	req, err := ParseRequest(line)
	line = nil // the request holds what it needs
	if err != nil {
		s.refuse(c, Refusal{FaultMalformed, err.Error()})
		return
	}
	d := s.answer(ctx, req)
	if err := d.Validate(); err != nil {
		d = record.DenyDecision("the decider gave no valid decision: " + err.Error())
	}
	s.write(c, d)
}

// refuse answers a deny naming r and tells Options.Refused.
func (s *server) refuse(c *conn, r Refusal) {
	if s.refused != nil {
		s.refused(r) // first: an asker that reads the deny finds it recorded
	}
	s.write(c, record.DenyDecision("metaharness refused the decision request: "+r.Detail))
}

func (s *server) write(c *conn, d record.Decision) {
	out, err := encodeLine(d)
	if err != nil {
		return
	}
	_ = c.SetWriteDeadline(time.Now().Add(s.lim.write))
	_, _ = c.Write(out)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
