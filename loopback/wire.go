package loopback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The model APIs a proxy reads (Config.ModelAPI), by the names
// launcher/kind's Descriptor.ModelAPI and conformance/scripted use.
const (
	AnthropicMessages = "anthropic-messages"
	OpenAIResponses   = "openai-responses"
	GeminiAPI         = "gemini-generate-content"
)

// ModelAPIPaths is the method and path (under the upstream's prefix) by
// which the pinned vendors' clients reach api, in Config.AllowPaths' form:
// Claude Code's POST /v1/messages, Codex's POST /v1/responses, Gemini CLI's
// POST /v1beta/models/MODEL:streamGenerateContent (its turns) and
// :generateContent (the router's and other side calls). Nil for an api it
// does not know.
func ModelAPIPaths(api string) []string {
	switch api {
	case AnthropicMessages:
		return []string{"POST /v1/messages"}
	case OpenAIResponses:
		return []string{"POST /v1/responses"}
	case GeminiAPI:
		return []string{"POST /v1beta/models/*:streamGenerateContent", "POST /v1beta/models/*:generateContent"}
	}
	return nil
}

// DefaultWireLimit is how much content one proxy's wire view holds by
// default (Config.WireLimit): 64 MiB.
const DefaultWireLimit = 64 << 20

// maxEvent bounds one event of a stream that the view reads; a larger one
// is skipped and counted (Response.Unreadable). A Responses stream's
// response.completed, the largest event, repeats the whole output.
const maxEvent = 16 << 20

// Per-response and per-item costs counted against the limit besides the
// content, so that many empty responses are bounded too.
const (
	responseCost = 256
	itemCost     = 64
)

// End is how a response ended, as far as the wire showed.
type End string

const (
	// EndOpen: the response is still being relayed.
	EndOpen End = ""
	// EndCompleted: it ended as the API ends a response: message_stop,
	// response.completed, or a whole message as a JSON body.
	EndCompleted End = "completed"
	// EndIncomplete: response.incomplete (StopReason says why).
	EndIncomplete End = "incomplete"
	// EndFailed: an error status, an error event or response.failed
	// (ErrorType names the API's error).
	EndFailed End = "failed"
	// EndCut: the body stopped before the API's end: the upstream broke
	// off, the client went away, or the stream just stopped.
	EndCut End = "cut"
	// EndOther: the body ended, but it was not one the view reads
	// (Response.Unread says why) or not a response of the API.
	EndOther End = "other"
)

// ItemKind sorts what the model emitted.
type ItemKind string

const (
	KindText      ItemKind = "text"      // assistant text
	KindToolCall  ItemKind = "tool_call" // a call of a client tool (Item.Call)
	KindReasoning ItemKind = "reasoning" // thinking or reasoning: the kind only, no content
	KindOther     ItemKind = "other"     // anything else (a server tool's use, say): its Type only
)

// InputForm says how a Call's Input came from the wire.
type InputForm string

const (
	// InputJSON: a JSON value, in Canonical form (Anthropic's tool_use
	// input; a Responses function_call's arguments string, parsed).
	InputJSON InputForm = "json"
	// InputText: a freeform (custom) tool call's input text, as a JSON string.
	InputText InputForm = "text"
	// InputUnparsed: input that is not one JSON value (a function_call's
	// arguments string that is not JSON, an object with a duplicate key,
	// or a call still streaming or cut), kept as the JSON string of its
	// text; nil when no input text arrived.
	InputUnparsed InputForm = "unparsed"
)

