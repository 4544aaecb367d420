package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

// rpc is a JSON-RPC client speaking to a server over the stdio transport,
// line by line, matching responses by id (mcp-go answers out of order).
type rpc struct {
	t      testing.TB
	w      io.WriteCloser
	r      *bufio.Reader
	next   int
	seen   map[int]json.RawMessage
	done   chan error // the server's end
	closed bool
}

func newRPC(t testing.TB, w io.WriteCloser, r io.Reader) *rpc {
	return &rpc{t: t, w: w, r: bufio.NewReader(r), seen: map[int]json.RawMessage{}, done: make(chan error, 1)}
}

func (c *rpc) initialize() {
	c.t.Helper()
	c.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "0"}})
	c.notify("notifications/initialized")
}

// startStdio serves s on a pipe pair and initializes a session.
func startStdio(t *testing.T, s *Server) *rpc {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := newRPC(t, inW, outR)
	go func() {
		err := s.ServeStdio(context.Background(), inR, outW, io.Discard)
		outW.Close()
		c.done <- err
	}()
	t.Cleanup(c.close)
	c.initialize()
	return c
}

func (c *rpc) close() {
	if c.closed {
		return
	}
	c.closed = true
	c.w.Close()
	go io.Copy(io.Discard, c.r) // let the server drain its answers
	select {
	case err := <-c.done:
		if err != nil {
			c.t.Errorf("the server ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		c.t.Error("the server did not end at the end of its input")
	}
}

func (c *rpc) notify(method string) {
	fmt.Fprintf(c.w, `{"jsonrpc":"2.0","method":%q}`+"\n", method)
}

// raw sends one request line with the params as given and returns the
// response's result (or error) object.
func (c *rpc) raw(method, params string) json.RawMessage {
	c.t.Helper()
	c.next++
	id := c.next
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		c.t.Fatal(err)
	}
	for {
		if got, ok := c.seen[id]; ok {
			return got
		}
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("reading the answer to %s: %v", method, err)
		}
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			c.t.Fatalf("not JSON-RPC: %s", line)
		}
		if msg.ID == nil {
			continue // a notification
		}
		if msg.Error != nil {
			c.seen[*msg.ID] = msg.Error
		} else {
			c.seen[*msg.ID] = msg.Result
		}
	}
}

func (c *rpc) call(method string, params any) json.RawMessage {
	c.t.Helper()
	b, _ := json.Marshal(params)
	return c.raw(method, string(b))
}

type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// callTool sends tools/call with the arguments' raw JSON ("" leaves the key
// out) and optional _meta.
func (c *rpc) callTool(name, arguments string, meta ...string) toolResult {
	c.t.Helper()
	params := fmt.Sprintf(`{"name":%q`, name)
	if arguments != "" {
		params += `,"arguments":` + arguments
	}
	if len(meta) > 0 {
		params += `,"_meta":` + meta[0]
	}
	out := c.raw("tools/call", params+"}")
	var r toolResult
	if err := json.Unmarshal(out, &r); err != nil || r.Content == nil {
		c.t.Fatalf("tools/call %s: not a tool result: %s", name, out)
	}
	return r
}

func (c *rpc) toolNames() []string {
	c.t.Helper()
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(c.call("tools/list", map[string]any{}), &list); err != nil {
		c.t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// decisions is a decider that records every request and answers with
// answer (allow when nil).
type decisions struct {
	mu     sync.Mutex
	got    []decide.Request
	answer func(decide.Request) (record.Decision, error)
}

func (d *decisions) Ask(_ context.Context, req decide.Request) (record.Decision, error) {
	d.mu.Lock()
	d.got = append(d.got, req)
	d.mu.Unlock()
	if d.answer == nil {
		return record.AllowDecision(), nil
	}
	return d.answer(req)
}

func (d *decisions) last(t *testing.T) decide.Request {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) == 0 {
		t.Fatal("the decider was not asked")
	}
	return d.got[len(d.got)-1]
}

func (d *decisions) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.got)
}

