package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/internal/loopbackhost"
	"github.com/metaharness/metaharness/record"
)

// ServerName is the server's name in initialize, and the MCP server name a
// run gives Claude (its tools read mcp__metaharness__<rendering>).
const ServerName = "metaharness"

// Options configure a server.
type Options struct {
	// Contract is the caller's tool contract; nil serves the default verbs.
	Contract *Contract
	// Workspace is the directory the performers act beneath ("" is ".").
	Workspace string
	// Writable admits the write entries.
	Writable bool
	// AllowPrograms are the programs the default surface's run entry may
	// start; refused beside a Contract.
	AllowPrograms []string
	// Asker is asked before every call is performed; nil allows every
	// call and records nothing.
	Asker decide.Asker
	// Version is the serverInfo version.
	Version string
}

// Server is an MCP server over a contract (or the default verbs) and a
// workspace.
type Server struct {
	MCP     *server.MCPServer
	opts    Options
	ws      *workspace
	entries *Contract // the entries performed: the contract, or those behind tool_invoke
	asker   decide.Asker
	// tools are added to MCP once (adding), then ready is closed.
	tools  []server.ServerTool
	adding sync.Once
	ready  chan struct{}
}

// NewServer checks the options and builds the server. Close releases the
// workspace.
func NewServer(opts Options) (*Server, error) {
	if opts.Contract != nil {
		if err := RefuseAllowPrograms(opts.Contract.Source, opts.AllowPrograms); err != nil {
			return nil, err
		}
	}
	if err := CheckPrograms(opts.AllowPrograms, opts.Writable); err != nil {
		return nil, err
	}
	ws, err := openWorkspace(opts.Workspace, opts.Writable)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, ws: ws, asker: opts.Asker, ready: make(chan struct{})}
	if s.asker == nil {
		s.asker = RecordingAsker(io.Discard)
	}
	hooks := &server.Hooks{}
	hooks.AddAfterInitialize(func(context.Context, any, *mcp.InitializeRequest, *mcp.InitializeResult) { s.addTools() })
	hooks.AddBeforeListTools(func(context.Context, any, *mcp.ListToolsRequest) { s.toolsAdded() })
	hooks.AddBeforeCallTool(func(context.Context, any, *mcp.CallToolRequest) { s.toolsAdded() })
	hooks.AddBeforeCallTool(stashRequestID)
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	s.MCP = server.NewMCPServer(ServerName, version,
		server.WithToolCapabilities(false),
		server.WithLogging(),
		server.WithRecovery(),
		server.WithHooks(hooks))
	if opts.Contract != nil {
		s.entries = opts.Contract
		for _, e := range opts.Contract.Entries {
			s.tools = append(s.tools, server.ServerTool{Tool: publish(e.Published(), e), Handler: s.entryHandler(e)})
		}
	} else {
		s.entries = defaultEntries(opts.Writable, opts.AllowPrograms)
		for _, v := range verbs().Entries {
			s.tools = append(s.tools, server.ServerTool{Tool: publish(v.Name, v), Handler: s.verbHandler(v)})
		}
	}
	return s, nil
}

// addTools adds the tools to MCP, once, in the background. mcp-go checks
// each tool as it is added, a JSON round trip of its schema: for a
// thousand entries some 9 ms, which would hold the answer to initialize
// back (and, beside it on a busy host, still slow it). So they are added
// once initialize is answered, or at the first request that needs them
// (toolsAdded), whichever comes first.
func (s *Server) addTools() {
	s.adding.Do(func() {
		go func() {
			defer close(s.ready)
			s.MCP.AddTools(s.tools...)
		}()
	})
}

// toolsAdded waits until every tool is added, starting that if need be.
func (s *Server) toolsAdded() {
	s.addTools()
	<-s.ready
}

// Close releases the workspace.
func (s *Server) Close() error { return s.ws.Close() }

// publish builds the MCP tool from an entry: the raw schema, verbatim (a
// mcp.Tool built directly: NewTool would pre-fill a second schema).
func publish(name string, e *Entry) mcp.Tool {
	return mcp.Tool{Name: name, Description: e.Summary, RawInputSchema: e.inputJSON}
}

// entryHandler serves one contract entry.
func (s *Server) entryHandler(e *Entry) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, cerr := e.CheckArguments(req.Params.RawArguments)
		if cerr != nil {
			return isError(cerr), nil
		}
		return s.decideAndPerform(ctx, req, e, args, false, func(ctx context.Context, a Arguments) (string, *CallError) {
			return perform(ctx, s.ws, e.Name, a)
		}), nil
	}
}