// Response is one model response as the wire showed it: one per forwarded
// request, whatever the upstream answered.
type Response struct {
	Start  time.Time `json:"start"` // when the request reached the proxy
	Method string    `json:"method"`
	Path   string    `json:"path"`
	// Status is the upstream's HTTP status.
	Status int `json:"status"`
	// Stream: the body was an event stream (else a whole JSON body).
	Stream bool `json:"stream"`
	// ID is the API's id for the response (Anthropic msg_…, OpenAI resp_…).
	ID    string `json:"id"`
	Model string `json:"model"`
	// Items is what the model emitted, in order.
	Items []Item `json:"items"`
	// StopReason is the API's own word for why the model stopped:
	// Anthropic's stop_reason (end_turn, tool_use, max_tokens, …); on the
	// Responses API incomplete_details.reason when given, else the
	// response's status.
	StopReason string `json:"stop_reason,omitempty"`
	End        End    `json:"end"`
	// ErrorType is the API's error type or code, when the response failed.
	ErrorType string `json:"error_type,omitempty"`
	// Usage is the API's token accounting for the response as the wire
	// gave it; nil when it gave none.
	Usage *Usage `json:"usage,omitempty"`
	// Unread says why the body was not read into the view (content
	// encoded, not an event stream or JSON); empty when it was.
	Unread string `json:"unread,omitempty"`
	// Unreadable counts events (or a JSON body) the view could not read:
	// not JSON it could walk, or an event over 16 MiB.
	Unreadable int `json:"unreadable,omitempty"`
	// Truncated: the wire view's bound was reached while this response
	// was read; some of its content is not held (Item.Truncated says
	// which).
	Truncated bool `json:"truncated,omitempty"`
	// Asked is what the request offered the model, as the proxy read the
	// body it forwarded: nil where the view does not read requests (only
	// the Gemini API's, whose client says nothing of it in its own record)
	// or the body was too large to hold.
	Asked *Asked `json:"asked,omitempty"`
}

// Asked is a request's offer to the model: the tools it declared, and the
// opening of its first user text (Gemini CLI's session context, which names
// its workspace), bounded by maxAskedContext.
type Asked struct {
	Tools   []string `json:"tools"`
	Context string   `json:"context,omitempty"`
}

// maxAskedContext bounds the first user text a request's Asked keeps.
const maxAskedContext = 8 << 10

// Usage is a response's token counts as the API reports them: Anthropic's
// usage (message_start's, output_tokens as message_delta last says), the
// Responses API's response.usage.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
}

// readUsage reads a usage object into u (made when nil): the keys both
// APIs spell, each that is present replacing what u held.
func readUsage(u **Usage, obj []byte) {
	if *u == nil {
		*u = &Usage{}
	}
	members(obj, func(k, v []byte) bool {
		n, ok := intValue(v)
		switch {
		case keyIs(k, "input_tokens_details"):
			members(v, func(k, v []byte) bool {
				if n, ok := intValue(v); ok && keyIs(k, "cached_tokens") {
					(*u).CacheReadTokens = int64(n)
				}
				return true
			})
		case !ok:
		case keyIs(k, "input_tokens"):
			(*u).InputTokens = int64(n)
		case keyIs(k, "output_tokens"):
			(*u).OutputTokens = int64(n)
		case keyIs(k, "cache_read_input_tokens"):
			(*u).CacheReadTokens = int64(n)
		case keyIs(k, "cache_creation_input_tokens"):
			(*u).CacheCreationTokens = int64(n)
		}
		return true
	})
}

// Item is one thing the model emitted: a text, a tool call, a reasoning
// block, or something else.
type Item struct {
	Kind ItemKind `json:"kind"`
	// Type is the API's own name: an Anthropic content block's type
	// (text, tool_use, thinking, redacted_thinking, …) or a Responses
	// output item's (message, function_call, custom_tool_call, reasoning, …).
	Type string `json:"type"`
	// ID is the block's or item's id where the API gives one (toolu_…,
	// msg_…, fc_…, rs_…).
	ID string `json:"id,omitempty"`
	// Text is the assistant text (KindText); a Responses message's
	// output_text parts joined.
	Text string `json:"text,omitempty"`
	// Call is the tool call (KindToolCall).
	Call *Call `json:"call,omitempty"`
	// Complete: the item ended on the wire (content_block_stop,
	// response.output_item.done, a JSON body); an incomplete one holds
	// what had arrived.
	Complete bool `json:"complete"`
	// Truncated: the wire view's bound cut the item's content short.
	Truncated bool `json:"truncated,omitempty"`
}

// Call is one tool call the model emitted.
type Call struct {
	// ID is the call id the client answers with (Anthropic toolu_…,
	// Responses call_…).
	ID   string `json:"id"`
	Name string `json:"name"`
	// Namespace is the Responses API's namespace of the tool (codex's
	// MCP tools: mcp__<server>); empty elsewhere.
	Namespace string          `json:"namespace,omitempty"`
	Input     json.RawMessage `json:"input"`
	InputForm InputForm       `json:"input_form"`
	// Complete: as Item.Complete.
	Complete bool `json:"complete"`
	// Response is the ID of the response that emitted the call.
	Response string `json:"response"`
	// Emitted counts the tool calls with this ID on the wire so far (in
	// Responses, in that snapshot): 1, unless the model repeated an id.
	Emitted int `json:"emitted"`
}

