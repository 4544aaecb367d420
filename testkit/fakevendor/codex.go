package fakevendor

import (
	"bufio"
	"context"
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
	"sync"
	"time"
)

// CodexVersion is what the fake codex prints for --version: the pin.
const CodexVersion = "0.169.0"

// CodexMain is Codex for testscript.Main.
func CodexMain() {
	os.Exit(Codex(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// codexModels is the bundle `debug models --bundled` prints unless a file
// codex-models.json beside the binary holds another (the word fail in it
// makes the command fail). Its one entry is in code mode, as the pinned
// slugs are, with only fields the pinned bundle has.
const codexModels = `{"models":[{"slug":"gpt-fake","display_name":"GPT fake","description":"the fake codex's one model","priority":1,"visibility":"list","tool_mode":"code_mode_only","apply_patch_tool_type":"freeform","multi_agent_version":"v2","experimental_supported_tools":["clock"],"use_responses_lite":true,"shell_type":"unified_exec"}]}`

// rejectedModel is a model the fake's --strict-config refuses, the way the
// real one refuses an unknown key: a config naming it fails the preflight.
const rejectedModel = "gpt-fake-rejected"

// Codex runs the fake codex with args and returns its exit status. It
// answers what a run asks of the native binary: --version, `debug models
// --bundled`, `app-server --strict-config --print-startup-config` (the
// preflight) and `app-server --strict-config`, the JSON-RPC server a run
// converses with. The server plays the script its task names (a file,
// relative to its cwd; $SCRIPTDIR stands for that file's directory); a task
// that names no file is answered with its own text.
//
// Script lines (blank lines and # comments are skipped):
//
//	text WORDS            an agentMessage item
//	tool NAME INPUT       a dynamic tool call: item/tool/call, answered by
//	                      the run; INPUT is JSON; NAME must be one of the
//	                      dynamic tools thread/start declared
//	exec COMMAND          a shell command asking approval; run with sh -c
//	                      in the cwd when accepted, not when declined; a
//	                      cancel ends the turn interrupted
//	fail WORDS            the turn fails with that error
//	stderr WORDS          a line on stderr
//	sleep DURATION        e.g. 200ms; a steer or an interrupt cuts it short
//	hang                  wait for an interrupt, a steer or the end of stdin
//	exit CODE             end at once, without a turn/completed
func Codex(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case slices.Contains(args, "--version"):
		fmt.Fprintln(stdout, "codex-cli "+CodexVersion)
		return 0
	case len(args) >= 2 && args[0] == "debug" && args[1] == "models":
		return codexBundle(stdout, stderr)
	case len(args) >= 1 && args[0] == "app-server" && slices.Contains(args, "--print-startup-config"):
		return codexPreflight(stdout, stderr)
	case len(args) >= 1 && args[0] == "app-server":
		s := &codexServer{out: json.NewEncoder(stdout), stderr: stderr, answers: map[string]chan json.RawMessage{}}
		return s.serve(stdin)
	}
	fmt.Fprintf(stderr, "fake codex: %q is not scripted (testkit/fakevendor/codex.go)\n", args)
	return 2
}

func codexBundle(stdout, stderr io.Writer) int {
	bundle := codexModels
	if self, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "codex-models.json")); err == nil {
			bundle = strings.TrimSpace(string(b))
		}
	}
	if strings.Contains(bundle, "fail") && !json.Valid([]byte(bundle)) {
		fmt.Fprintln(stderr, "Error: the fake codex was told to fail debug models")
		return 1
	}
	fmt.Fprintln(stdout, bundle)
	return 0
}

var modelLine = regexp.MustCompile(`(?m)^model = "([^"]*)"$`)

