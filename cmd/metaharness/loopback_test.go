package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/launcher/codex"
	"github.com/metaharness/metaharness/loopback"
)

// verbRun is `metaharness loopback` running as its own process (the test
// binary, which testscript.Main put on PATH as metaharness).
type verbRun struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdout  *bufio.Reader
	stderr  *lockedBuffer
	started loopbackStarted
	line    string // the start line as printed
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startVerb runs metaharness loopback with args and env (debug logging on,
// so that every log line is there to be searched) and reads its start line.
func startVerb(t *testing.T, env []string, args ...string) *verbRun {
	t.Helper()
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatalf("metaharness is not on PATH (testscript.Main puts it there): %v", err)
	}
	v := &verbRun{t: t, stderr: &lockedBuffer{}}
	v.cmd = exec.Command(bin, append([]string{"loopback"}, args...)...)
	v.cmd.Env = append([]string{"METAHARNESS_LOG=debug"}, env...)
	v.cmd.Stderr = v.stderr
	out, err := v.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if v.cmd.ProcessState == nil {
			_ = v.cmd.Process.Kill()
			_ = v.cmd.Wait()
		}
	})
	v.stdout = bufio.NewReader(out)
	line, err := v.stdout.ReadString('\n')
	if err != nil {
		_ = v.cmd.Wait()
		t.Fatalf("no start line (%v); stderr:\n%s", err, v.stderr)
	}
	v.line = line
	if err := json.Unmarshal([]byte(line), &v.started); err != nil {
		t.Fatalf("start line is not JSON: %v\n%s", err, line)
	}
	return v
}

// stop sends SIGTERM and returns the counters, from the last line, and
// everything printed after the start line.
func (v *verbRun) stop() (loopback.Counters, string) {
	v.t.Helper()
	if err := v.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		v.t.Fatal(err)
	}
	rest, _ := io.ReadAll(v.stdout)
	done := make(chan error, 1)
	go func() { done <- v.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			v.t.Fatalf("metaharness loopback after SIGTERM: %v; stderr:\n%s", err, v.stderr)
		}
	case <-time.After(20 * time.Second):
		v.t.Fatal("metaharness loopback did not stop on SIGTERM")
	}
	var c struct {
		Counters *loopback.Counters `json:"counters"`
	}
	lines := strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &c); err != nil || c.Counters == nil {
		v.t.Fatalf("no counters line after SIGTERM: %v\n%s", err, rest)
	}
	return *c.Counters, string(rest)
}

// assertNoSecrets fails when the token or the placeholder shows anywhere
// but the start line's placeholder and child environments.
func (v *verbRun) assertNoSecrets(token, tail string) {
	v.t.Helper()
	for name, text := range map[string]string{"stderr": v.stderr.String(), "stdout after the start line": tail} {
		for secret, what := range map[string]string{token: "the real token", v.started.Placeholder: "the placeholder"} {
			if strings.Contains(text, secret) {
				v.t.Errorf("%s holds %s:\n%s", name, what, text)
			}
		}
	}
	if strings.Contains(v.line, token) {
		v.t.Errorf("the start line holds the real token:\n%s", v.line)
	}
}

// TestLoopbackVerbServesUntilSIGTERM: the verb prints its start line,
// forwards with the real token, refuses without the placeholder, stops on
// SIGTERM with exit 0 and prints its counters; no secret on stderr.
func TestLoopbackVerbServesUntilSIGTERM(t *testing.T) {
	const token = "sk-ant-test-REAL-verb-0123456789"
	up := scripted.NewAnthropicServer(scripted.Texts("via the verb"))
	defer up.Close()
	v := startVerb(t, []string{"MH_TOKEN=" + token}, "--upstream", up.URL(), "--token-env", "MH_TOKEN", "--allow-egress", "127.0.0.1:1")
	s := v.started
	if !strings.HasPrefix(s.BaseURL, "http://127.0.0.1:") || !strings.HasPrefix(s.Placeholder, "mh-run-standalone-") || s.Socket != nil ||
		s.GateURL == nil || !strings.HasPrefix(*s.GateURL, "http://127.0.0.1:") || *s.GateURL == s.BaseURL {
		t.Fatalf("start line %s", v.line)
	}
	if s.Env["claude"]["ANTHROPIC_BASE_URL"] != s.BaseURL || s.Env["claude"]["ANTHROPIC_AUTH_TOKEN"] != s.Placeholder ||
		s.Env["codex"][codex.KeyEnv] != s.Placeholder || s.Env["codex"]["HTTPS_PROXY"] != *s.GateURL {
		t.Fatalf("child environments %v", s.Env)
	}
	if mp, ok := s.ModelProviders["codex"]; !ok || mp.ID != codex.ProviderID || !strings.Contains(mp.Config, `base_url = "`+s.BaseURL+`/v1"`) {
		t.Fatalf("codex provider: %s", v.line)
	}

	if got := request(t, "POST", s.BaseURL+"/v1/messages", `{"stream":true}`, map[string]string{"Authorization": "Bearer " + s.Placeholder}); got != 200 {
		t.Fatalf("with the placeholder: %d", got)
	}
	if got := request(t, "POST", s.BaseURL+"/v1/messages", `{"stream":true}`, nil); got != 401 {
		t.Fatalf("without the placeholder: %d", got)
	}
	counters, tail := v.stop()
	if counters.Requests != 2 || counters.Forwarded != 1 || counters.RefusedAuth != 1 {
		t.Fatalf("counters %+v", counters)
	}
	if got := up.Requests(); len(got) != 1 || got[0].Credential() != token {
		t.Fatalf("the upstream saw %d requests, credential %q", len(got), got[0].Credential())
	}
	if !strings.Contains(v.stderr.String(), "loopback request") {
		t.Fatalf("debug logging was not on, so the secret scan proves little:\n%s", v.stderr)
	}
	v.assertNoSecrets(token, tail)
	for what, text := range map[string]string{"the start line": v.line, "the counters line": tail, "the proxy's debug log": v.stderr.String()} {
		noQuotaPhrase(t, what, text)
	}
}