// WireStats is the wire view's size, for a record: what it holds against
// its bound, and what the bound kept out.
type WireStats struct {
	API       string `json:"api"`
	Responses int    `json:"responses"`
	ToolCalls int    `json:"tool_calls"`
	Held      int64  `json:"held_bytes"`
	Limit     int64  `json:"limit_bytes"`
	// Overflow counts the bytes of content not held because the bound was
	// reached; 0 means the view holds everything it was shown.
	Overflow int64 `json:"overflow_bytes"`
}

// Wire is a proxy's view of what the model emitted: the upstream's
// answers to forwarded requests, parsed as they stream through in the
// proxy's model API (Config.ModelAPI), without changing what is relayed
// and without keeping a raw event stream. Each chunk is parsed after it
// has been written and flushed to the client, off the client's path;
// Settle is the barrier that makes a check made just after the client saw
// a chunk see it too. Content is held up to Config.WireLimit; past it,
// what does not fit is counted (WireStats.Overflow, Response.Truncated),
// never dropped silently. Text and tool inputs stay as the wire escaped
// them until a snapshot decodes them. Its methods are safe for concurrent
// use.
type Wire struct {
	api     string
	dialect wireDialect
	limit   int64

	held     atomic.Int64
	overflow atomic.Int64
	waiters  atomic.Int32 // Settle calls waiting

	mu      sync.Mutex
	streams []*wireStream // in the order their requests began
	active  map[*wireStream]struct{}
	calls   map[string][]callRef
	// unbound are the tool calls the wire gave no id (the Gemini API leaves
	// a functionCall's out, and the client makes its own), in the order
	// they arrived, until Bind names them.
	unbound []callRef
	changed chan struct{} // closed and replaced when a stream advances, while someone waits
}

// callRef is where a tool call sits: a stream and its item.
type callRef struct {
	s    *wireStream
	item int
}

func newWire(api string, limit int64) *Wire {
	w := &Wire{api: api, limit: limit, active: map[*wireStream]struct{}{},
		calls: map[string][]callRef{}, changed: make(chan struct{})}
	switch api {
	case AnthropicMessages:
		w.dialect = anthropicDialect{}
	case OpenAIResponses:
		w.dialect = responsesDialect{}
	case GeminiAPI:
		w.dialect = geminiDialect{}
	}
	return w
}

// API is the model API the view reads.
func (w *Wire) API() string { return w.api }

// Settle waits until every response byte the proxy has relayed so far (a
// chunk being written to its client included) has been read into the
// view, for at most d, and reports whether it got there. Only the bytes
// relayed when it is called count, stream by stream, so a busy stream
// cannot hold it off; a stream whose client has stopped reading can, until
// d. A JSON body of unknown length is read at its end.
func (w *Wire) Settle(d time.Duration) bool {
	type target struct {
		s *wireStream
		n int64
	}
	var ts []target
	w.mu.Lock()
	for s := range w.active {
		if n := s.relayed.Load(); s.parsed.Load() < n {
			ts = append(ts, target{s, n})
		}
	}
	w.mu.Unlock()
	if len(ts) == 0 {
		return true
	}
	w.waiters.Add(1)
	defer w.waiters.Add(-1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		w.mu.Lock()
		ch := w.changed
		w.mu.Unlock()
		ts = slices.DeleteFunc(ts, func(t target) bool { return t.s.parsed.Load() >= t.n || t.s.done.Load() })
		if len(ts) == 0 {
			return true
		}
		select {
		case <-ch:
		case <-timer.C:
			return false
		}
	}
}

// signal wakes Settle calls waiting, if any.
func (w *Wire) signal() {
	if w.waiters.Load() == 0 {
		return
	}
	w.mu.Lock()
	close(w.changed)
	w.changed = make(chan struct{})
	w.mu.Unlock()
}

// Responses is a snapshot of every response so far, in the order their
// requests began.
func (w *Wire) Responses() []Response {
	streams := w.snapshot()
	out := make([]Response, 0, len(streams))
	emitted := map[string]int{}
	for _, s := range streams {
		r := s.response()
		for _, it := range r.Items {
			if it.Call != nil {
				emitted[it.Call.ID]++
			}
		}
		out = append(out, r)
	}
	for _, r := range out {
		for _, it := range r.Items {
			if it.Call != nil {
				it.Call.Emitted = emitted[it.Call.ID]
			}
		}
	}
	return out
}