func codexPreflight(stdout, stderr io.Writer) int {
	path := filepath.Join(os.Getenv("CODEX_HOME"), "config.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "Error: startup configuration unavailable: %v\n", err)
		return 1
	}
	if m := modelLine.FindSubmatchIndex(b); m != nil && string(b[m[2]:m[3]]) == rejectedModel {
		line := strings.Count(string(b[:m[0]]), "\n") + 1
		out, _ := json.Marshal(map[string]any{"error": map[string]any{"code": -32600, "message": "failed to load configuration",
			"data": map[string]any{"reason": "configLoad", "filePath": path, "line": line, "column": 1, "detail": "unknown model `" + rejectedModel + "`"}}})
		fmt.Fprintln(stdout, string(out))
		fmt.Fprintln(stderr, "Error: startup configuration unavailable")
		return 1
	}
	fmt.Fprintln(stdout, `{"appServerVersion":"`+CodexVersion+`","configRequirements":{"supportsIndependentSpeedModes":true,"requirements":null}}`)
	return 0
}

// codexServer is the fake app-server: requests on stdin, the turn's script
// on its own goroutine, every line out under one lock.
type codexServer struct {
	mu      sync.Mutex
	out     *json.Encoder
	stderr  io.Writer
	nextID  int
	answers map[string]chan json.RawMessage // server request id → its answer

	cwd, model, approval, sandbox string
	dynamicTools                  map[string]bool // declared at thread/start
	turn                          string          // the running turn, "" when none
	wake                          chan string
}

func (s *codexServer) send(m map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.out.Encode(m)
}

func (s *codexServer) notify(method string, params map[string]any) {
	s.send(map[string]any{"method": method, "params": params})
}

func (s *codexServer) serve(stdin io.Reader) int {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			fmt.Fprintf(s.stderr, "Failed to deserialize JSONRPCMessage: %q\n", sc.Text())
			continue
		}
		if m.Method == "" {
			s.mu.Lock()
			ch := s.answers[string(m.ID)]
			delete(s.answers, string(m.ID))
			s.mu.Unlock()
			if ch != nil {
				if m.Error != nil {
					ch <- nil
				} else {
					ch <- m.Result
				}
			}
			continue
		}
		if len(m.ID) == 0 {
			continue // initialized
		}
		result, rpcErr := s.request(m.Method, m.Params)
		if rpcErr != "" {
			s.send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32600, "message": rpcErr}})
			continue
		}
		s.send(map[string]any{"id": m.ID, "result": result})
		if m.Method == "turn/start" {
			go s.play(m.Params)
		}
	}
	return 0
}

func (s *codexServer) request(method string, params json.RawMessage) (any, string) {
	switch method {
	case "initialize":
		return map[string]any{"userAgent": "metaharness/" + CodexVersion + " (fake)", "codexHome": os.Getenv("CODEX_HOME"), "platformFamily": "unix", "platformOs": "linux"}, ""
	case "thread/start":
		var p struct {
			Cwd, Model, ApprovalPolicy, Sandbox string
			DynamicTools                        []struct{ Name string }
		}
		_ = json.Unmarshal(params, &p)
		s.cwd, s.model, s.approval, s.sandbox = p.Cwd, p.Model, p.ApprovalPolicy, p.Sandbox
		s.dynamicTools = map[string]bool{}
		for _, t := range p.DynamicTools {
			s.dynamicTools[t.Name] = true
		}
		sandbox := map[string]string{"read-only": "readOnly", "workspace-write": "workspaceWrite"}[p.Sandbox]
		thread := map[string]any{"id": "fake-thread", "sessionId": "fake-codex-session", "cliVersion": CodexVersion, "cwd": p.Cwd, "ephemeral": true}
		s.notify("thread/started", map[string]any{"thread": thread})
		return map[string]any{"thread": thread, "model": p.Model, "modelProvider": "fake", "cwd": p.Cwd,
			"approvalPolicy": p.ApprovalPolicy, "sandbox": map[string]any{"type": sandbox, "networkAccess": false}}, ""
	case "config/read":
		return map[string]any{"config": codexConfig()}, ""
	case "plugin/installed":
		return map[string]any{"marketplaces": []any{}, "marketplaceLoadErrors": []any{}}, ""
	case "mcpServerStatus/list":
		return map[string]any{"data": []any{}, "nextCursor": nil}, ""
	case "skills/list":
		return map[string]any{"data": []any{map[string]any{"cwd": s.cwd, "skills": []any{}, "errors": []any{}}}}, ""
	case "turn/start":
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.turn != "" {
			return nil, "a turn is already running"
		}
		s.turn, s.wake = "fake-turn-1", make(chan string, 4)
		return map[string]any{"turn": map[string]any{"id": s.turn, "items": []any{}, "status": "inProgress"}}, ""
	case "turn/steer", "turn/interrupt":
		s.mu.Lock()
		turn, wake := s.turn, s.wake
		s.mu.Unlock()
		if turn == "" {
			return nil, "no active turn to " + strings.TrimPrefix(method, "turn/")
		}
		wake <- method
		if method == "turn/steer" {
			return map[string]any{"turnId": turn}, ""
		}
		return map[string]any{}, ""
	}
	return nil, "Invalid request: unknown variant `" + method + "`"
}

