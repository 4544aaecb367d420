// Package fakevendor holds stand-ins for the vendor CLIs, compiled into a
// test binary and registered with testscript.Main under the vendor's name
// (the way age registers age-plugin-test), so that the run loop is driven
// on every machine, with no Node and no real model: the launch metaharness plans,
// the run's decision endpoint its http hook posts to and the real mcp-serve
// it configures, the decision channel, the commands on stdin, the wind-up.
//
// Claude is Claude Code as a run starts it: it prints the pinned version,
// reads its launch the way the real one does (the --settings file's
// PreToolUse http hook, the --mcp-config servers, --allowedTools), and replays a
// script of stream-json records, putting each tool use to the hook and, for
// a catalogue tool, to the MCP server, and obeying the decision; or, where
// its script says so, holds a session with the scripted model it is
// pointed at (claude_model.go), printing what the wire carried. Codex so
// far answers --version only; the codex adapter grows it into app-server.
//
// A fake keeps no state in $HOME: its script is the file its task names
// (relative to its cwd, or absolute), and what it does happens in its cwd.
package fakevendor

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ClaudeVersion is what the fake claude prints for --version: the pin.
const ClaudeVersion = "2.1.328"

// ClaudeMain is Claude for testscript.Main.
func ClaudeMain() {
	os.Exit(Claude(os.Args[1:], os.Stdout, os.Stderr))
}

// claudeLaunch is the part of the argv the fake reads.
type claudeLaunch struct {
	settings, mcpConfig, model, permissionMode string
	noTools                                    bool // --tools ""
	allowed                                    []string
	task                                       string
}

// claudeValueFlags take a value; claudeBoolFlags do not. Anything else is
// refused the way Claude Code's option parser refuses it.
var (
	claudeValueFlags = []string{"--output-format", "--setting-sources", "--settings", "--permission-mode", "--tools",
		"--mcp-config", "--allowedTools", "--model", "--effort", "--max-turns", "--max-budget-usd", "--append-system-prompt"}
	claudeBoolFlags = []string{"-p", "--print", "--verbose", "--strict-mcp-config"}
)

// Claude runs the fake with args and returns its exit status. The script
// it replays is the file its task names, with $SCRIPTDIR standing for that
// file's directory; a task that names no file is answered with an opening
// record and a result that repeats the task.
//
// Script lines (blank lines and # comments are skipped):
//
//	init                  the system/init record: cwd, tools, MCP servers
//	text WORDS            an assistant text message
//	tool ID NAME INPUT    an assistant tool_use, decided and obeyed (a
//	                      tool_result follows); INPUT is JSON
//	model PROMPT          a session with the model Claude Code is pointed
//	                      at (ANTHROPIC_BASE_URL, on loopback only), PROMPT
//	                      (else the task) the first user turn: each answer
//	                      printed as Claude Code prints it, each tool use
//	                      decided and obeyed and its result sent back, until
//	                      an answer asks for no tool (claude_model.go)
//	result WORDS          the terminal result: the final answer (without
//	                      WORDS, the model's last text)
//	stderr WORDS          a line on stderr
//	sleep DURATION        e.g. 200ms
//	noise BYTES           one line of that many bytes on stdout, no record
//	hang                  wait to be stopped
//	exit CODE             end at once, without a terminal record
//	repeat N LINE         LINE played N times, each %d in it the count
//	                      (1…N): a long session in a line (repeat.go)
func Claude(args []string, stdout, stderr io.Writer) int {
	if slices.Contains(args, "--version") {
		fmt.Fprintln(stdout, ClaudeVersion+" (Claude Code)")
		return 0
	}
	l, err := parseClaudeArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, "error: "+err.Error())
		return 1
	}
	if _, err := os.Stat(l.settings); l.settings != "" && err != nil {
		fmt.Fprintf(stderr, "Settings file not found: %s\n", l.settings)
		return 1
	}
	script := "init\nresult " + l.task + "\n"
	if b, err := os.ReadFile(l.task); err == nil {
		dir, _ := filepath.Abs(filepath.Dir(l.task))
		script = strings.ReplaceAll(string(b), "$SCRIPTDIR", dir)
	}
	c := &claude{l: l, out: json.NewEncoder(stdout), stdout: stdout, stderr: stderr,
		hooks: &http.Client{Transport: &http.Transport{Proxy: nil}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	defer c.closeServers()
	return c.play(script)
}

func parseClaudeArgs(args []string) (claudeLaunch, error) {
	var l claudeLaunch
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				l.task = args[i+1]
			}
			return l, nil
		case slices.Contains(claudeBoolFlags, a):
		case slices.Contains(claudeValueFlags, a):
			if i+1 >= len(args) {
				return l, fmt.Errorf("option '%s' argument missing", a)
			}
			i++
			v := args[i]
			switch a {
			case "--settings":
				l.settings = v
			case "--mcp-config":
				l.mcpConfig = v
			case "--model":
				l.model = v
			case "--permission-mode":
				l.permissionMode = v
			case "--tools":
				l.noTools = v == ""
			case "--allowedTools":
				l.allowed = strings.Split(v, ",")
			}
		case strings.HasPrefix(a, "-"):
			return l, fmt.Errorf("unknown option '%s'", a)
		default:
			l.task = a
		}
	}
	return l, nil
}