// Response is the latest response whose id, or the id of one of whose
// items, is id (an Anthropic msg_…, a Responses message item's msg_…), and
// whether there is one. Only that response is read out, so a check of one
// line costs the same however long the run.
func (w *Wire) Response(id string) (Response, bool) {
	if id == "" {
		return Response{}, false
	}
	s := w.newest(func(s *wireStream) bool {
		match := s.head.ID == id
		for j := 0; !match && j < len(s.items); j++ {
			match = s.items[j].id == id
		}
		return match
	})
	if s == nil {
		return Response{}, false
	}
	return s.response(), true
}

// Head is the response to the request that reached the proxy at start
// with method, without its items (its model, status, usage, how it
// ended), and whether the view holds one: a per-request lookup that
// copies no content.
func (w *Wire) Head(start time.Time, method string) (Response, bool) {
	var h Response
	if w.newest(func(s *wireStream) bool {
		h = s.head
		return h.Start.Equal(start) && h.Method == method
	}) == nil {
		return Response{}, false
	}
	return h, true
}

// snapshot is the streams so far, in the order their requests began,
// copied so that no lock is held while each is read.
func (w *Wire) snapshot() []*wireStream {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.streams)
}

// newest is the latest stream match accepts, nil when none does; match
// runs under the stream's lock.
func (w *Wire) newest(match func(s *wireStream) bool) *wireStream {
	streams := w.snapshot()
	for i := len(streams) - 1; i >= 0; i-- {
		s := streams[i]
		s.mu.Lock()
		ok := match(s)
		s.mu.Unlock()
		if ok {
			return s
		}
	}
	return nil
}

// Call is the first tool call the model emitted with this id, and whether
// there is one. A call still streaming is returned as far as it has
// arrived (Complete false).
func (w *Wire) Call(id string) (Call, bool) {
	w.mu.Lock()
	refs := w.calls[id]
	w.mu.Unlock()
	if len(refs) == 0 {
		return Call{}, false
	}
	s := refs[0].s
	s.mu.Lock()
	it := s.itemView(&s.items[refs[0].item])
	resp := s.head.ID
	s.mu.Unlock()
	if it.Call == nil {
		return Call{}, false
	}
	c := *it.Call
	c.Response, c.Emitted = resp, len(refs)
	return c, true
}

// Stats is the view's size against its bound.
func (w *Wire) Stats() WireStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	calls := 0
	for _, refs := range w.calls {
		calls += len(refs)
	}
	return WireStats{API: w.api, Responses: len(w.streams), ToolCalls: calls,
		Held: w.held.Load(), Limit: w.limit, Overflow: w.overflow.Load()}
}

// reserve counts n bytes against the bound, if they fit.
func (w *Wire) reserve(n int64) bool {
	if w.held.Add(n) > w.limit {
		w.held.Add(-n)
		return false
	}
	return true
}

// reserveStep is how much of the bound a stream reserves at a time, so
// that its many small pieces of content do not each touch the shared
// count; what a stream has reserved and not used is let go at its end.
const reserveStep = 64 << 10

// take reserves n bytes of the bound for the stream's content; false, and
// n counted as overflow, when they do not fit.
func (s *wireStream) take(n int) bool {
	switch m := int64(n); {
	case m <= s.budget:
		s.budget -= m
	case s.w.reserve(max(m, reserveStep)):
		s.budget += max(m, reserveStep) - m
	case s.w.reserve(m): // the bound's last bytes
	default:
		s.w.overflow.Add(m)
		return false
	}
	return true
}

// register makes a tool call findable by Call, or by Bind when the wire
// gave it no id.
func (w *Wire) register(id string, s *wireStream, item int) {
	w.mu.Lock()
	if id == "" {
		w.unbound = append(w.unbound, callRef{s, item})
	} else {
		w.calls[id] = append(w.calls[id], callRef{s, item})
	}
	w.mu.Unlock()
}