// codexConfig is the part of the effective config a run reads: the
// provider and its key variable, from the scratch config.toml.
func codexConfig() map[string]any {
	b, _ := os.ReadFile(filepath.Join(os.Getenv("CODEX_HOME"), "config.toml"))
	provider := ""
	if m := regexp.MustCompile(`(?m)^model_provider = "([^"]*)"$`).FindSubmatch(b); m != nil {
		provider = string(m[1])
	}
	p := map[string]any{}
	if m := regexp.MustCompile(`(?m)^env_key = "([^"]*)"$`).FindSubmatch(b); m != nil {
		p["env_key"] = string(m[1])
	}
	return map[string]any{"model_provider": provider, "personality": nil, "model_providers": map[string]any{provider: p}}
}

// ask sends a server request and waits for its answer (nil: an error
// answer or stdin ended).
func (s *codexServer) ask(method string, params map[string]any) json.RawMessage {
	s.mu.Lock()
	id := strconv.Itoa(s.nextID)
	s.nextID++
	ch := make(chan json.RawMessage, 1)
	s.answers[id] = ch
	_ = s.out.Encode(map[string]any{"id": s.nextID - 1, "method": method, "params": params})
	s.mu.Unlock()
	return <-ch
}

func (s *codexServer) play(params json.RawMessage) {
	var p struct {
		Input []struct {
			Text string `json:"text"`
		} `json:"input"`
	}
	_ = json.Unmarshal(params, &p)
	task := ""
	if len(p.Input) > 0 {
		task = p.Input[0].Text
	}
	path := task
	if !filepath.IsAbs(path) {
		path = filepath.Join(s.cwd, task)
	}
	script := "text " + task
	if b, err := os.ReadFile(path); err == nil {
		script = strings.ReplaceAll(string(b), "$SCRIPTDIR", filepath.Dir(path))
	}
	s.notify("turn/started", map[string]any{"threadId": "fake-thread", "turn": map[string]any{"id": "fake-turn-1", "status": "inProgress"}})
	status, errMsg := s.run(script)
	s.mu.Lock()
	s.turn = ""
	s.mu.Unlock()
	if status == "" {
		return
	}
	turn := map[string]any{"id": "fake-turn-1", "items": []any{}, "status": status, "error": nil, "durationMs": 5}
	if errMsg != "" {
		turn["error"] = map[string]any{"message": errMsg, "codexErrorInfo": map[string]any{"other": map[string]any{"httpStatusCode": nil}}}
		s.notify("error", map[string]any{"error": turn["error"], "willRetry": false, "threadId": "fake-thread", "turnId": "fake-turn-1"})
	}
	s.notify("turn/completed", map[string]any{"threadId": "fake-thread", "turn": turn})
}

