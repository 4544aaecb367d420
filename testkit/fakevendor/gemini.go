package fakevendor

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GeminiVersion is what the fake gemini prints for --version: the pin.
const GeminiVersion = "0.61.0"

// GeminiMain is Gemini for testscript.Main.
func GeminiMain() {
	os.Exit(Gemini(os.Args[1:], os.Stdout, os.Stderr))
}

// geminiValueFlags take a value; geminiBoolFlags do not. Anything else is
// refused the way Gemini CLI's option parser (yargs, strict) refuses it.
var (
	geminiValueFlags = []string{"--prompt", "--output-format", "--admin-policy", "--allowed-mcp-server-names", "--approval-mode", "--extensions", "--model"}
	geminiBoolFlags  = []string{"--skip-trust", "--raw-output", "--accept-raw-output-risk"}
)

// Gemini runs the fake with args and returns its exit status: Gemini CLI
// as a run starts it headless (-o stream-json). It reads its launch the
// way the real one does (the settings in $GEMINI_CLI_HOME/.gemini: the
// BeforeTool hook, the MCP servers; the admin policy's marker rules), and
// replays a script of records, putting each native call to the hook and
// running it only when the admin policy lets it (a call the hook marked),
// and each owned tool to its MCP server. Without a key it stops where
// Gemini CLI does (exit 41), after parsing every flag.
//
// The script is the file the task names, $SCRIPTDIR standing for its
// directory; a task that names no file is answered with its own text.
// Script lines (blank lines and # comments are skipped):
//
//	text WORDS        an assistant text (two deltas)
//	tool NAME INPUT   a tool_use line, the call decided and obeyed, and
//	                  its tool_result; INPUT is JSON
//	error SEV WORDS   an error line of Gemini CLI's own
//	result            the terminal result (success)
//	fail TYPE WORDS   the terminal result of a failure
//	exit N            end with status N
func Gemini(args []string, stdout, stderr io.Writer) int {
	task, version, err := parseGeminiArgs(args)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if version {
		fmt.Fprintln(stdout, GeminiVersion)
		return 0
	}
	if os.Getenv("GEMINI_API_KEY") == "" {
		fmt.Fprintln(stderr, "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.")
		return 41
	}
	g := &gemini{out: json.NewEncoder(stdout), stderr: stderr, launch: args}
	if err := g.load(); err != nil {
		fmt.Fprintf(stderr, "fake gemini: %v\n", err)
		return 52
	}
	defer closeAll(g.servers)
	g.emit(map[string]any{"type": "init", "session_id": "fake-gemini-session", "model": "auto"})
	g.emit(map[string]any{"type": "message", "role": "user", "content": task})
	script := "text " + task + "\nresult"
	if p := scriptPath(task); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(stderr, "fake gemini: %v\n", err)
			return 1
		}
		script = strings.ReplaceAll(string(b), "$SCRIPTDIR", filepath.Dir(p))
	}
	return g.play(script)
}

func parseGeminiArgs(args []string) (task string, version bool, err error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = args[1:] // the bundle, when started through node
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, inline := strings.Cut(a, "=")
		switch {
		case a == "--version":
			version = true
		case slices.Contains(geminiBoolFlags, a):
		case slices.Contains(geminiValueFlags, name):
			if !inline {
				if i+1 >= len(args) {
					return "", false, fmt.Errorf("Not enough arguments following: %s", strings.TrimPrefix(name, "--"))
				}
				i++
				value = args[i]
			}
			if name == "--prompt" {
				task = value
			}
		default:
			return "", false, fmt.Errorf("Unknown arguments: %s", strings.TrimLeft(name, "-"))
		}
	}
	return task, version, nil
}

// scriptPath is the file a task names (its last word; relative to the
// cwd), "" when it names none.
func scriptPath(task string) string {
	f := strings.Fields(task)
	if len(f) == 0 {
		return ""
	}
	p := f[len(f)-1]
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		abs, _ := filepath.Abs(p)
		return abs
	}
	return ""
}