// Bind names the first tool call the wire gave no id, in the order the
// model made them, that match accepts: id is its id from then on, by which
// Call finds it and under which snapshots show it. A client that makes
// its own ids for such calls (Gemini CLI) says so as it shows each call.
// It reports whether a call was bound.
func (w *Wire) Bind(id string, match func(Call) bool) bool {
	if id == "" {
		return false
	}
	w.mu.Lock()
	refs := slices.Clone(w.unbound)
	w.mu.Unlock()
	for _, ref := range refs {
		s := ref.s
		s.mu.Lock()
		v := s.itemView(&s.items[ref.item])
		s.mu.Unlock()
		if v.Call == nil || !match(*v.Call) {
			continue
		}
		w.mu.Lock()
		i := slices.Index(w.unbound, ref)
		if i >= 0 {
			w.unbound = slices.Delete(w.unbound, i, i+1)
			w.calls[id] = append(w.calls[id], ref)
		}
		w.mu.Unlock()
		if i < 0 {
			continue // bound by another meanwhile
		}
		s.mu.Lock()
		it := &s.items[ref.item]
		it.callID = id
		if it.view != nil && it.view.Call != nil {
			it.view.Call.ID = id
		}
		s.mu.Unlock()
		return true
	}
	return false
}

// wireDialect is what differs between the model APIs.
type wireDialect interface {
	// name is what the vendor's client makes of an event's name: "-" for
	// one it skips (its data is never gathered), else the name ("" for one
	// the client takes without looking at it). What the event is then is
	// typeOf's to say.
	name(ev []byte) string
	// typeOf is the type the client reads an event as, given what name made
	// of its name and the type its data states: the data's, as both
	// vendors' clients dispatch on it, save where the name alone decides
	// (an Anthropic "error"). "-" or "" for one the view does not read.
	typeOf(ev string, dataType []byte) string
	// skip reports, from an event's first data line, that it is one the
	// view does not read (its data states a type the view ignores), so
	// that it is not gathered at all.
	skip(data []byte) bool
	// event reads one event of a stream.
	event(s *wireStream, typ string, data []byte)
	// body reads a whole JSON body into r's header fields and items.
	body(r *Response, status int, doc []byte) error
	// quick reads, on the hot path, the data line of an event of type ev
	// that is a content delta in the API's exact shape, without gathering
	// the event; false for anything else.
	quick(ev string, data []byte) (quickDelta, bool)
	// asked reads a request body's offer to the model; nil where the view
	// reads no requests.
	asked(body []byte) *Asked
}

// quickDelta is a content delta read from its data line: the block's
// index, which content it is, and the content as escaped (valid only
// while the line is).
type quickDelta struct {
	set     bool
	index   int
	kind    rawForm
	content []byte
}

// Body modes.
const (
	bodyUnread = iota
	bodySSE
	bodyJSON
)

// wireStream is one response on its way through the proxy.
type wireStream struct {
	w     *Wire
	order uint64
	// relayed counts body bytes handed to the client, parsed those read
	// into the view; Settle waits for the second to reach the first.
	relayed, parsed atomic.Int64
	done            atomic.Bool

	mu     sync.Mutex // the handler's writes against snapshots
	head   Response   // everything but Items
	items  []wireItem
	mode   int
	length int64 // a JSON body's Content-Length, -1 unknown
	budget int64 // bytes of the bound reserved and not used yet

	// An event stream's state.
	lines lineSplitter
	event string // the current event's name
	data  []byte // the current event's data
	// The last event line's name and what the dialect made of it.
	lastName, lastEvent string
	// A delta read from its data line (wireDialect.quick), and its
	// content, applied when the event ends.
	quick        quickDelta
	quickContent []byte
	drop         bool // the current event is too large to read
	ignore       bool // the current event is one the view does not read (wireDialect.skip)

	body []byte // a JSON body, held until it is whole
	read bool   // the JSON body has been read

	quotaType string // the first quota error among the error events
	// finished: the stream said its response is whole (a Gemini chunk
	// with a finishReason), which a clean end of the body then completes.
	finished bool
}

// begin is the stream for a response the upstream has started, or nil
// without a view.
func (w *Wire) begin(order uint64, start time.Time, method, path string, resp *http.Response) *wireStream {
	if w == nil {
		return nil
	}
	s := &wireStream{w: w, order: order, length: resp.ContentLength,
		head: Response{Start: start, Method: method, Path: path, Status: resp.StatusCode}}
	ct := resp.Header.Get("Content-Type")
	switch enc := resp.Header.Get("Content-Encoding"); {
	case enc != "" && !strings.EqualFold(enc, "identity"):
		s.head.Unread = fmt.Sprintf("the body is content-encoded (%.32q)", enc)
	case isEventStream(resp.Header):
		s.mode, s.head.Stream = bodySSE, true
	case strings.Contains(strings.ToLower(ct), "json") || resp.StatusCode >= 400:
		s.mode = bodyJSON
	default:
		s.head.Unread = fmt.Sprintf("the body is %.64q, not an event stream or JSON", ct)
	}
	w.held.Add(responseCost)
	w.mu.Lock()
	i := len(w.streams)
	for i > 0 && w.streams[i-1].order > order {
		i--
	}
	w.streams = slices.Insert(w.streams, i, s)
	w.active[s] = struct{}{}
	w.mu.Unlock()
	return s
}

