// Package decide is the private decision channel of a run: the programs a
// run's child starts (the catalogue server, a vendor's hook program) ask the
// run, over a unix socket in its scratch tree, whether a call may go ahead,
// and the run answers through its decision engine.
//
// The protocol is one connection per decision: the asker writes one Request
// as a JSON line, the answerer writes one record.Decision as a JSON line,
// and both close. Every failure denies: an asker that cannot reach the run,
// or reads no valid answer, reports an error its caller turns into a deny,
// and Serve answers a request it cannot read with a deny naming the fault.
//
// It lives apart from mcpserve because the hook program of a vendor asks
// the same channel and has nothing to do with MCP, and apart from the
// launcher because the programs that ask run in the child, not the run.
package decide

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/metaharness/metaharness/record"
)

// maxLine bounds one line of the channel (a request carries the
// call's input, which for fs.write holds a whole file).
const maxLine = 64 << 20

// Backstop is how long an asker waits when its context has no deadline. It
// lies past the run's own deadline for a pending call (frame.DeadlineFor of
// the vendor's hook timeout), so the run's answer, a deny at its deadline
// included, always arrives first, and inside the vendor's own timeout, so
// that a dead run is a deny from us rather than the vendor's guess.
const Backstop = 57 * time.Second

// Request is one call put to the run.
type Request struct {
	// Seam is where the call was caught: record.SeamOwnedTool for the
	// catalogue server, record.SeamHook for a vendor's hook program.
	Seam string `json:"seam"`
	// CallID joins the decision to the call in the transcript: Claude's
	// tool_use id (_meta "claudecode/toolUseId") when the client sent one,
	// else the JSON-RPC request id, else a generated id.
	CallID string `json:"call_id"`
	// Tool is the published name the client called.
	Tool string `json:"tool"`
	// Entry is the contract entry reached ("" for none).
	Entry string `json:"entry"`
	// Operation is the entry's operation ("" for none).
	Operation string `json:"operation"`
	// Subjects are what the call acts on (file:<path>, proc:<argv0>).
	Subjects []string `json:"subjects"`
	// Catalogue marks tool_search and tool_describe, which read only the
	// catalogue.
	Catalogue bool `json:"catalogue,omitempty"`
	// Input is the entry's checked input (nulls of optional fields removed).
	Input json.RawMessage `json:"input,omitempty"`
}

// Asker asks whether a call may be performed. An error means the channel
// failed: the caller then denies the call, never performs it.
type Asker interface {
	Ask(ctx context.Context, req Request) (record.Decision, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, req Request) (record.Decision, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, req Request) (record.Decision, error) {
	return f(ctx, req)
}

// Dial is the Asker of the run listening on the unix socket at path: one
// connection per call.
func Dial(path string) Asker { return socketAsker(path) }

type socketAsker string

func (s socketAsker) Ask(ctx context.Context, req Request) (record.Decision, error) {
	path := string(s)
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Backstop)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return record.Decision{}, err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: writing the request: %w", path, err)
	}
	answer, err := readLine(bufio.NewReader(conn))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return record.Decision{}, fmt.Errorf("the decision socket %s: reading the answer: %w", path, err)
	}
	d2, err := ParseDecision(answer)
	if err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: %w", path, err)
	}
	return d2, nil
}

// ParseDecision reads one answer line of the channel.
func ParseDecision(line []byte) (record.Decision, error) {
	var d record.Decision
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("the answer is not a decision object: %w", err)
	}
	if err := d.Validate(); err != nil {
		return d, fmt.Errorf("the answer is not a valid decision: %w", err)
	}
	return d, nil
}

// ParseRequest reads one request line of the channel.
func ParseRequest(line []byte) (Request, error) {
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return req, fmt.Errorf("the request is not a decision request: %w", err)
	}
	if req.Seam == "" || req.CallID == "" || req.Tool == "" {
		return req, errors.New("the request lacks seam, call_id or tool")
	}
	return req, nil
}

// readLine reads one newline-terminated line of at most maxLine
// bytes (the newline dropped).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return nil, errors.New("the line ends without a newline")
		default:
			return nil, err
		}
	}
}

// Serve answers the requests arriving on ln with answer until ctx is done
// (then it returns nil) or ln fails. A request that does not parse, and an
// answer that is not a valid decision, are answered with a deny naming the
// fault: a broken asker must not get a call performed. It returns only
// after every answer in flight was written or abandoned.
func Serve(ctx context.Context, ln net.Listener, answer func(ctx context.Context, req Request) record.Decision) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the decision socket: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			answerOne(ctx, conn, answer)
		}()
	}
}

func answerOne(ctx context.Context, conn net.Conn, answer func(context.Context, Request) record.Decision) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	var d record.Decision
	line, err := readLine(bufio.NewReader(conn))
	if err != nil {
		return // the asker went away or sent no line; it denies on its side
	}
	req, err := ParseRequest(line)
	if err != nil {
		d = record.DenyDecision("metaharness could not read the decision request: " + err.Error())
	} else {
		d = answer(ctx, req)
		if err := d.Validate(); err != nil {
			d = record.DenyDecision("the decider gave no valid decision: " + err.Error())
		}
	}
	out, _ := json.Marshal(d)
	_, _ = conn.Write(append(out, '\n'))
}