type claude struct {
	l       claudeLaunch
	out     *json.Encoder
	stdout  io.Writer
	stderr  io.Writer
	servers map[string]*mcpClient
	tools   []string // offered in the opening record
	msgs    int
	turns   int
	final   string // the model's last text (model)
	// hooks posts the http hooks, over connections it keeps open between
	// calls as Claude Code does; never through a proxy.
	hooks *http.Client
}

const fakeSession = "fake-claude-session"

func (c *claude) emit(rec map[string]any) {
	rec["session_id"] = fakeSession
	_ = c.out.Encode(rec)
}

func (c *claude) play(script string) int {
	for n, line := range strings.Split(expandRepeats(script), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "init":
			if err := c.init(); err != nil {
				fmt.Fprintf(c.stderr, "fake claude: %v\n", err)
				return 1
			}
		case "text":
			c.assistant(map[string]any{"type": "text", "text": rest})
		case "tool":
			id, rest, _ := strings.Cut(rest, " ")
			name, input, _ := strings.Cut(rest, " ")
			if !json.Valid([]byte(input)) {
				fmt.Fprintf(c.stderr, "fake claude: script line %d: the input of %s is not JSON\n", n+1, id)
				return 1
			}
			c.tool(id, name, json.RawMessage(input))
		case "model":
			if code, ended := c.converse(cmp.Or(rest, c.l.task)); ended {
				return code
			}
		case "result":
			c.emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": cmp.Or(rest, c.final),
				"num_turns": c.turns, "stop_reason": "end_turn", "terminal_reason": "completed", "permission_denials": []any{},
				"usage": map[string]any{"input_tokens": c.msgs, "output_tokens": c.msgs}})
		case "stderr":
			fmt.Fprintln(c.stderr, rest)
		case "sleep":
			d, err := time.ParseDuration(rest)
			if err != nil {
				fmt.Fprintf(c.stderr, "fake claude: script line %d: %v\n", n+1, err)
				return 1
			}
			time.Sleep(d)
		case "noise":
			n, err := strconv.Atoi(rest)
			if err != nil {
				fmt.Fprintf(c.stderr, "fake claude: script line %d: %v\n", n+1, err)
				return 1
			}
			line := bytes.Repeat([]byte("x"), n)
			_, _ = c.stdout.Write(append(line, '\n'))
		case "hang":
			for {
				time.Sleep(time.Hour)
			}
		case "exit":
			code, _ := strconv.Atoi(rest)
			return code
		default:
			fmt.Fprintf(c.stderr, "fake claude: script line %d: no directive %q\n", n+1, verb)
			return 1
		}
	}
	return 0
}