// request reads the request the response answers (its body, held whole),
// for Response.Asked.
func (s *wireStream) request(body []byte) {
	if s == nil || len(body) == 0 {
		return
	}
	a := s.w.dialect.asked(body)
	if a == nil {
		return
	}
	n := len(a.Context)
	for _, t := range a.Tools {
		n += len(t)
	}
	s.w.held.Add(int64(n))
	s.mu.Lock()
	s.head.Asked = a
	s.mu.Unlock()
}

// relay counts n bytes about to be written to the client.
func (s *wireStream) relay(n int) {
	if s != nil {
		s.relayed.Add(int64(n))
	}
}

// write reads one chunk that has been relayed.
func (s *wireStream) write(b []byte) {
	if s == nil {
		return
	}
	s.mu.Lock()
	counted := true
	switch s.mode {
	case bodySSE:
		s.lines.write(b, s)
	case bodyJSON:
		s.hold(b)
		if s.length >= 0 && int64(len(s.body)) >= s.length {
			s.readBody()
		}
		counted = s.read || s.length >= 0
	}
	s.mu.Unlock()
	if counted {
		s.parsed.Add(int64(len(b)))
		s.w.signal()
	}
}

// end closes the stream: clean when the upstream's body ended whole. Only
// the first call counts.
func (s *wireStream) end(clean bool) {
	if s == nil || s.done.Load() {
		return
	}
	s.mu.Lock()
	switch s.mode {
	case bodySSE:
		if clean {
			s.lines.end(s)
			s.dispatch() // a last event with no blank line after it
		}
		s.data = nil
	case bodyJSON:
		if !s.read && clean {
			s.readBody()
		}
		s.body = nil
	}
	switch {
	case s.head.End != EndOpen:
	case !clean:
		s.head.End = EndCut
	case s.head.Status >= 400:
		s.head.End = EndFailed
	case s.mode == bodySSE && s.finished:
		s.head.End = EndCompleted // a Gemini stream: its end is a whole body after its finish
	case s.mode == bodySSE:
		s.head.End = EndCut // the API always ends a stream with its own end
	default:
		s.head.End = EndOther
	}
	s.w.held.Add(-s.budget)
	s.budget = 0
	s.mu.Unlock()
	s.parsed.Store(s.relayed.Load())
	s.done.Store(true)
	s.w.mu.Lock()
	delete(s.w.active, s)
	s.w.mu.Unlock()
	s.w.signal()
}

// readsEvents reports whether the view reads this response's events,
// which is then where its quota error is found (quota): the sniffer would
// only split the same stream again.
func (s *wireStream) readsEvents() bool {
	return s != nil && s.mode == bodySSE && s.head.Status < 400
}

// errorEvent notes an error event of the stream for quota.
func (s *wireStream) errorEvent(data []byte) {
	if s.quotaType == "" && len(data) <= maxSniff {
		s.quotaType = quotaType(data)
	}
}

// quota is what the sniffer finds in an event stream: the first error
// event that is a quota error (see Quota). status and h are the
// response's; call it once the stream has ended.
func (s *wireStream) quota(status int, h http.Header) *Quota {
	if s.quotaType == "" {
		return nil
	}
	return &Quota{Status: status, Type: s.quotaType, InStream: true, RetryAfter: retryAfter(h)}
}

// hold keeps a chunk of a JSON body, within the bound.
func (s *wireStream) hold(b []byte) {
	if s.head.Truncated {
		s.w.overflow.Add(int64(len(b)))
		return
	}
	if !s.take(len(b)) {
		s.head.Truncated = true
		return
	}
	s.body = append(s.body, b...)
}