type gemini struct {
	out     *json.Encoder
	stderr  io.Writer
	launch  []string
	hooks   []geminiHook
	rules   []*regexp.Regexp // the admin policy's marker patterns
	servers map[string]*mcpClient
	calls   int
}

type geminiHook struct {
	matcher, command string
	timeout          time.Duration
}

func (g *gemini) emit(rec map[string]any) {
	rec["timestamp"] = "2026-01-01T00:00:00.000Z"
	_ = g.out.Encode(rec)
}

// load reads the launch's settings and admin policy and starts its MCP
// servers.
func (g *gemini) load() error {
	b, err := os.ReadFile(filepath.Join(os.Getenv("GEMINI_CLI_HOME"), ".gemini", "settings.json"))
	if err != nil {
		return err
	}
	var s struct {
		Hooks struct {
			BeforeTool []struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Command string `json:"command"`
					Timeout int    `json:"timeout"`
				} `json:"hooks"`
			} `json:"BeforeTool"`
		} `json:"hooks"`
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("the settings: %w", err)
	}
	for _, m := range s.Hooks.BeforeTool {
		for _, h := range m.Hooks {
			g.hooks = append(g.hooks, geminiHook{m.Matcher, h.Command, time.Duration(max(h.Timeout, 1000)) * time.Millisecond})
		}
	}
	for i, a := range g.launch {
		if a == "--admin-policy" && i+1 < len(g.launch) {
			policy, err := os.ReadFile(g.launch[i+1])
			if err != nil {
				return err
			}
			for _, m := range argsPattern.FindAllSubmatch(policy, -1) {
				re, err := regexp.Compile(string(m[1]))
				if err != nil {
					return err
				}
				g.rules = append(g.rules, re)
			}
		}
	}
	g.servers = map[string]*mcpClient{}
	for name, srv := range s.MCPServers {
		mc, err := startMCP(srv.Command, srv.Args, g.stderr)
		if err != nil {
			return fmt.Errorf("MCP server %s: %w", name, err)
		}
		g.servers[name] = mc
	}
	return nil
}

var argsPattern = regexp.MustCompile(`(?m)^argsPattern = '([^']*)'$`)