const testContract = `
format: metaharness.tool-contract/1
entries:
  - name: fs.read
    summary: Read a text file in the workspace.
    input:
      type: object
      properties:
        path: {type: string}
        max_bytes: {type: integer}
        encoding: {type: string}
      required: [path]
    renderings: {mcp: read_file}
  - name: fs.list
    summary: List a directory.
    input: {type: object, properties: {path: {type: string}}}
  - name: fs.write
    summary: Write a file.
    input: {type: object, properties: {path: {type: string}, text: {type: string}}, required: [path, text]}
  - name: web.fetch
    summary: Fetch a page (this build performs no such entry).
    input: {type: object, properties: {url: {type: string}}, required: [url]}
`

func newServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func contractServer(t *testing.T, writable bool, d decide.Asker) (*rpc, string) {
	t.Helper()
	ws, _ := tree(t)
	c, err := ParseContract("test.yaml", []byte(testContract))
	if err != nil {
		t.Fatal(err)
	}
	return startStdio(t, newServer(t, Options{Contract: c, Workspace: ws, Writable: writable, Asker: d})), ws
}

// TestServeContractListsItsEntriesOnly: each entry under its mcp rendering,
// and nothing else.
func TestServeContractListsItsEntriesOnly(t *testing.T) {
	c, _ := contractServer(t, false, nil)
	if got := c.toolNames(); !slices.Equal(got, []string{"fs_list", "fs_write", "read_file", "web_fetch"}) {
		t.Errorf("tools/list: %v", got)
	}
}

// TestServeArgumentChecksOverTheProtocol exercises SPEC §7.3 through
// tools/call lines: each refusal is isError naming the entry and the field,
// and the decider is not even asked.
func TestServeArgumentChecksOverTheProtocol(t *testing.T) {
	d := &decisions{}
	c, _ := contractServer(t, false, d)
	for _, tc := range []struct{ args, want string }{
		{"", `fs.read: field "path" is required and was left out`},
		{`null`, `fs.read: takes its arguments as a JSON object, and got null`},
		{`[1,2]`, `fs.read: takes its arguments as a JSON object, and got a list`},
		{`"a.txt"`, `fs.read: takes its arguments as a JSON object, and got a string`},
		{`{"path":"a.txt","bogus":1}`, `fs.read: field "bogus" is not one of its input fields`},
		{`{}`, `fs.read: field "path" is required and was left out`},
		{`{"path":null}`, `fs.read: field "path" is required and was null`},
		{`{"path":"a.txt","encoding":"utf8"}`, `fs.read: field "encoding" is not a field the fs.read performer declares`},
		{`{"path":"../x"}`, `fs.read: field "path" "../x" has a .. component`},
	} {
		r := c.callTool("read_file", tc.args)
		if !r.IsError || !strings.HasPrefix(r.text(), tc.want) || !strings.HasSuffix(r.text(), "nothing was done") {
			t.Errorf("arguments %s: %+v, want isError %q", tc.args, r, tc.want)
		}
	}
	if n := d.count(); n != 2 { // the undeclared encoding and the .. path reach the performer
		t.Errorf("the decider was asked %d times, want 2", n)
	}
	// An optional null reads as absent: removed before performing. The
	// decider is shown the request as sent, which the vendor's record shows.
	r := c.callTool("read_file", `{"path":"a.txt","max_bytes":null,"encoding":null}`)
	if r.IsError || r.text() != "alpha\nbeta needle\n" {
		t.Errorf("optional nulls: %+v", r)
	}
	if got := string(d.last(t).Input); got != `{"path":"a.txt","max_bytes":null,"encoding":null}` {
		t.Errorf("the decider saw %s", got)
	}
	// Arguments absent on an entry that requires nothing: performed.
	if r := c.callTool("fs_list", ""); r.IsError || !strings.Contains(r.text(), `"a.txt"`) {
		t.Errorf("fs.list without arguments: %+v", r)
	}
	// An unknown tool is a protocol error (-32602), not a tool result.
	if out := c.raw("tools/call", `{"name":"fs.read","arguments":{}}`); !strings.Contains(string(out), "-32602") {
		t.Errorf("unknown tool: %s", out)
	}
}

