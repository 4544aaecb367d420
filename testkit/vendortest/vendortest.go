// Package vendortest runs the real vendor CLIs (Claude Code, Codex) in
// tests: it finds the pinned binaries under METAHARNESS_NODE_TOOLS, insists
// on a loopback-only network namespace, builds scratch homes with the
// vendors' telemetry switched off, and looks at a running child's
// /proc/<pid>/environ and cmdline.
//
// Every test that starts a vendor CLI calls Binary (or Tools and
// RequireLoopbackOnly) first. Without the tools or the namespace the test
// skips with the reason, unless METAHARNESS_REQUIRE_REAL_CLIENTS=1 (set under
// CI), where it fails. Run such tests with `scripts/loopback-only go test …`.
// Each such test records whether it ran (Record), for make test's summary;
// so does a test that checks our output with another real implementation
// outside Go (Python's securesystemslib), skipping or failing through
// Unavailable the same way.
package vendortest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Unavailable skips t, or fails it when real clients are required, with
// the reason in its record: for a real-client test that checks its own
// prerequisites (after Record).
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	skipReason(t, msg)
	if os.Getenv("METAHARNESS_REQUIRE_REAL_CLIENTS") == "1" {
		t.Fatalf("%s (METAHARNESS_REQUIRE_REAL_CLIENTS=1: this test must run)", msg)
	}
	t.Skip(msg)
}

// Tools is the directory scripts/install-node-tools filled (node_modules
// inside), from METAHARNESS_NODE_TOOLS.
func Tools(t testing.TB) string {
	t.Helper()
	Record(t)
	dir := os.Getenv("METAHARNESS_NODE_TOOLS")
	if dir == "" {
		Unavailable(t, "METAHARNESS_NODE_TOOLS is unset: run scripts/install-node-tools and export its output (scripts/test does)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin")); err != nil {
		Unavailable(t, "METAHARNESS_NODE_TOOLS=%s has no node_modules/.bin: %v", dir, err)
	}
	return dir
}

// RequireLoopbackOnly passes only inside a network namespace whose sole
// interface is lo, made by scripts/loopback-only (METAHARNESS_LOOPBACK_ONLY=1).
func RequireLoopbackOnly(t testing.TB) {
	t.Helper()
	Record(t)
	if os.Getenv("METAHARNESS_LOOPBACK_ONLY") != "1" {
		Unavailable(t, "not inside a loopback-only network namespace: run the tests under scripts/loopback-only")
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatalf("listing network interfaces: %v", err)
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			t.Fatalf("METAHARNESS_LOOPBACK_ONLY=1 but interface %s is present: refusing to start a vendor CLI", i.Name)
		}
	}
}

// Binary is the path of a pinned vendor CLI ("claude" or "codex"), after
// checking the tools and the namespace.
func Binary(t testing.TB, name string) string {
	t.Helper()
	tools := Tools(t)
	RequireLoopbackOnly(t)
	bin := filepath.Join(tools, "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		Unavailable(t, "%s is not installed under %s: %v", name, tools, err)
	}
	return bin
}

// CodexNative is the pinned Codex's native binary, which a governed run
// starts as app-server (the node wrapper Binary finds execs it), after
// checking the tools and the namespace.
func CodexNative(t testing.TB) string {
	t.Helper()
	tools := Tools(t)
	RequireLoopbackOnly(t)
	bin := filepath.Join(tools, "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		Unavailable(t, "codex's native binary is not installed under %s: %v", tools, err)
	}
	return bin
}

// Home is a scratch home for one vendor run.
type Home struct {
	Root         string // the scratch root; also the cwd to run in
	Home         string // HOME
	ClaudeConfig string // CLAUDE_CONFIG_DIR
	CodexHome    string // CODEX_HOME
	Tmp          string // TMPDIR and CLAUDE_CODE_TMPDIR
	Work         string // an empty working directory
}