// readBody reads the whole JSON body held and lets it go.
func (s *wireStream) readBody() {
	s.read = true
	r := s.head
	if err := s.w.dialect.body(&r, s.head.Status, s.body); err != nil {
		s.head.Unreadable++
		if s.head.Status >= 400 {
			s.head.End = EndFailed
		}
	} else {
		for _, it := range r.Items {
			s.addDecoded(it)
		}
		r.Items = nil
		s.head = r
	}
	s.w.held.Add(-int64(len(s.body)))
	s.body = nil
}

// addDecoded adds an item read whole (from a JSON body).
func (s *wireStream) addDecoded(v Item) {
	s.w.held.Add(int64(itemCost + len(v.Text) + len(v.ID) + callSize(v.Call)))
	s.items = append(s.items, wireItem{kind: v.Kind, typ: v.Type, complete: true, view: &v})
	if v.Call != nil {
		s.w.register(v.Call.ID, s, len(s.items)-1)
	}
}

func callSize(c *Call) int {
	if c == nil {
		return 0
	}
	return len(c.ID) + len(c.Name) + len(c.Namespace) + len(c.Input)
}

// keep decides, from what is known of a line, whether the view reads it:
// data lines of events it reads, within maxEvent; event names; the blank
// line that ends an event. Comments, ids and retry lines are not read.
func (s *wireStream) keep(p []byte) bool {
	if len(p) == 0 || p[0] == '\r' {
		return true
	}
	switch p[0] {
	case 'd':
		if len(p) < len("data:") {
			return strings.HasPrefix("data:", string(p))
		}
		if string(p[:5]) != "data:" || s.drop || s.ignore || s.event == "-" {
			return false
		}
		if len(p)+len(s.data) > maxEvent {
			s.drop = true
			s.data = s.data[:0]
			return false
		}
		return true
	case 'e':
		if len(p) < len("event:") {
			return strings.HasPrefix("event:", string(p))
		}
		return len(p) <= 128 && string(p[:6]) == "event:"
	}
	return false
}

// line takes one line kept.
func (s *wireStream) line(l []byte) {
	if len(l) == 0 {
		s.dispatch()
		return
	}
	// Field names compared as strings: the compiler does it inline.
	if len(l) >= 5 && string(l[:5]) == "data:" {
		val := l[5:]
		if len(val) > 0 && val[0] == ' ' {
			val = val[1:]
		}
		switch {
		case s.quick.set:
			// The first data line was a whole JSON object: more data can
			// only be whitespace, or the event is no JSON a client reads.
			if len(bytes.TrimSpace(val)) > 0 {
				s.drop = true
			}
			return
		case len(s.data) == 0:
			if q, ok := s.w.dialect.quick(s.event, val); ok {
				s.quickContent = append(s.quickContent[:0], q.content...)
				q.content = nil // the line's bytes are the chunk's
				s.quick = q
				return
			}
			if s.w.dialect.skip(val) {
				s.ignore = true
				return
			}
		}
		if len(s.data) > 0 {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, val...)
		return
	}
	if len(l) >= 6 && string(l[:6]) == "event:" {
		val := bytes.TrimSpace(l[6:])
		if string(val) != s.lastName { // most events repeat the one before
			s.lastEvent, s.lastName = s.w.dialect.name(val), string(val)
		}
		s.event = s.lastEvent
	}
}

// dispatch ends one event, read as the vendor's client reads it: by the
// type its data states (wireDialect.typeOf), whatever its name says.
func (s *wireStream) dispatch() {
	ev, data, drop, q := s.event, s.data, s.drop, s.quick
	s.event, s.data, s.drop, s.ignore, s.quick = "", s.data[:0], false, false, quickDelta{}
	switch {
	case drop:
		s.head.Unreadable++
		return
	case q.set:
		if it := s.block(q.index); it == nil {
			s.unreadable()
		} else if it.form == q.kind {
			s.appendRaw(it, s.quickContent)
		}
		return
	case len(data) == 0 || ev == "-":
		return
	}
	var dataType []byte
	members(data, func(k, v []byte) bool {
		if keyIs(k, "type") {
			dataType, _ = content(v)
			return false
		}
		return true
	})
	if typ := s.w.dialect.typeOf(ev, dataType); typ != "" && typ != "-" {
		s.w.dialect.event(s, typ, data)
	}
}

// unreadable counts an event the view could not read.
func (s *wireStream) unreadable() { s.head.Unreadable++ }