// run plays the script and returns the turn's status and error ("" status:
// the script exited the process).
func (s *codexServer) run(script string) (string, string) {
	items := 0
	item := func(kind string) string { items++; return fmt.Sprintf("%s_%04d", kind, items) }
	for n, line := range strings.Split(script, "\n") {
		select {
		case w := <-s.wake:
			if w == "turn/interrupt" {
				return "interrupted", ""
			}
		default:
		}
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "text":
			id := item("msg")
			it := map[string]any{"type": "agentMessage", "id": id, "text": rest, "phase": "final_answer"}
			s.notify("item/started", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "item": it})
			s.notify("item/completed", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "item": it})
			s.usage()
		case "tool":
			name, input, _ := strings.Cut(rest, " ")
			if !json.Valid([]byte(input)) {
				return "failed", fmt.Sprintf("fake codex: script line %d: the input of %s is not JSON", n+1, name)
			}
			if !s.dynamicTools[name] {
				return "failed", fmt.Sprintf("fake codex: script line %d: %s is not among the %d dynamic tools thread/start declared", n+1, name, len(s.dynamicTools))
			}
			s.tool(item("call"), name, json.RawMessage(input))
		case "exec":
			if status := s.exec(item("call"), rest); status != "" {
				return status, ""
			}
		case "fail":
			return "failed", rest
		case "stderr":
			fmt.Fprintln(s.stderr, rest)
		case "sleep", "hang":
			d := time.Hour
			if verb == "sleep" {
				var err error
				if d, err = time.ParseDuration(rest); err != nil {
					return "failed", fmt.Sprintf("fake codex: script line %d: %v", n+1, err)
				}
			}
			select {
			case w := <-s.wake:
				if w == "turn/interrupt" {
					return "interrupted", ""
				}
			case <-time.After(d):
			}
		case "exit":
			code, _ := strconv.Atoi(rest)
			os.Exit(code)
		default:
			return "failed", fmt.Sprintf("fake codex: script line %d: no directive %q", n+1, verb)
		}
	}
	return "completed", ""
}

func (s *codexServer) usage() {
	counts := map[string]any{"totalTokens": 2, "inputTokens": 1, "cachedInputTokens": 0, "cacheWriteInputTokens": 0, "outputTokens": 1, "reasoningOutputTokens": 0}
	s.notify("thread/tokenUsage/updated", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1",
		"tokenUsage": map[string]any{"total": counts, "last": counts, "modelContextWindow": 1000}})
}

func (s *codexServer) tool(id, name string, input json.RawMessage) {
	it := map[string]any{"type": "dynamicToolCall", "id": id, "namespace": nil, "tool": name, "arguments": input, "status": "inProgress"}
	s.notify("item/started", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "item": it})
	answer := s.ask("item/tool/call", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "callId": id, "namespace": nil, "tool": name, "arguments": input})
	var a struct {
		ContentItems []any `json:"contentItems"`
		Success      *bool `json:"success"`
	}
	status, success := "failed", false
	if json.Unmarshal(answer, &a) == nil && a.Success != nil {
		success = *a.Success
		if success {
			status = "completed"
		}
	}
	it["status"], it["success"], it["contentItems"] = status, success, a.ContentItems
	s.notify("item/completed", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "item": it})
	s.usage()
}

// exec asks approval for a command and runs it when accepted; it returns
// "interrupted" when the answer was cancel.
func (s *codexServer) exec(id, command string) string {
	shown := "/bin/bash -lc " + strconv.Quote(command)
	it := map[string]any{"type": "commandExecution", "id": id, "command": shown, "cwd": s.cwd, "status": "inProgress"}
	s.notify("item/started", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "item": it})
	answer := s.ask("item/commandExecution/requestApproval", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1",
		"itemId": id, "command": shown, "cwd": s.cwd, "availableDecisions": []string{"accept", "cancel"}})
	var a struct {
		Decision string `json:"decision"`
	}
	_ = json.Unmarshal(answer, &a)
	switch a.Decision {
	case "cancel":
		return "interrupted"
	case "accept":
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Dir = s.cwd
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		it["status"], it["exitCode"], it["aggregatedOutput"] = "completed", code, string(out)
	default:
		it["status"] = "declined"
	}
	s.notify("item/completed", map[string]any{"threadId": "fake-thread", "turnId": "fake-turn-1", "item": it})
	s.usage()
	return ""
}