// init starts the MCP servers the launch names and prints the opening
// record, listing the tools the model is offered.
func (c *claude) init() error {
	tools := []string{}
	if !c.l.noTools {
		tools = append(tools, "Bash", "Edit", "Glob", "Grep", "Read", "Write")
	}
	servers := []any{}
	if c.l.mcpConfig != "" {
		var cfg struct {
			Servers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		b, err := os.ReadFile(c.l.mcpConfig)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &cfg); err != nil {
			return fmt.Errorf("--mcp-config %s: %w", c.l.mcpConfig, err)
		}
		c.servers = map[string]*mcpClient{}
		names := make([]string, 0, len(cfg.Servers))
		for name := range cfg.Servers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			s := cfg.Servers[name]
			mc, err := startMCP(s.Command, s.Args, c.stderr)
			if err != nil {
				return fmt.Errorf("MCP server %s: %w", name, err)
			}
			c.servers[name] = mc
			listed, err := mc.listTools()
			if err != nil {
				return fmt.Errorf("MCP server %s: %w", name, err)
			}
			for _, t := range listed {
				tools = append(tools, "mcp__"+name+"__"+t)
			}
			servers = append(servers, map[string]any{"name": name, "status": "connected"})
		}
	}
	c.tools = tools
	cwd, _ := os.Getwd()
	model := c.l.model
	if model == "" {
		model = "fake-model"
	}
	c.emit(map[string]any{"type": "system", "subtype": "init", "cwd": cwd, "tools": tools, "mcp_servers": servers,
		"model": model, "permissionMode": c.l.permissionMode, "apiKeySource": "none",
		"claude_code_version": ClaudeVersion, "output_style": "default", "plugins": []any{}})
	return nil
}

func (c *claude) assistant(block map[string]any) {
	c.msgs++
	c.turns++
	c.assistantLine(fmt.Sprintf("msg_%04d", c.msgs), c.l.model, map[string]any{"input_tokens": 1, "output_tokens": 1}, block)
}

// assistantLine prints one content block of message id, as Claude Code
// prints each block of a response on a line of its own.
func (c *claude) assistantLine(id, model string, usage any, block map[string]any) {
	c.emit(map[string]any{"type": "assistant", "message": map[string]any{
		"id": id, "role": "assistant", "model": model, "type": "message",
		"content": []any{block}, "usage": usage,
	}})
}

// tool prints the tool use and its result, having it decided and
// performed (call).
func (c *claude) tool(id, name string, input json.RawMessage) {
	c.assistant(map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
	text, isErr := c.call(id, name, input)
	c.toolResult(id, text, isErr)
}

func (c *claude) toolResult(id, text string, isErr bool) {
	c.emit(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": isErr},
	}}})
}

// call puts a tool use to the hook and performs it as the decision says,
// the way Claude Code does under --permission-mode dontAsk: a deny is the
// hook's reason, an allow runs, and with no decision only a tool
// --allowedTools names runs. It returns the result's text.
func (c *claude) call(id, name string, input json.RawMessage) (string, bool) {
	decision, reason, updated, err := c.hook(id, name, input)
	var text string
	isErr := true
	switch {
	case err != nil:
		text = fmt.Sprintf("PreToolUse:%s hook error: %v", name, err)
	case decision == "deny":
		text = fmt.Sprintf("PreToolUse:%s hook error: %s", name, reason)
	case decision == "allow" || slices.Contains(c.l.allowed, name):
		if updated != nil {
			input = updated
		}
		text, isErr = c.perform(id, name, input)
	default:
		text = fmt.Sprintf("Claude requested permissions to use %s, but you haven't granted it yet.", name)
	}
	return text, isErr
}

// claudeSettings is the part of the --settings file the fake reads.
type claudeSettings struct {
	APIKeyHelper           string   `json:"apiKeyHelper"`
	AllowedHTTPHookURLs    []string `json:"allowedHttpHookUrls"`
	HTTPHookAllowedEnvVars []string `json:"httpHookAllowedEnvVars"`
	Hooks                  struct {
		PreToolUse []struct {
			Matcher string      `json:"matcher"`
			Hooks   []hookEntry `json:"hooks"`
		} `json:"PreToolUse"`
	} `json:"hooks"`
}

// hookEntry is one PreToolUse hook: an http hook, the one kind the fake
// runs, as Claude Code 2.1.328 reads it (docs/wire-facts.md A9).
type hookEntry struct {
	Type           string            `json:"type"`
	URL            string            `json:"url"`
	Timeout        int               `json:"timeout"`
	OnFailure      string            `json:"onFailure"`
	Headers        map[string]string `json:"headers"`
	AllowedEnvVars []string          `json:"allowedEnvVars"`
}

// settings reads the --settings file; without one there are none.
func (c *claude) settings() (claudeSettings, error) {
	var s claudeSettings
	if c.l.settings == "" {
		return s, nil
	}
	b, err := os.ReadFile(c.l.settings)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("--settings %s: %w", c.l.settings, err)
	}
	return s, nil
}

