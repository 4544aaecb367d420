package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/metaharness/metaharness/launcher/kind"
	"io"
	"strconv"
	"sync"
)

// maxLine bounds one JSON-RPC line from app-server (an item with a
// command's whole output is the longest codex writes).
const maxLine = kind.MaxVendorLine

// errClosed: app-server's stdout ended before it answered.
var errClosed = errors.New("codex app-server closed its stdout before answering")

// conn is the run's end of the JSON-RPC conversation with app-server: one
// JSON object per line on its stdin and stdout. Every line, either way, goes
// into the transcript and then onto lines, in the order it crossed the
// pipe; the answers to the run's own requests also go straight to the
// caller waiting for them, so a caller never waits on whoever reads lines.
type conn struct {
	in io.WriteCloser

	mu         sync.Mutex // one line at a time into stdin, the transcript and lines
	transcript io.Writer
	lines      *queue
	next       int
	pending    map[string]chan *message
	closed     bool
	inClosed   bool
}

func newConn(in io.WriteCloser, transcript io.Writer) *conn {
	return &conn{in: in, transcript: transcript, lines: newQueue(), pending: map[string]chan *message{}}
}

// record keeps one line: the transcript, then the reader's queue.
func (c *conn) record(line []byte) {
	_, _ = c.transcript.Write(line)
	c.lines.push(line)
}

// send writes one message to app-server.
func (c *conn) send(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inClosed {
		return errors.New("the run has closed app-server's stdin")
	}
	c.record(b)
	_, err = c.in.Write(b)
	return err
}

// call sends a request and waits for its answer, or ctx, or the end of
// app-server's stdout.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	c.next++
	id := strconv.Quote("mh-" + strconv.Itoa(c.next))
	ch := make(chan *message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	err := c.send(struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params any             `json:"params"`
	}{json.RawMessage(id), method, params})
	if err != nil {
		c.forget(id)
		return nil, err
	}
	select {
	case m := <-ch:
		if m == nil {
			return nil, errClosed
		}
		if m.Error != nil {
			return nil, &callError{method, m.Error}
		}
		return m.Result, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

func (c *conn) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// callError is app-server's error answer to a request of the run's.
type callError struct {
	method string
	err    *rpcError
}

func (e *callError) Error() string {
	return fmt.Sprintf("codex answered %s with error %d: %s", e.method, e.err.Code, e.err.Message)
}

// notify sends a notification.
func (c *conn) notify(method string) error {
	return c.send(struct {
		Method string `json:"method"`
	}{method})
}

// reply answers a request of app-server's.
func (c *conn) reply(id json.RawMessage, result any) error {
	return c.send(struct {
		ID     json.RawMessage `json:"id"`
		Result any             `json:"result"`
	}{id, result})
}

// replyError refuses a request of app-server's.
func (c *conn) replyError(id json.RawMessage, code int, msg string) error {
	return c.send(struct {
		ID    json.RawMessage `json:"id"`
		Error rpcError        `json:"error"`
	}{id, rpcError{Code: code, Message: msg}})
}

// closeInput closes app-server's stdin: it ends the process (rc 0) once
// whatever runs has stopped.
func (c *conn) closeInput() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inClosed {
		c.inClosed = true
		_ = c.in.Close()
	}
}

// readFrom reads app-server's stdout to its end. long is called for a line
// past maxLine, which is dropped.
func (c *conn) readFrom(out io.Reader, long func()) {
	kind.EachLine(out, maxLine, c.received, long)
	c.mu.Lock()
	c.closed = true
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	c.lines.close()
}

// received keeps a line from app-server and hands an answer to its caller.
func (c *conn) received(line []byte) {
	if line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	var m message
	parsed := json.Unmarshal(line, &m) == nil
	c.mu.Lock()
	c.record(line)
	var ch chan *message
	if parsed && m.Method == "" && clientID(m.ID) {
		ch = c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
	}
	c.mu.Unlock()
	if ch != nil {
		ch <- &m
	}
}

// queue is an unbounded FIFO of lines: the pipe reader never waits for the
// one who maps them (who may be waiting on the decision engine).
type queue struct {
	mu     sync.Mutex
	cond   *sync.Cond
	items  [][]byte
	closed bool
}

func newQueue() *queue {
	q := &queue{}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) push(b []byte) {
	q.mu.Lock()
	q.items = append(q.items, b)
	q.mu.Unlock()
	q.cond.Signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// pop waits for the next line; ok is false once the queue is closed and
// empty.
func (q *queue) pop() ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return nil, false
	}
	b := q.items[0]
	q.items = q.items[1:]
	return b, true
}
