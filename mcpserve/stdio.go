package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// mcp-go's stdio transport cancels its requests and stops its tool-call
// workers as soon as the input ends, so the calls of `printf … | mcp-serve`
// that were still queued are never answered. drain holds the end of the
// input back until every request read has been answered (or ctx is done):
// it watches the request ids going in and the response ids coming out.
type drain struct {
	ctx     context.Context
	in      io.Reader
	out     io.Writer
	mu      sync.Mutex
	pending map[string]int
	changed chan struct{} // closed and replaced whenever pending shrinks
	partIn  []byte        // an incomplete line read so far
	outMu   sync.Mutex
	partOut []byte
}

func newDrain(ctx context.Context, in io.Reader, out io.Writer) *drain {
	return &drain{ctx: ctx, in: in, out: out, pending: map[string]int{}, changed: make(chan struct{})}
}

// Read passes the input through, noting each request's id; at the end of
// the input it waits for the answers before it reports the end.
func (d *drain) Read(p []byte) (int, error) {
	n, err := d.in.Read(p)
	d.partIn = d.lines(append(d.partIn, p[:n]...), d.noteRequest)
	if err == io.EOF && n == 0 {
		d.wait()
	}
	return n, err
}

// Write passes the output through, crossing off each answered id.
func (d *drain) Write(p []byte) (int, error) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	n, err := d.out.Write(p)
	d.partOut = d.lines(append(d.partOut, p[:n]...), d.noteResponse)
	return n, err
}

func (d *drain) lines(buf []byte, note func([]byte)) []byte {
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return buf
		}
		note(buf[:i])
		buf = buf[i+1:]
	}
}

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	k, _ := json.Marshal(v) // 1, 1.0 and 1e0 are one id
	return string(k)
}

func (d *drain) noteRequest(line []byte) {
	var e envelope
	if json.Unmarshal(line, &e) != nil || e.Method == "" {
		return
	}
	if k := idKey(e.ID); k != "" {
		d.mu.Lock()
		d.pending[k]++
		d.mu.Unlock()
	}
}

func (d *drain) noteResponse(line []byte) {
	var e envelope
	if json.Unmarshal(line, &e) != nil || e.Result == nil && e.Error == nil {
		return
	}
	k := idKey(e.ID)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending[k] == 0 {
		return
	}
	if d.pending[k]--; d.pending[k] == 0 {
		delete(d.pending, k)
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

func (d *drain) wait() {
	for {
		d.mu.Lock()
		left, changed := len(d.pending), d.changed
		d.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-changed:
		case <-d.ctx.Done():
			return
		}
	}
}