func TestServeEntriesItDoesNotPerformOrMayNotWrite(t *testing.T) {
	d := &decisions{}
	c, ws := contractServer(t, false, d)
	r := c.callTool("web_fetch", `{"url":"https://example.com"}`)
	if !r.IsError || !strings.HasPrefix(r.text(), "web.fetch: is not performed by this build") {
		t.Errorf("an entry without a performer: %+v", r)
	}
	if req := d.last(t); req.Entry != "web.fetch" || req.Operation != "" {
		t.Errorf("the decider should hear of it with no operation: %+v", req)
	}
	r = c.callTool("fs_write", `{"path":"w.txt","text":"x"}`)
	if !r.IsError || !strings.Contains(r.text(), "read-only (start mcp-serve with --writable)") {
		t.Errorf("fs.write without --writable: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "w.txt")); !os.IsNotExist(err) {
		t.Error("written without --writable")
	}
}

func TestServeCallIDs(t *testing.T) {
	d := &decisions{}
	c, _ := contractServer(t, false, d)
	c.callTool("read_file", `{"path":"a.txt"}`, `{"claudecode/toolUseId":"toolu_01abc"}`)
	if got := d.last(t).CallID; got != "toolu_01abc" {
		t.Errorf("Claude's tool_use id: %q", got)
	}
	c.callTool("read_file", `{"path":"a.txt"}`, `{"metaharness/jsonrpc-id":"forged"}`)
	if got := d.last(t).CallID; got != fmt.Sprintf("jsonrpc:%d", c.next) {
		t.Errorf("the JSON-RPC id: %q (a client cannot forge it)", got)
	}
	req := d.last(t)
	if req.Seam != record.SeamOwnedTool || req.Tool != "read_file" || req.Entry != "fs.read" || req.Operation != "file.read" || !slices.Equal(req.Subjects, []string{"file:a.txt"}) {
		t.Errorf("decision request: %+v", req)
	}
}

// TestServeDefaultVerbs: without a contract the three verbs, the entries
// behind tool_invoke chosen by --writable and --allow-program.
func TestServeDefaultVerbs(t *testing.T) {
	ws, _ := tree(t)
	d := &decisions{}
	c := startStdio(t, newServer(t, Options{Workspace: ws, Asker: d}))
	if got := c.toolNames(); !slices.Equal(got, []string{"tool_describe", "tool_invoke", "tool_search"}) {
		t.Errorf("tools/list: %v", got)
	}
	r := c.callTool("tool_search", `{}`)
	if r.IsError || !strings.Contains(r.text(), `"fs.read"`) || strings.Contains(r.text(), "fs.write") || strings.Contains(r.text(), `"run"`) {
		t.Errorf("tool_search on a read-only server without programs: %s", r.text())
	}
	if req := d.last(t); !req.Catalogue || req.Entry != "" || req.Tool != "tool_search" {
		t.Errorf("tool_search is decided as a catalogue read: %+v", req)
	}
	r = c.callTool("tool_search", `{"effect":"write"}`)
	if !strings.Contains(r.text(), `"withheld_by_filter": 3`) {
		t.Errorf("a filter that hides entries says so: %s", r.text())
	}
	r = c.callTool("tool_describe", `{"name":"fs.search"}`)
	if r.IsError || !strings.Contains(r.text(), `"operation": "search"`) || !strings.Contains(r.text(), `"input_schema": {`) {
		t.Errorf("tool_describe: %s", r.text())
	}
	r = c.callTool("tool_invoke", `{"name":"fs.read","arguments":{"path":"sub/b.txt"}}`)
	if r.IsError || r.text() != "gamma needle\n" {
		t.Errorf("tool_invoke fs.read: %+v", r)
	}
	if req := d.last(t); req.Tool != "tool_invoke" || req.Entry != "fs.read" || string(req.Input) != `{"name":"fs.read","arguments":{"path":"sub/b.txt"}}` {
		t.Errorf("tool_invoke is decided as its entry, on the request as sent: %+v", req)
	}
	for args, want := range map[string]string{
		`{"name":"fs.write","arguments":{"path":"x","text":"y"}}`: `tool_invoke: field "name" "fs.write" is not a tool this server has. Available: fs.read, fs.list, fs.search`,
		`{"name":"fs.read","arguments":{"path":"a.txt","x":1}}`:   `fs.read: field "x" is not one of its input fields`,
		`{"name":"fs.read","arguments":null}`:                     `tool_invoke: field "arguments" is required and was null`,
		`{"name":"fs.read","arguments":[]}`:                       `fs.read: takes its arguments as a JSON object, and got a list`,
		`{"name":"fs.read"}`:                                      `tool_invoke: field "arguments" is required and was left out`,
		`{"name":"run","arguments":{"argv":["ls"]}}`:              `tool_invoke: field "name" "run" is not a tool this server has`,
	} {
		if r := c.callTool("tool_invoke", args); !r.IsError || !strings.HasPrefix(r.text(), want) {
			t.Errorf("tool_invoke %s: %+v, want %q", args, r, want)
		}
	}
}

// TestServeRunEntry: run sits behind tool_invoke only with programs
// declared; an undeclared program is refused and nothing runs.
func TestServeRunEntry(t *testing.T) {
	ws, _ := tree(t)
	d := &decisions{}
	c := startStdio(t, newServer(t, Options{Workspace: ws, Writable: true, AllowPrograms: []string{"touch"}, Asker: d}))
	r := c.callTool("tool_describe", `{"name":"run"}`)
	if r.IsError || !strings.Contains(r.text(), `"enum": [`) || !strings.Contains(r.text(), `"operation": "shell"`) {
		t.Errorf("tool_describe run: %s", r.text())
	}
	r = c.callTool("tool_invoke", `{"name":"run","arguments":{"argv":["sh","-c","touch pwned"]}}`)
	if !r.IsError || !strings.HasPrefix(r.text(), `run: field "argv[0]" "sh" is not a declared program (declared: touch); nothing was run`) {
		t.Errorf("an undeclared program: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "pwned")); !os.IsNotExist(err) {
		t.Error("the undeclared program ran")
	}
	r = c.callTool("tool_invoke", `{"name":"run","arguments":{"argv":["touch","made"]}}`)
	if r.IsError || !strings.Contains(r.text(), `"exit_code": 0`) {
		t.Errorf("a declared program: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "made")); err != nil {
		t.Errorf("the declared program did not run in the workspace: %v", err)
	}
	if req := d.last(t); req.Operation != "shell" || !slices.Equal(req.Subjects, []string{"proc:touch"}) {
		t.Errorf("run is decided as shell on proc:touch: %+v", req)
	}
}

func TestNewServerRefusals(t *testing.T) {
	ws, _ := tree(t)
	c, _ := ParseContract("test.yaml", []byte(testContract))
	_, err := NewServer(Options{Contract: c, Workspace: ws, Writable: true, AllowPrograms: []string{"make"}})
	wantRefusal(t, err, RefuseWithAllowProgram, "--allow-program make beside --catalogue test.yaml")
	_, err = NewServer(Options{Workspace: ws, AllowPrograms: []string{"make"}})
	wantRefusal(t, err, "allow-program-needs-writable", "add --writable")
	_, err = NewServer(Options{Workspace: ws, Writable: true, AllowPrograms: []string{" "}})
	wantRefusal(t, err, "usage", "names no program")
	_, err = NewServer(Options{Workspace: filepath.Join(ws, "a.txt")})
	wantRefusal(t, err, "workspace-unusable", "a.txt")
}

// TestServeDecisionChannel runs the decision channel as a run does: a
// listener answering over a unix socket, the server dialing it per call.
func TestServeDecisionChannel(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "decide.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var asked []decide.Request
	answer := record.DenyDecision("the frame admits no file.write under secrets/")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- decide.Serve(ctx, ln, func(_ context.Context, req decide.Request) record.Decision {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return answer
		}, decide.Options{})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeDecisions: %v", err)
		}
	}()
	setAnswer := func(d record.Decision) { mu.Lock(); answer = d; mu.Unlock() }

	ws, _ := tree(t)
	con, _ := ParseContract("test.yaml", []byte(testContract))
	c := startStdio(t, newServer(t, Options{Contract: con, Workspace: ws, Writable: true, Asker: decide.Dial(sock)}))

	r := c.callTool("fs_write", `{"path":"secrets/k","text":"x"}`, `{"claudecode/toolUseId":"toolu_9"}`)
	if !r.IsError || r.text() != "fs.write: was denied: the frame admits no file.write under secrets/; nothing was done" {
		t.Errorf("deny: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "secrets")); !os.IsNotExist(err) {
		t.Error("a denied call was performed")
	}
	mu.Lock()
	got := asked[0]
	mu.Unlock()
	if got.CallID != "toolu_9" || got.Seam != "owned_tool" || got.Tool != "fs_write" || got.Operation != "file.write" || string(got.Input) != `{"path":"secrets/k","text":"x"}` {
		t.Errorf("the request on the wire: %+v", got)
	}

	setAnswer(record.ReplaceDecision(json.RawMessage(`{"path":"safe.txt","text":"replaced"}`)))
	if r := c.callTool("fs_write", `{"path":"secrets/k","text":"x"}`); r.IsError {
		t.Errorf("replace: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "safe.txt")); string(b) != "replaced" {
		t.Errorf("replace performed %q", b)
	}
	setAnswer(record.ReplaceDecision(json.RawMessage(`{"path":"safe.txt","bogus":1}`)))
	if r := c.callTool("fs_write", `{"path":"a","text":"x"}`); !r.IsError || !strings.Contains(r.text(), `field "bogus" is not one of its input fields (path, text) (in the input the decider replaced)`) {
		t.Errorf("a replaced input is checked again: %+v", r)
	}
	setAnswer(record.AbstainDecision())
	if r := c.callTool("read_file", `{"path":"a.txt"}`); r.IsError {
		t.Errorf("abstain performs: %+v", r)
	}
	setAnswer(record.Decision{Decision: "maybe"})
	if r := c.callTool("fs_write", `{"path":"m.txt","text":"x"}`); !r.IsError || !strings.Contains(r.text(), "was denied: the decider gave no valid decision") {
		t.Errorf("an invalid decision denies: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "m.txt")); !os.IsNotExist(err) {
		t.Error("performed on an invalid decision")
	}
}

// TestServeDecisionChannelFailures: when the channel fails the call is
// denied, naming the failure, and never performed.
func TestServeDecisionChannelFailures(t *testing.T) {
	dir := t.TempDir()
	mute := filepath.Join(dir, "mute.sock") // accepts, reads, closes without answering
	garbage := filepath.Join(dir, "garbage.sock")
	for path, reply := range map[string]string{mute: "", garbage: "yes please\n"} {
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				_, _ = bufio.NewReader(conn).ReadBytes('\n')
				_, _ = io.WriteString(conn, reply)
				conn.Close()
			}
		}()
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "absent.sock"): "connect: no such file or directory",
		mute:                              "reading the answer: EOF",
		garbage:                           "the answer is not a decision object",
	} {
		ws, _ := tree(t)
		con, _ := ParseContract("test.yaml", []byte(testContract))
		s := newServer(t, Options{Contract: con, Workspace: ws, Writable: true, Asker: decide.Dial(path)})
		c := startStdio(t, s)
		r := c.callTool("fs_write", `{"path":"w.txt","text":"x"}`)
		if !r.IsError || !strings.HasPrefix(r.text(), "fs.write: was denied because the decision channel failed") || !strings.Contains(r.text(), want) {
			t.Errorf("%s: %+v, want the failure %q", filepath.Base(path), r, want)
		}
		if _, err := os.Stat(filepath.Join(ws, "w.txt")); !os.IsNotExist(err) {
			t.Errorf("%s: performed although the channel failed", filepath.Base(path))
		}
		c.close()
	}
}

func TestRecordingAsker(t *testing.T) {
	var b strings.Builder
	d, err := RecordingAsker(&b).Ask(context.Background(), decide.Request{Seam: "owned_tool", CallID: "jsonrpc:3", Tool: "read_file", Entry: "fs.read", Operation: "file.read", Subjects: []string{"file:a"}, Input: json.RawMessage(`{"path":"a"}`)})
	if err != nil || d.Decision != record.Allow {
		t.Fatal(d, err)
	}
	if got := b.String(); got != `{"decided":"allow","seam":"owned_tool","call_id":"jsonrpc:3","tool":"read_file","entry":"fs.read","operation":"file.read","subjects":["file:a"]}`+"\n" {
		t.Errorf("recorded %q", got)
	}
}

func TestResolve(t *testing.T) {
	con, _ := ParseContract("test.yaml", []byte(testContract))
	for _, tc := range []struct {
		opts      Options
		tool, in  string
		entry, op string
		subjects  []string
		catalogue bool
	}{
		{Options{Contract: con}, "mcp__metaharness__read_file", `{"path":"x"}`, "fs.read", "file.read", []string{"file:x"}, false},
		{Options{Contract: con}, "web_fetch", `{"url":"u"}`, "web.fetch", "", []string{}, false},
		{Options{Contract: con}, "tool_invoke", `{}`, "", "", []string{}, false},
		{Options{}, "tool_search", `{}`, "", "", []string{}, true},
		{Options{}, "tool_invoke", `{"name":"fs.list","arguments":{}}`, "fs.list", "dir.list", []string{"file:."}, false},
		{Options{}, "tool_invoke", `{"name":"fs.write","arguments":{"path":"p"}}`, "", "", []string{}, false},
		{Options{Writable: true}, "tool_invoke", `{"name":"fs.write","arguments":{"path":"p"}}`, "fs.write", "file.write", []string{"file:p"}, false},
		{Options{Writable: true, AllowPrograms: []string{"go"}}, "tool_invoke", `{"name":"run","arguments":{"argv":["go","test"]}}`, "run", "shell", []string{"proc:go"}, false},
		// An invocation two readers could read as two entries names none.
		{Options{Writable: true}, "tool_invoke", `{"name":"fs.list","Name":"fs.write","arguments":{"path":"p"}}`, "", "", []string{}, false},
		{Options{Writable: true}, "tool_invoke", `{"name":"fs.list","name":"fs.write","arguments":{"path":"p"}}`, "", "", []string{}, false},
	} {
		got := tc.opts.Resolve(tc.tool, json.RawMessage(tc.in))
		if got.Entry != tc.entry || got.Operation != tc.op || !slices.Equal(got.Subjects, tc.subjects) || got.Catalogue != tc.catalogue {
			t.Errorf("%s %s: %+v", tc.tool, tc.in, got)
		}
	}
}

func TestListenLoopbackRefusesOtherAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.0.0.1:0", "192.168.1.2:8080", "example.com:80", ":8080", "127.0.0.1"} {
		ln, err := ListenLoopback(addr)
		if err == nil {
			ln.Close()
		}
		wantRefusal(t, err, "http-not-loopback", "--http "+addr)
	}
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.2:0", "localhost:0"} {
		ln, err := ListenLoopback(addr)
		if err != nil {
			t.Errorf("%s: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

// TestServeHTTP serves the same server over streamable HTTP and lists and
// calls through mcp-go's own client.
func TestServeHTTP(t *testing.T) {
	ws, _ := tree(t)
	con, _ := ParseContract("test.yaml", []byte(testContract))
	s := newServer(t, Options{Contract: con, Workspace: ws})
	ln, err := ListenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.ServeHTTP(ctx, ln, io.Discard) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	}()
	cl, err := client.NewStreamableHttpClient("http://" + ln.Addr().String() + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION}}); err != nil {
		t.Fatal(err)
	}
	tools, err := cl.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools/list over HTTP: %v %v", tools, err)
	}
	res, err := cl.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}}})
	if err != nil || res.IsError || mcp.GetTextFromContent(res.Content[0]) != "alpha\nbeta needle\n" {
		t.Fatalf("tools/call over HTTP: %+v %v", res, err)
	}
}