// hook posts the payload to the --settings file's PreToolUse http hooks, as
// Claude Code does, and reads the first decision one answers. A hook that
// fails (no connection, a timeout, a non-2xx answer, a body that is no
// JSON object) blocks the call under onFailure "block", and is passed
// over otherwise.
func (c *claude) hook(id, name string, input json.RawMessage) (decision, reason string, updated json.RawMessage, err error) {
	settings, err := c.settings()
	if err != nil {
		return "", "", nil, err
	}
	payload, _ := json.Marshal(map[string]any{"session_id": fakeSession, "hook_event_name": "PreToolUse",
		"tool_name": name, "tool_input": hookInput(input), "tool_use_id": id})
	for _, m := range settings.Hooks.PreToolUse {
		if !matches(m.Matcher, name) {
			continue
		}
		for _, h := range m.Hooks {
			fmt.Fprintf(c.stderr, "fake claude: PreToolUse hook for %s\n", name)
			out, ferr := c.post(settings, h, payload)
			if ferr != nil {
				if h.OnFailure == "block" {
					return "", "", nil, fmt.Errorf("[%s]: %w; blocking because onFailure is \"block\"", h.URL, ferr)
				}
				continue
			}
			var o struct {
				Specific struct {
					Decision string          `json:"permissionDecision"`
					Reason   string          `json:"permissionDecisionReason"`
					Updated  json.RawMessage `json:"updatedInput"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(out, &o); err != nil {
				return "", "", nil, fmt.Errorf("the hook answered %q", out)
			}
			if o.Specific.Decision != "" {
				return o.Specific.Decision, o.Specific.Reason, o.Specific.Updated, nil
			}
		}
	}
	return "", "", nil, nil
}

// post puts payload to h: its URL held to allowedHttpHookUrls, its headers'
// $VAR and ${VAR} filled from the environment for the variables both
// allowlists name (any other reads as empty), within its timeout. It
// returns the body of a 2xx answer ({} for an empty one).
func (c *claude) post(s claudeSettings, h hookEntry, payload []byte) ([]byte, error) {
	if h.Type != "http" {
		return nil, fmt.Errorf("the fake runs http hooks only, not %q", h.Type)
	}
	if s.AllowedHTTPHookURLs != nil && !slices.Contains(s.AllowedHTTPHookURLs, h.URL) {
		return nil, fmt.Errorf("HTTP hook blocked: %s does not match any pattern in allowedHttpHookUrls", h.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(h.Timeout, 1))*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	vars := regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)`)
	for k, v := range h.Headers {
		req.Header.Set(k, vars.ReplaceAllStringFunc(v, func(ref string) string {
			m := vars.FindStringSubmatch(ref)
			name := m[1] + m[2]
			if !slices.Contains(h.AllowedEnvVars, name) || s.HTTPHookAllowedEnvVars != nil && !slices.Contains(s.HTTPHookAllowedEnvVars, name) {
				return ""
			}
			return os.Getenv(name)
		}))
	}
	resp, err := c.hooks.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, errors.New("timed out")
		}
		return nil, fmt.Errorf("failed\n%w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return nil, fmt.Errorf("failed\n%w", err)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, fmt.Errorf("failed\nHTTP %d from %s", resp.StatusCode, h.URL)
	case len(bytes.TrimSpace(body)) == 0:
		return []byte("{}"), nil
	case !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")):
		return nil, fmt.Errorf("failed\nHTTP hook must return JSON, but got non-JSON response body: %s", body)
	}
	return body, nil
}

// hookInput is a tool input as Claude Code's hook shows it, the part of
// its rewrite a script can meet (docs/wire-facts.md A1.4): a relative
// file_path or notebook_path made absolute against the cwd. The stream-json
// line keeps the model's text.
func hookInput(input json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return input
	}
	changed := false
	for _, k := range []string{"file_path", "notebook_path"} {
		if p, ok := m[k].(string); ok && p != "" && !filepath.IsAbs(p) {
			if cwd, err := os.Getwd(); err == nil {
				m[k], changed = filepath.Join(cwd, p), true
			}
		}
	}
	if !changed {
		return input
	}
	b, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return b
}

// matches is Claude Code's reading of a PreToolUse matcher, as far as a
// run uses it: empty or "*" is every tool, a list of names joined by "|"
// is those names, and anything else is a regular expression, where the
// negative lookahead Go's regexp lacks is read for a literal prefix
// ("^(?!mcp__x__)": every tool not starting with mcp__x__). A pattern that
// does not compile matches nothing, as in Claude Code.
func matches(matcher, tool string) bool {
	switch {
	case matcher == "" || matcher == "*":
		return true
	case namesOnly.MatchString(matcher):
		return slices.Contains(strings.Split(matcher, "|"), tool)
	}
	if p, ok := strings.CutPrefix(matcher, "^(?!"); ok && strings.HasSuffix(p, ")") && regexp.QuoteMeta(p[:len(p)-1]) == p[:len(p)-1] {
		return !strings.HasPrefix(tool, p[:len(p)-1])
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(tool)
}

var namesOnly = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// perform runs an admitted call: a catalogue tool through its MCP server,
// Read, Write and Bash for real in the cwd, anything else as a no-op.
func (c *claude) perform(id, name string, input json.RawMessage) (string, bool) {
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		server, tool, _ := strings.Cut(rest, "__")
		mc, ok := c.servers[server]
		if !ok {
			return "No such tool available: " + name, true
		}
		text, isErr, err := mc.callTool(tool, input, id)
		if err != nil {
			return fmt.Sprintf("MCP error: %v", err), true
		}
		return text, isErr
	}
	var in struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
		Command  string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	switch name {
	case "Read":
		b, err := os.ReadFile(in.FilePath)
		if err != nil {
			return err.Error(), true
		}
		return string(b), false
	case "Write":
		if err := os.WriteFile(in.FilePath, []byte(in.Content), 0o644); err != nil {
			return err.Error(), true
		}
		return "File created successfully at: " + in.FilePath, false
	case "Bash":
		out, err := exec.Command("/bin/sh", "-c", in.Command).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s%v", out, err), true
		}
		return string(out), false
	}
	return "(the fake claude performed " + name + ")", false
}