// TestLoopbackVerbReportsQuota: an upstream's quota answer is a JSON line
// of its own as it happens, the record with its quota, before the
// counters, which count it.
func TestLoopbackVerbReportsQuota(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Script{FinalError: &scripted.ErrorTurn{Status: 429, Message: "slow down", RetryAfter: "30"}})
	defer up.Close()
	v := startVerb(t, []string{"MH_TOKEN=sk-test"}, "--upstream", up.URL(), "--token-env", "MH_TOKEN")
	request(t, "POST", v.started.BaseURL+"/v1/messages", `{}`, map[string]string{"x-api-key": v.started.Placeholder})
	line, err := v.stdout.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var q struct {
		Record *loopback.Record `json:"upstream_quota"`
	}
	if err := json.Unmarshal([]byte(line), &q); err != nil || q.Record == nil || q.Record.Quota == nil {
		t.Fatalf("the line after a 429 is not its quota record (%v): %s", err, line)
	}
	want := loopback.Quota{Status: 429, Type: "rate_limit_error", RetryAfter: "30"}
	if *q.Record.Quota != want || q.Record.Path != "/v1/messages" {
		t.Errorf("quota record %+v, quota %+v, want %+v", q.Record, q.Record.Quota, want)
	}
	if counters, _ := v.stop(); counters.UpstreamQuota != 1 {
		t.Errorf("counters %+v, want upstream_quota 1", counters)
	}
}

// TestLoopbackVerbUnixSocket: with --unix the start line names the socket,
// gives claude ANTHROPIC_UNIX_SOCKET, and offers codex nothing.
func TestLoopbackVerbUnixSocket(t *testing.T) {
	sock := t.TempDir() + "/proxy.sock"
	v := startVerb(t, []string{"MH_TOKEN=sk-test"}, "--upstream", "https://api.anthropic.com", "--token-env", "MH_TOKEN", "--unix", sock)
	s := v.started
	if s.Socket == nil || *s.Socket != sock || s.Env["claude"]["ANTHROPIC_UNIX_SOCKET"] != sock || s.Env["codex"] != nil || len(s.ModelProviders) != 0 {
		t.Fatalf("start line %s", v.line)
	}
	v.stop()
}

// TestLoopbackVerbModelAPI: with --model-api the verb forwards only the
// API's own request (anything else is answered 403 and counted), reads
// the model's answers, and prints the wire view's size before the
// counters.
func TestLoopbackVerbModelAPI(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: []byte(`{"path":"a"}`)}},
	}})
	defer up.Close()
	v := startVerb(t, []string{"MH_TOKEN=sk-test"}, "--upstream", up.URL(), "--token-env", "MH_TOKEN", "--model-api", "anthropic-messages")
	do := func(method, path string) int {
		return request(t, method, v.started.BaseURL+path, `{"stream":true}`, map[string]string{"x-api-key": v.started.Placeholder})
	}
	if got := do("POST", "/v1/messages?beta=true"); got != 200 {
		t.Fatalf("the model request: %d", got)
	}
	if got := do("GET", "/v1/models"); got != 403 {
		t.Fatalf("another path: %d", got)
	}
	counters, tail := v.stop()
	if counters.Forwarded != 1 || counters.RefusedRequest != 1 || len(up.Requests()) != 1 {
		t.Fatalf("counters %+v, %d upstream requests", counters, len(up.Requests()))
	}
	lines := strings.Split(strings.TrimSpace(tail), "\n")
	var w struct {
		Wire *loopback.WireStats `json:"wire"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &w) != nil || w.Wire == nil ||
		w.Wire.API != loopback.AnthropicMessages || w.Wire.Responses != 1 || w.Wire.ToolCalls != 1 || w.Wire.Overflow != 0 {
		t.Fatalf("no wire line before the counters:\n%s", tail)
	}
}

// TestLoopbackVerbPassThrough: with --child-key pass-through and no token
// source, the child's own key goes upstream and the placeholder, in
// X-Metaharness-Run, proves the child; without it nothing is forwarded.
func TestLoopbackVerbPassThrough(t *testing.T) {
	const own = "sk-own-key-of-the-embedder"
	up := scripted.NewAnthropicServer(scripted.Texts("yours"))
	defer up.Close()
	v := startVerb(t, nil, "--upstream", up.URL(), "--child-key", "pass-through")
	do := func(run string) int {
		hdr := map[string]string{"x-api-key": own}
		if run != "" {
			hdr[loopback.RunHeader] = run
		}
		return request(t, "POST", v.started.BaseURL+"/v1/messages", `{}`, hdr)
	}
	if got := do(v.started.Placeholder); got != 200 {
		t.Fatalf("with the run header: %d", got)
	}
	if got := do(""); got != 401 {
		t.Fatalf("without it: %d", got)
	}
	counters, tail := v.stop()
	if reqs := up.Requests(); counters.Forwarded != 1 || counters.RefusedAuth != 1 || len(reqs) != 1 ||
		reqs[0].Credential() != own || reqs[0].Header.Get(loopback.RunHeader) != "" {
		t.Fatalf("counters %+v, upstream %+v", counters, reqs)
	}
	v.assertNoSecrets(own, tail)
}

// request sends one request with the headers given, reads the answer to its
// end and returns its status.
func request(t *testing.T, method, url, body string, hdr map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