// NewHome makes a scratch home under t.TempDir.
func NewHome(t testing.TB) Home {
	t.Helper()
	root := t.TempDir()
	h := Home{
		Root: root, Home: filepath.Join(root, "home"), ClaudeConfig: filepath.Join(root, "home", ".claude"),
		CodexHome: filepath.Join(root, "codex-home"), Tmp: filepath.Join(root, "tmp"), Work: filepath.Join(root, "work"),
	}
	for _, d := range []string{h.Home, h.ClaudeConfig, h.CodexHome, h.Tmp, h.Work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// baseEnv is what every vendor child gets: the pinned Node first on PATH,
// the scratch home, a UTF-8 locale. Nothing from the test's environment.
func (h Home) baseEnv(tools string) []string {
	return []string{
		"PATH=" + filepath.Join(tools, "node_modules", ".bin") + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + h.Home, "TMPDIR=" + h.Tmp, "LANG=C.UTF-8", "TERM=dumb",
	}
}

// ClaudeEnv is Claude Code's environment with telemetry, retries and
// auto-update off, plus extra (KEY=VALUE; a later key wins).
func (h Home) ClaudeEnv(tools string, extra map[string]string) []string {
	env := append(h.baseEnv(tools),
		"CLAUDE_CONFIG_DIR="+h.ClaudeConfig, "CLAUDE_CODE_TMPDIR="+h.Tmp,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=0",
		"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_TELEMETRY=1")
	return withExtra(env, extra)
}

// CodexEnv is Codex's environment (its telemetry is off in CodexConfig),
// plus extra.
func (h Home) CodexEnv(tools string, extra map[string]string) []string {
	return withExtra(append(h.baseEnv(tools), "CODEX_HOME="+h.CodexHome), extra)
}

func withExtra(env []string, extra map[string]string) []string {
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// CodexConfig is a config.toml for a test run: an unknown model slug (so
// MCP tools are listed inline, not deferred behind tool_search), no
// approvals, a read-only sandbox, analytics and plugins off, no unbounded
// reconnects; then providerTables (the [model_providers.ID] table) and any
// other tables.
func CodexConfig(providerID string, tables ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model = \"metaharness-scripted\"\nmodel_provider = %s\n", strconv.Quote(providerID))
	b.WriteString("approval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\n")
	b.WriteString("[analytics]\nenabled = false\n\n[features]\nplugins = false\nunbounded_connection_retries = false\n")
	for _, t := range tables {
		b.WriteString("\n" + t)
	}
	return b.String()
}

// WriteCodexConfig writes config into CODEX_HOME.
func (h Home) WriteCodexConfig(t testing.TB, config string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(h.CodexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Proc is one process as /proc shows it.
type Proc struct {
	PID     int
	Cmdline []string
	Environ []string
}

// Tree is pid and all its descendants, read from /proc. A process that
// exits while being read is left out.
func Tree(pid int) ([]Proc, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, err := parentOf(child); err == nil {
			children[ppid] = append(children[ppid], child)
		}
	}
	var out []Proc
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		queue = append(queue, children[p]...)
		cmd, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		env, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p))
		if err := errors.Join(err1, err2); err != nil {
			if p == pid {
				return nil, fmt.Errorf("reading process %d: %w", pid, err)
			}
			continue
		}
		out = append(out, Proc{PID: p, Cmdline: split0(cmd), Environ: split0(env)})
	}
	return out, nil
}

func parentOf(pid int) (int, error) {
	f, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(f[1])
}

// statFields are the fields of /proc/PID/stat after the command: state,
// ppid, pgrp, session, …
func statFields(pid int) ([]string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 4 {
		return nil, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	return f, nil
}

// InSession lists the processes, zombies left out, whose session is sid:
// everything a session leader started, in whichever process group it put
// them.
func InSession(sid int) []Proc {
	entries, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, err := statFields(pid)
		if err != nil || f[0] == "Z" || f[3] != strconv.Itoa(sid) {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, Proc{PID: pid, Cmdline: split0(cmd)})
	}
	return out
}

func split0(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

// Holds reports which of the processes' cmdlines and environments contain
// secret, as "pid N cmdline" / "pid N environ KEY" lines.
func Holds(procs []Proc, secret string) []string {
	var where []string
	for _, p := range procs {
		for _, a := range p.Cmdline {
			if strings.Contains(a, secret) {
				where = append(where, fmt.Sprintf("pid %d cmdline", p.PID))
				break
			}
		}
		for _, kv := range p.Environ {
			if strings.Contains(kv, secret) {
				k, _, _ := strings.Cut(kv, "=")
				where = append(where, fmt.Sprintf("pid %d environ %s", p.PID, k))
			}
		}
	}
	return where
}

// ClaudeResult is the closing "result" record of claude -p --output-format
// stream-json. Check IsError, not the subtype: a failed run says "success".
type ClaudeResult struct {
	Result         string `json:"result"`
	IsError        bool   `json:"is_error"`
	TerminalReason string `json:"terminal_reason"`
	NumTurns       int    `json:"num_turns"`
}

// LastClaudeResult finds the last result record in stream-json output.
func LastClaudeResult(stdout []byte) (ClaudeResult, error) {
	var res ClaudeResult
	found := false
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil || rec.Type != "result" {
			continue
		}
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return res, err
		}
		found = true
	}
	if !found {
		return res, errors.New("no result record in claude's output")
	}
	return res, nil
}

// CodexOutcome is what codex exec --json said: the agent's last message,
// and the failure message when the turn failed.
type CodexOutcome struct {
	AgentMessage string
	Completed    bool
	Failure      string
}

// ReadCodexExec reads codex exec --json output.
func ReadCodexExec(stdout []byte) CodexOutcome {
	var out CodexOutcome
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
			Item struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"item"`
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch {
		case ev.Type == "item.completed" && ev.Item.Type == "agent_message":
			out.AgentMessage = ev.Item.Text
		case ev.Type == "turn.completed":
			out.Completed = true
		case ev.Type == "turn.failed":
			out.Failure = ev.Error.Message
		}
	}
	return out
}

// Lingering lists the processes, other than this one, whose command line
// (arguments joined by spaces) contains marker, as "PID: CMDLINE". A test
// gives what it starts a marker (a sleep of 4242.123456 seconds, a unique
// task) and looks for it after the run: pids inside a child's own PID
// namespace mean nothing out here, command lines do.
func Lingering(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if cmd := strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "); err == nil && strings.Contains(cmd, marker) {
			out = append(out, e.Name()+": "+cmd)
		}
	}
	return out
}

// WaitGone waits up to 5 s for every process Lingering finds to end, and
// returns those left.
func WaitGone(marker string) []string {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := Lingering(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}