func (c *claude) closeServers() { closeAll(c.servers) }

// closeAll ends every MCP server a fake started.
func closeAll(servers map[string]*mcpClient) {
	for _, mc := range servers {
		mc.close()
	}
}

// runHook runs a hook's command line with shell -c, the payload on its
// stdin, within timeout, and returns what it printed.
func runHook(shell, command string, payload []byte, timeout time.Duration, stderr io.Writer) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, shell, "-c", command)
	cmd.Stdin, cmd.Stderr = bytes.NewReader(payload), stderr
	return cmd.Output()
}

// mcpClient speaks MCP over a server's stdio: newline-delimited JSON-RPC.
type mcpClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	id  int
}

func startMCP(command string, args []string, stderr io.Writer) (*mcpClient, error) {
	cmd := exec.Command(command, args...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	mc := &mcpClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
	if _, err := mc.call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "fake-claude", "version": ClaudeVersion}}); err != nil {
		mc.close()
		return nil, err
	}
	if err := mc.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		mc.close()
		return nil, err
	}
	return mc, nil
}

func (mc *mcpClient) send(msg map[string]any) error {
	b, _ := json.Marshal(msg)
	_, err := mc.in.Write(append(b, '\n'))
	return err
}

func (mc *mcpClient) call(method string, params any) (json.RawMessage, error) {
	mc.id++
	if err := mc.send(map[string]any{"jsonrpc": "2.0", "id": mc.id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := mc.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: the server's stdout ended: %w", method, err)
		}
		var resp struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &resp) != nil || resp.ID == nil || *resp.ID != mc.id {
			continue // a notification, or not an answer to this call
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, resp.Error.Message)
		}
		return resp.Result, nil
	}
}

func (mc *mcpClient) listTools() ([]string, error) {
	res, err := mc.call("tools/list", map[string]any{})
	if err != nil {
		return nil, err
	}
	var l struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &l); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range l.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names, nil
}

// callTool calls tool with the tool use's id in _meta, as Claude Code does,
// and returns the result's text.
func (mc *mcpClient) callTool(tool string, input json.RawMessage, toolUseID string) (string, bool, error) {
	res, err := mc.call("tools/call", map[string]any{"name": tool, "arguments": input,
		"_meta": map[string]any{"claudecode/toolUseId": toolUseID}})
	if err != nil {
		return "", false, err
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", false, err
	}
	var texts []string
	for _, c := range r.Content {
		texts = append(texts, c.Text)
	}
	return strings.Join(texts, "\n"), r.IsError, nil
}

func (mc *mcpClient) close() {
	_ = mc.in.Close()
	done := make(chan struct{})
	go func() { _ = mc.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = mc.cmd.Process.Kill()
		<-done
	}
}