// TestStdioAnswersEveryRequestAtEndOfInput: input that ends at once (as
// `printf … | mcp-serve` does) still gets every request answered.
func TestStdioAnswersEveryRequestAtEndOfInput(t *testing.T) {
	ws, _ := tree(t)
	con, _ := ParseContract("test.yaml", []byte(testContract))
	s := newServer(t, Options{Contract: con, Workspace: ws})
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n")
	const calls = 60
	for i := range calls {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}`+"\n", i)
	}
	in.WriteString(`{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n")
	var out strings.Builder
	if err := s.ServeStdio(context.Background(), strings.NewReader(in.String()), &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var e envelope
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Error != nil {
			t.Fatalf("bad answer %s", line)
		}
		answered[string(e.ID)] = true
	}
	if len(answered) != calls+2 {
		t.Errorf("%d of %d requests answered", len(answered), calls+2)
	}
}

// TestCallWithoutMCP: Call (the codex client-tool path) goes through the
// same checks, decision and performers, with the caller's call id.
func TestCallWithoutMCP(t *testing.T) {
	ws, _ := tree(t)
	con, _ := ParseContract("test.yaml", []byte(testContract))
	d := &decisions{}
	s := newServer(t, Options{Contract: con, Workspace: ws, Asker: d})
	text, isErr, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt","max_bytes":null}`), "call_codex_1")
	if err != nil || isErr || text != "alpha\nbeta needle\n" {
		t.Fatalf("Call: %q %v %v", text, isErr, err)
	}
	if req := d.last(t); req.CallID != "call_codex_1" || req.Entry != "fs.read" || string(req.Input) != `{"path":"a.txt","max_bytes":null}` {
		t.Errorf("decision request: %+v", req)
	}
	text, isErr, err = s.Call(context.Background(), "read_file", json.RawMessage(`null`), "call_codex_2")
	if err != nil || !isErr || !strings.Contains(text, "fs.read: takes its arguments as a JSON object") {
		t.Errorf("Call with null arguments: %q %v %v", text, isErr, err)
	}
	if _, _, err := s.Call(context.Background(), "fs.read", nil, ""); err == nil {
		t.Error("an unknown tool is an error")
	}
	c := startStdio(t, s)
	c.callTool("read_file", `{"path":"a.txt"}`, `{"metaharness/call-id":"forged"}`)
	if got := d.last(t).CallID; got == "forged" {
		t.Error("a client chose the call id")
	}
}

// TestServeReachesARelativeDecisionsSocket: mcp-serve's --decisions-socket
// may be relative to the embedder's directory (decide.Dial itself takes
// only absolute paths), and is asked before each call.
func TestServeReachesARelativeDecisionsSocket(t *testing.T) {
	ws, _ := tree(t)
	t.Chdir(t.TempDir())
	ln, err := decide.Listen(filepath.Join(mustGetwd(t), "d.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- decide.Serve(ctx, ln, func(context.Context, decide.Request) record.Decision {
			return record.DenyDecision("asked over the relative socket")
		}, decide.Options{})
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Error(err)
		}
	}()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := newRPC(t, inW, outR)
	go func() {
		err := Serve(context.Background(), Config{Workspace: ws, DecisionsSocket: "d.sock"}, inR, outW, io.Discard)
		outW.Close()
		c.done <- err
	}()
	defer c.close()
	c.initialize()
	if r := c.callTool("tool_search", `{"query":"read"}`); !r.IsError || !strings.Contains(r.text(), "asked over the relative socket") {
		t.Errorf("%+v", r)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestAThousandEntriesAreListedAtOnce: the tools are added beside the
// answer to initialize, and tools/list (and Call) wait for all of them,
// however soon they come.
func TestAThousandEntriesAreListedAtOnce(t *testing.T) {
	var src strings.Builder
	src.WriteString("format: metaharness.tool-contract/1\nentries:\n")
	for i := range 1000 {
		fmt.Fprintf(&src, "  - {name: fs.read, summary: Read., input: {type: object, properties: {path: {type: string}}, required: [path]}, renderings: {mcp: read_%d}}\n", i)
	}
	c, err := ParseContract("big.yaml", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s, err := NewServer(Options{Contract: c, Workspace: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(s.MCP.HandleMessage(context.Background(), json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)))
		if n := strings.Count(string(out), `"name":"read_`); n != 1000 {
			t.Errorf("tools/list right after the start named %d tools, want 1000", n)
		}
		s2, err := NewServer(Options{Contract: c, Workspace: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s2.Call(context.Background(), "read_999", json.RawMessage(`{"path":"nothing"}`), "c1"); err != nil {
			t.Errorf("Call right after the start: %v", err)
		}
		s.Close()
		s2.Close()
	}
}