// verbHandler serves one of the default verbs.
func (s *Server) verbHandler(v *Entry) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, cerr := v.CheckArguments(req.Params.RawArguments)
		if cerr != nil {
			return isError(cerr), nil
		}
		switch v.Name {
		case verbSearch:
			return s.decideAndPerform(ctx, req, v, args, true, func(_ context.Context, a Arguments) (string, *CallError) { return s.toolSearch(a) }), nil
		case verbDescribe:
			return s.decideAndPerform(ctx, req, v, args, true, func(_ context.Context, a Arguments) (string, *CallError) { return s.toolDescribe(a) }), nil
		}
		name, cerr := stringArg(verbInvoke, args, "name", "")
		if cerr != nil {
			return isError(cerr), nil
		}
		e, cerr := s.defaultEntry(verbInvoke, name)
		if cerr != nil {
			return isError(cerr), nil
		}
		inner, _ := args.Get("arguments")
		innerArgs, cerr := e.CheckArguments(inner)
		if cerr != nil {
			return isError(cerr), nil
		}
		return s.decideAndPerform(ctx, req, e, innerArgs, false, func(ctx context.Context, a Arguments) (string, *CallError) {
			if e.Name == runEntry {
				return s.runProgram(ctx, a)
			}
			return perform(ctx, s.ws, e.Name, a)
		}), nil
	}
}

// decideAndPerform asks the decider about a checked call and performs it
// unless denied. The decider is shown the arguments as the client sent
// them (optional nulls included): that is the request the vendor's own
// record shows, and a decision answers exactly that request. A replaced input goes through the entry's checks again.
// catalogue marks tool_search and tool_describe, which reach no entry.
func (s *Server) decideAndPerform(ctx context.Context, req mcp.CallToolRequest, e *Entry, args Arguments, catalogue bool,
	do func(context.Context, Arguments) (string, *CallError)) *mcp.CallToolResult {
	dreq := decide.Request{
		Seam: record.SeamOwnedTool, CallID: callID(req), Tool: req.Params.Name,
		Entry: e.Name, Operation: s.operationOf(e.Name), Subjects: Subjects(e.Name, args.JSON()),
		Catalogue: catalogue, Input: presented(req.Params.RawArguments),
	}
	if catalogue {
		dreq.Entry, dreq.Operation, dreq.Subjects = "", "", []string{}
	}
	d, err := s.asker.Ask(ctx, dreq)
	if err != nil {
		return isError(callErr(e.Name, "", "was denied because the decision channel failed (%v)", err))
	}
	switch d.Decision {
	case record.Deny:
		return isError(callErr(e.Name, "", "was denied: %s", d.Reason))
	case record.Replace:
		replaced, cerr := e.CheckArguments(d.Input)
		if cerr != nil {
			cerr.Reason += " (in the input the decider replaced)"
			return isError(cerr)
		}
		args = replaced
	}
	text, cerr := do(ctx, args)
	if cerr != nil {
		return isError(cerr)
	}
	return mcp.NewToolResultText(text)
}

// Call performs a call to a published tool without MCP in between, as the
// codex launcher answers item/tool/call: the same argument checks, decision
// and performers. callID is the decision's call_id ("" makes one). An
// unknown tool is an error; everything else is an answer, isError or not.
func (s *Server) Call(ctx context.Context, tool string, arguments json.RawMessage, callID string) (text string, isErr bool, err error) {
	s.toolsAdded()
	t := s.MCP.GetTool(tool)
	if t == nil {
		return "", false, fmt.Errorf("%s is not a tool this server publishes", tool)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.RawArguments = arguments
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{callIDKey: callID}}
	res, err := t.Handler(ctx, req)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(mcp.GetTextFromContent(c))
	}
	return b.String(), res.IsError, nil
}

func isError(cerr *CallError) *mcp.CallToolResult {
	return mcp.NewToolResultError(cerr.Error())
}

// rpcIDKey is where the hook leaves the JSON-RPC id for the handler (mcp-go
// hands a tool handler the request without its id). The hook always
// overwrites it, so a client cannot choose it.
const rpcIDKey = "metaharness/jsonrpc-id"

// claudeToolUseKey is the _meta key Claude Code sends with its tool_use id.
const claudeToolUseKey = "claudecode/toolUseId"

// callIDKey carries the call id Call was given. Over MCP the hook removes
// it, so a client cannot choose it.
const callIDKey = "metaharness/call-id"

