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
// Both lines are read by the strict reader (internal/jsonscan): a key given
// twice, in another case, or unknown is a request or answer refused.
//
// The socket is reachable by everything the agent runs, so the server holds
// each connection to bounds and answers whatever exceeds one with a deny
// naming it, then goes on: a line is at most MaxLine bytes (the largest call
// input a request carries, MaxInput, the 16 MiB a hook reads, and room for
// the rest); at most MaxConns connections are open at once (past that the
// oldest still sending its line is cut off); the lines being held across
// all of them are at most Budget bytes; and a connection that has not sent
// its whole line within ReadTimeout is dropped. Options.Refused hears of
// each request so refused, for the run's record.
//
// A unix socket's path is at most 107 bytes; Listen and Dial reach a longer
// one through the directory that holds it (/proc/self/fd/N/name), so the
// channel works in a scratch tree of any depth.
//
// It lives apart from mcpserve because the hook program of a vendor asks
// the same channel and has nothing to do with MCP, and apart from the
// launcher because the programs that ask run in the child, not the run.
package decide

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/record"
)

// MaxInput is the largest call input a request is built to carry: the
// PreToolUse payload a hook reads (Claude Code's Write or Edit of a whole
// file) is bounded by it, and fs.write's text is far below it.
const MaxInput = 16 << 20

// MaxLine bounds one line of the channel either way: a call's input and
// room for the request's other fields (or a replacement input and the
// answer's).
const MaxLine = MaxInput + 64<<10

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

// Dial is the Asker of the run listening on the unix socket at path, an
// absolute path of any length: one connection per call.
func Dial(path string) Asker { return socketAsker(path) }

type socketAsker string

func (s socketAsker) Ask(ctx context.Context, req Request) (record.Decision, error) {
	path := string(s)
	line, err := encodeLine(req)
	if err != nil {
		return record.Decision{}, err
	}
	if len(line) > MaxLine+1 {
		return record.Decision{}, fmt.Errorf("the decision request is %d bytes, past the decision channel's %d-byte line limit, so it was not sent", len(line)-1, MaxLine)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, Backstop)
		defer cancel()
	}
	conn, err := dial(ctx, path)
	if err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: %w", path, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	// A write the run cut short (it refused the request) is followed by
	// the run's answer saying why: read it before giving up.
	_, werr := conn.Write(line)
	answer, err := readLine(conn, MaxLine, nil)
	if errors.Is(err, errTooLong) {
		err = fmt.Errorf("an answer longer than %d bytes", MaxLine)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if werr != nil {
			return record.Decision{}, fmt.Errorf("the decision socket %s: writing the request: %w", path, werr)
		}
		return record.Decision{}, fmt.Errorf("the decision socket %s: reading the answer: %w", path, err)
	}
	d, err := ParseDecision(answer)
	if err != nil {
		return record.Decision{}, fmt.Errorf("the decision socket %s: %w", path, err)
	}
	return d, nil
}

// encodeLine renders v as one line without HTML escaping, which would make
// an input of '<' six times its size.
func encodeLine(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseDecision reads one answer line of the channel.
func ParseDecision(line []byte) (record.Decision, error) {
	var d record.Decision
	if err := jsonscan.Decode(line, &d, jsonscan.Options{RefuseUnknown: true}); err != nil {
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
	if err := jsonscan.Decode(line, &req, jsonscan.Options{RefuseUnknown: true}); err != nil {
		return req, fmt.Errorf("the request is not a decision request: %w", err)
	}
	if req.Seam == "" || req.CallID == "" || req.Tool == "" {
		return req, errors.New("the request lacks seam, call_id or tool")
	}
	return req, nil
}

// errTooLong is a line past its limit.
var errTooLong = errors.New("too long")

// firstBuffer is what a line is first read into; every connection may hold
// this much without charge to the server's budget. A longer line is read
// into chunks of chunkSize, taken from a pool and given back when the line
// is done or refused: a flood of lines that never end reuses the same
// memory instead of leaving a growing buffer's copies for the collector.
const (
	firstBuffer = 4 << 10
	chunkSize   = 64 << 10
)

var chunks = sync.Pool{New: func() any { return new([chunkSize]byte) }}

// readLine reads one newline-terminated line of at most max bytes (the
// newline dropped) from r. charge, when set, is asked before each chunk is
// taken, and its error ends the read.
func readLine(r io.Reader, max int, charge func(extra int) error) ([]byte, error) {
	first := make([]byte, firstBuffer)
	var taken []*[chunkSize]byte
	defer func() {
		for _, c := range taken {
			chunks.Put(c)
		}
	}()
	cur, used, total := first, 0, 0 // the chunk being filled, its bytes, all bytes
	for {
		if used == len(cur) {
			if charge != nil {
				if err := charge(chunkSize); err != nil {
					return nil, err
				}
			}
			c := chunks.Get().(*[chunkSize]byte)
			taken = append(taken, c)
			cur, used = c[:], 0
		}
		n, err := r.Read(cur[used:])
		if i := bytes.IndexByte(cur[used:used+n], '\n'); i >= 0 {
			if total+i > max {
				return nil, errTooLong
			}
			line := make([]byte, 0, total+i)
			if len(taken) == 0 {
				return append(line, first[:used+i]...), nil
			}
			line = append(line, first...)
			for _, c := range taken[:len(taken)-1] {
				line = append(line, c[:]...)
			}
			return append(line, cur[:used+i]...), nil
		}
		used += n
		total += n
		if total > max {
			return nil, errTooLong
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF) && total > 0:
			return nil, errors.New("the line ends without a newline")
		default:
			return nil, err
		}
	}
}

// Serve answers the requests arriving on ln with answer until ctx is done
// (then it returns nil) or ln fails. A request that does not parse, and an
// answer that is not a valid decision, are answered with a deny naming the
// fault: a broken asker must not get a call performed. A request past a
// bound of the channel is answered with a deny naming the bound, and told
// to opts.Refused. It returns only after every answer in flight was
// written or abandoned.
func Serve(ctx context.Context, ln net.Listener, answer func(ctx context.Context, req Request) record.Decision, opts Options) error {
	return newServer(answer, opts, defaultLimits).serve(ctx, ln)
}
