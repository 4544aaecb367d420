package mcpserve

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

// The decision channel: before performing, the server asks a decider. In a
// run the launcher answers over a private unix socket; the same channel
// serves the Claude hook program. The protocol is one connection per
// decision: the asker writes one DecisionRequest as a JSON line, the answerer
// writes one record.Decision as a JSON line, and both close.

// SeamOwnedTool is the seam of a call to a tool metaharness serves itself.
const SeamOwnedTool = "owned_tool"

// EnvDecisionsSocket names the decision socket when --decisions-socket is
// not given.
const EnvDecisionsSocket = "METAHARNESS_DECISIONS_SOCKET"

// maxDecisionLine bounds one line of the channel (a request carries the
// call's input, which for fs.write holds a whole file).
const maxDecisionLine = 64 << 20

// DefaultDecisionTimeout is the asker's backstop when its context has no
// deadline: the launcher's own deadline (55 s) comes first.
const DefaultDecisionTimeout = 57 * time.Second

// DecisionRequest is one call put to the decider.
type DecisionRequest struct {
	// Seam is where the call was caught: owned_tool here, hook for the
	// Claude hook program.
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
	Input json.RawMessage `json:"input"`
}

// Decider answers whether a call may be performed. An error means the
// channel failed: the call is then denied, never performed.
type Decider interface {
	Decide(ctx context.Context, req DecisionRequest) (record.Decision, error)
}

// DeciderFunc adapts a function to Decider.
type DeciderFunc func(ctx context.Context, req DecisionRequest) (record.Decision, error)

// Decide calls f.
func (f DeciderFunc) Decide(ctx context.Context, req DecisionRequest) (record.Decision, error) {
	return f(ctx, req)
}

// DialDecider asks the answerer listening on the unix socket at path.
func DialDecider(path string) Decider { return &socketDecider{path: path} }

type socketDecider struct{ path string }

func (s *socketDecider) Decide(ctx context.Context, req DecisionRequest) (record.Decision, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultDecisionTimeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", s.path)
	if err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: %w", s.path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	line, err := json.Marshal(req)
	if err != nil {
		return record.Decision{}, err
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: writing the request: %w", s.path, err)
	}
	answer, err := readLine(bufio.NewReader(conn))
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return record.Decision{}, fmt.Errorf("the decision socket %s: reading the answer: %w", s.path, err)
	}
	d2, err := ParseDecision(answer)
	if err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: %w", s.path, err)
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

// ParseDecisionRequest reads one request line of the channel.
func ParseDecisionRequest(line []byte) (DecisionRequest, error) {
	var req DecisionRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return req, fmt.Errorf("the request is not a decision request: %w", err)
	}
	if req.Seam == "" || req.CallID == "" || req.Tool == "" {
		return req, errors.New("the request lacks seam, call_id or tool")
	}
	return req, nil
}

// readLine reads one newline-terminated line of at most maxDecisionLine
// bytes (the newline dropped).
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxDecisionLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxDecisionLine)
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

// ServeDecisions answers decision requests arriving on ln with decide until
// ctx is done (then it returns nil) or ln fails. A request that does not
// parse, and an answer that is not a valid decision, are answered with a
// deny naming the fault: a broken asker must not get a call performed. It
// returns only after every answer in flight was written or abandoned.
func ServeDecisions(ctx context.Context, ln net.Listener, decide func(ctx context.Context, req DecisionRequest) record.Decision) error {
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
			answerDecision(ctx, conn, decide)
		}()
	}
}

func answerDecision(ctx context.Context, conn net.Conn, decide func(context.Context, DecisionRequest) record.Decision) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	var d record.Decision
	line, err := readLine(bufio.NewReader(conn))
	if err != nil {
		return // the asker went away or sent no line; it denies on its side
	}
	req, err := ParseDecisionRequest(line)
	if err != nil {
		d = record.DenyDecision("metaharness could not read the decision request: " + err.Error())
	} else {
		d = decide(ctx, req)
		if err := d.Validate(); err != nil {
			d = record.DenyDecision("the decider gave no valid decision: " + err.Error())
		}
	}
	out, _ := json.Marshal(d)
	_, _ = conn.Write(append(out, '\n'))
}

// RecordingDecider is the standalone decider: it allows every call and
// records each decision as one JSON line on w.
func RecordingDecider(w io.Writer) Decider { return &recordingDecider{w: w} }

type recordingDecider struct {
	mu sync.Mutex
	w  io.Writer
}

func (r *recordingDecider) Decide(_ context.Context, req DecisionRequest) (record.Decision, error) {
	d := record.AllowDecision()
	line, _ := json.Marshal(struct {
		Decided   string   `json:"decided"`
		Seam      string   `json:"seam"`
		CallID    string   `json:"call_id"`
		Tool      string   `json:"tool"`
		Entry     string   `json:"entry"`
		Operation string   `json:"operation"`
		Subjects  []string `json:"subjects"`
	}{d.Decision, req.Seam, req.CallID, req.Tool, req.Entry, req.Operation, req.Subjects})
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.w.Write(append(line, '\n'))
	return d, nil
}