func (g *gemini) play(script string) int {
	for n, line := range strings.Split(expandRepeats(script), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "text":
			half := len(rest) / 2
			for _, part := range []string{rest[:half], rest[half:]} {
				if part != "" {
					g.emit(map[string]any{"type": "message", "role": "assistant", "content": part, "delta": true})
				}
			}
		case "tool":
			name, input, _ := strings.Cut(rest, " ")
			if !json.Valid([]byte(input)) {
				fmt.Fprintf(g.stderr, "fake gemini: script line %d: the input of %s is not JSON\n", n+1, name)
				return 1
			}
			g.tool(name, json.RawMessage(input))
		case "error":
			sev, words, _ := strings.Cut(rest, " ")
			g.emit(map[string]any{"type": "error", "severity": sev, "message": words})
		case "result":
			g.emit(map[string]any{"type": "result", "status": "success", "stats": map[string]any{"total_tokens": 2, "input_tokens": 1,
				"output_tokens": 1, "cached": 0, "input": 1, "duration_ms": 1, "tool_calls": g.calls}})
		case "fail":
			typ, words, _ := strings.Cut(rest, " ")
			g.emit(map[string]any{"type": "result", "status": "error", "error": map[string]any{"type": typ, "message": words},
				"stats": map[string]any{"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "cached": 0, "input": 0, "duration_ms": 0, "tool_calls": 0}})
		case "exit":
			code, _ := strconv.Atoi(rest)
			return code
		default:
			fmt.Fprintf(g.stderr, "fake gemini: script line %d: no directive %q\n", n+1, verb)
			return 1
		}
	}
	return 0
}

// tool writes a call's tool_use line, decides it as Gemini CLI does (the
// hook, then the admin policy) and writes its tool_result.
func (g *gemini) tool(name string, input json.RawMessage) {
	g.calls++
	id := fmt.Sprintf("%s__%s_1700000000000_%d", name, name, g.calls)
	g.emit(map[string]any{"type": "tool_use", "tool_name": name, "tool_id": id, "parameters": input})
	text, errType := g.decide(name, input)
	if errType == "" {
		text, errType = g.perform(name, input)
	}
	rec := map[string]any{"type": "tool_result", "tool_id": id, "status": "success", "output": text}
	if errType != "" {
		rec["status"], rec["error"] = "error", map[string]any{"type": errType, "message": text}
	}
	g.emit(rec)
}

// decide runs the matching hooks (a hook that fails leaves the call to the
// policy, as Gemini CLI's do) and then the admin policy: an MCP tool of a
// server the launch started is allowed, a native one only with a marked
// input. It returns the refusal, or the input to run.
func (g *gemini) decide(name string, input json.RawMessage) (string, string) {
	args := input
	for _, h := range g.hooks {
		if !matches(h.matcher, name) {
			continue
		}
		payload, _ := json.Marshal(map[string]any{"hook_event_name": "BeforeTool", "session_id": "fake-gemini-session",
			"cwd": mustGetwd(), "tool_name": name, "tool_input": input})
		out, err := runHook("bash", h.command, payload, h.timeout, g.stderr)
		var o struct {
			Decision string `json:"decision"`
			Reason   string `json:"reason"`
			Specific struct {
				ToolInput json.RawMessage `json:"tool_input"`
			} `json:"hookSpecificOutput"`
		}
		if err != nil || json.Unmarshal(out, &o) != nil {
			fmt.Fprintf(g.stderr, "fake gemini: the hook failed (%v): the call goes to the policy\n", err)
			continue
		}
		if o.Decision == "deny" || o.Decision == "block" {
			return "Tool execution blocked: " + o.Reason, "policy_violation"
		}
		if len(o.Specific.ToolInput) > 0 {
			args = o.Specific.ToolInput
		}
	}
	if rest, ok := strings.CutPrefix(name, "mcp_"); ok {
		server, _, _ := strings.Cut(rest, "_")
		if _, ok := g.servers[server]; !ok {
			return fmt.Sprintf("Tool %q not found.", name), "tool_not_registered"
		}
		return "", ""
	}
	for _, re := range g.rules {
		if re.Match(args) {
			return "", ""
		}
	}
	return "Tool execution denied by policy.", "policy_violation"
}

// perform runs an admitted call: an MCP tool through its server, the shell
// and file tools for real in the cwd, anything else as a no-op.
func (g *gemini) perform(name string, input json.RawMessage) (string, string) {
	if rest, ok := strings.CutPrefix(name, "mcp_"); ok {
		server, tool, _ := strings.Cut(rest, "_")
		text, isErr, err := g.servers[server].callTool(tool, input, "")
		switch {
		case err != nil:
			return fmt.Sprintf("MCP error: %v", err), "mcp_tool_error"
		case isErr:
			return text, "mcp_tool_error"
		}
		return text, ""
	}
	var in struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
		Command  string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	switch name {
	case "read_file":
		b, err := os.ReadFile(in.FilePath)
		if err != nil {
			return err.Error(), "read_content_failure"
		}
		return string(b), ""
	case "write_file":
		if err := os.WriteFile(in.FilePath, []byte(in.Content), 0o644); err != nil {
			return err.Error(), "file_write_failure"
		}
		return "Successfully created and wrote to new file: " + in.FilePath, ""
	case "run_shell_command":
		out, err := exec.Command("bash", "-c", in.Command).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s%v", out, err), "shell_execute_error"
		}
		return string(out), ""
	}
	return "(the fake gemini performed " + name + ")", ""
}

func mustGetwd() string {
	d, _ := os.Getwd()
	return d
}