func stashRequestID(_ context.Context, id any, req *mcp.CallToolRequest) {
	if req.Params.Meta == nil {
		req.Params.Meta = &mcp.Meta{}
	}
	if req.Params.Meta.AdditionalFields == nil {
		req.Params.Meta.AdditionalFields = map[string]any{}
	}
	req.Params.Meta.AdditionalFields[rpcIDKey] = rpcIDString(id)
	delete(req.Params.Meta.AdditionalFields, callIDKey)
}

func rpcIDString(id any) string {
	if r, ok := id.(mcp.RequestId); ok {
		id = r.Value()
	}
	switch v := id.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return fmt.Sprint(id)
}

// callID is the decision's call_id: Claude's tool_use id when sent, so the
// decision joins the transcript; else the JSON-RPC id; else a fresh one.
func callID(req mcp.CallToolRequest) string {
	if m := req.Params.Meta; m != nil {
		if v, ok := m.AdditionalFields[callIDKey].(string); ok && v != "" {
			return v
		}
		if v, ok := m.AdditionalFields[claudeToolUseKey].(string); ok && v != "" {
			return v
		}
		if v, ok := m.AdditionalFields[rpcIDKey].(string); ok && v != "" {
			return "jsonrpc:" + v
		}
	}
	return "call-" + randomHex(8)
}

// ServeStdio serves one client on in/out until in ends or ctx is done;
// every request read is answered before the end of the input is let through
// (see drain).
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out, errlog io.Writer) error {
	stdio := server.NewStdioServer(s.MCP)
	stdio.SetErrorLogger(log.New(errlog, "mcp-serve (mcp-go): ", 0))
	d := newDrain(ctx, in, out)
	err := stdio.Listen(ctx, d, d)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// ListenLoopback listens for --http ADDR, which must be a loopback address
// (127.0.0.0/8, ::1 or localhost) with a port: the server has no
// authentication, so it is never reachable from off the machine.
func ListenLoopback(addr string) (net.Listener, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, exit.Refuse(RefuseHTTPNotLoopback, "--http %s is not HOST:PORT (%v); give a loopback address such as 127.0.0.1:8765", addr, err)
	}
	if !loopbackhost.Is(host) {
		return nil, exit.Refuse(RefuseHTTPNotLoopback, "--http %s: %s is not a loopback address, and the server has no authentication; give 127.0.0.1:PORT, [::1]:PORT or localhost:PORT", addr, host)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, exit.Wrap(RefuseHTTPNotLoopback, err, "--http %s cannot be listened on", addr)
	}
	return ln, nil
}

// ServeHTTP serves the same server over streamable HTTP at /mcp on ln until
// ctx is done. DNS-rebinding protection stays on (mcp-go's default).
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener, errlog io.Writer) error {
	handler := server.NewStreamableHTTPServer(s.MCP, server.WithEndpointPath("/mcp"))
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: log.New(errlog, "mcp-serve (mcp-go): ", 0)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = handler.Shutdown(shutdown)
	_ = srv.Shutdown(shutdown)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Resolve reads a call to a tool this server publishes back into its
// entry, operation and subjects, for frames and records. tool may carry the
// mcp__metaharness__ prefix Claude shows.
func (o Options) Resolve(tool string, input json.RawMessage) Call {
	tool = strings.TrimPrefix(tool, "mcp__"+ServerName+"__")
	call := Call{Tool: tool, Input: input, Subjects: []string{}}
	if o.Contract != nil {
		if e, ok := o.Contract.Lookup(tool); ok {
			call.Entry, call.Operation, call.Subjects = e.Name, OperationOf(e.Name), Subjects(e.Name, input)
		}
		return call
	}
	switch tool {
	case verbSearch, verbDescribe:
		call.Catalogue = true
	case verbInvoke:
		var inv struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if jsonscan.Decode(input, &inv, jsonscan.Options{}) != nil {
			return call // a key repeated or in another case names no entry
		}
		if _, ok := defaultEntries(o.Writable, o.AllowPrograms).Entry(inv.Name); !ok {
			return call
		}
		call.Entry, call.Input, call.Subjects = inv.Name, inv.Arguments, Subjects(inv.Name, inv.Arguments)
		call.Operation = defaultOperation(inv.Name)
	}
	return call
}

// presented is the call's arguments as sent, compacted; absent reads as {}.
func presented(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&b, raw) != nil {
		return json.RawMessage(`{}`)
	}
	return b.Bytes()
}