// newItem starts an item and returns its index.
func (s *wireStream) newItem(it wireItem) int {
	s.w.held.Add(int64(itemCost + len(it.id) + len(it.callID) + len(it.name) + len(it.namespace)))
	s.items = append(s.items, it)
	i := len(s.items) - 1
	if it.kind == KindToolCall {
		s.w.register(it.callID, s, i)
	}
	return i
}

// appendRaw adds content to an item, within the bound; what does not fit
// marks the item (and its response) truncated, and the item takes
// nothing more.
func (s *wireStream) appendRaw(it *wireItem, b []byte) {
	switch {
	case len(b) == 0:
		return
	case it.complete: // content for a block that has ended: no client takes it
		s.unreadable()
		return
	case it.truncated:
		s.w.overflow.Add(int64(len(b)))
		return
	}
	if !s.take(len(b)) {
		it.truncated, s.head.Truncated = true, true
		return
	}
	it.raw = append(it.raw, b...)
}

// response is the stream's snapshot.
func (s *wireStream) response() Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.head
	r.Items = make([]Item, 0, len(s.items))
	for i := range s.items {
		r.Items = append(r.Items, s.itemView(&s.items[i]))
	}
	if s.mode == bodyJSON && !s.read && json.Valid(s.body) {
		// A whole body that is not read yet (its end is on its way): read
		// it for this snapshot only.
		t := s.head
		if s.w.dialect.body(&t, s.head.Status, s.body) == nil {
			r = t
		}
	}
	for _, it := range r.Items {
		if it.Call != nil {
			it.Call.Response = r.ID
		}
	}
	return r
}

// rawForm says what a wireItem's raw bytes hold.
type rawForm int

const (
	rawNone          rawForm = iota
	rawText                  // the escaped content of JSON strings, joined (Anthropic text deltas)
	rawInput                 // the escaped content of partial_json strings, joined (Anthropic input deltas)
	rawResponsesItem         // a whole Responses output item
)

// wireItem is an item as the view holds it: its content as the wire
// escaped it, until a snapshot decodes it.
type wireItem struct {
	kind                    ItemKind
	typ, id                 string
	index                   int // an Anthropic block's index
	callID, name, namespace string
	form                    rawForm
	raw                     []byte
	startInput              []byte // an Anthropic tool_use block's input at its start
	complete, truncated     bool
	view                    *Item // decoded, once complete
}

// itemView is the item decoded. A complete item is decoded once, and its
// raw bytes let go.
func (s *wireStream) itemView(it *wireItem) Item {
	if it.view != nil {
		return cloneItem(*it.view)
	}
	v := Item{Kind: it.kind, Type: it.typ, ID: it.id, Complete: it.complete, Truncated: it.truncated}
	switch it.form {
	case rawText:
		v.Text, _ = unquote(it.raw)
	case rawInput:
		v.Call = &Call{ID: it.callID, Name: it.name}
		text, _ := unquote(it.raw)
		if text == "" && len(it.startInput) > 0 {
			// No input arrived in deltas: the block's start holds it, as
			// the vendors' clients read it.
			text = string(it.startInput)
		}
		v.Call.Input, v.Call.InputForm = parsedInput(text)
	case rawResponsesItem:
		if d, err := decodeResponsesItem(it.raw); err == nil {
			d.Truncated = it.truncated
			v = d
		}
	}
	if v.Kind == KindToolCall && v.Call == nil {
		v.Call = &Call{ID: it.callID, Name: it.name, Namespace: it.namespace, InputForm: InputUnparsed}
	}
	if v.Call != nil {
		v.Call.Complete = v.Complete
	}
	if it.complete {
		it.view = &v
		s.w.held.Add(int64(len(v.Text) + callSize(v.Call) - len(it.raw) - len(it.startInput)))
		it.raw, it.startInput = nil, nil
		return cloneItem(v)
	}
	return v
}

func cloneItem(v Item) Item {
	if v.Call != nil {
		c := *v.Call
		c.Input = slices.Clone(c.Input)
		v.Call = &c
	}
	return v
}

// parsedInput is a tool input's text as Canonical JSON, or, when it is not
// one JSON value, as the JSON string of the text.
func parsedInput(text string) (json.RawMessage, InputForm) {
	if text == "" {
		return nil, InputUnparsed
	}
	if c, err := Canonical(json.RawMessage(text)); err == nil {
		return c, InputJSON
	}
	return appendJSONString(nil, text), InputUnparsed
}
