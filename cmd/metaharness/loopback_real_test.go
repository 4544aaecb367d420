package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// childWatch snapshots the vendor child's process tree each time the
// scripted server is asked, which is certainly while the child runs.
type childWatch struct {
	pidReady chan struct{}
	pid      int
	mu       sync.Mutex
	snaps    [][]vendortest.Proc
	errs     []error
}

func newChildWatch() *childWatch { return &childWatch{pidReady: make(chan struct{})} }

func (w *childWatch) started(pid int) {
	w.pid = pid
	close(w.pidReady)
}

func (w *childWatch) hook(scripted.Request) {
	select {
	case <-w.pidReady:
	case <-time.After(time.Minute):
		return
	}
	procs, err := vendortest.Tree(w.pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.errs = append(w.errs, err)
		return
	}
	w.snaps = append(w.snaps, procs)
}

// check: the child's tree was seen at least once, held the placeholder in
// the environment under placeholderVar, and held the token nowhere and the
// placeholder on no command line.
func (w *childWatch) check(t *testing.T, token, placeholder, placeholderVar string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 || len(w.snaps) == 0 {
		t.Fatalf("the child's processes were not seen: %v", w.errs)
	}
	for i, procs := range w.snaps {
		var seen []string
		for _, p := range procs {
			seen = append(seen, fmt.Sprintf("%d %s", p.PID, strings.Join(p.Cmdline[:min(len(p.Cmdline), 2)], " ")))
		}
		t.Logf("child tree at model request %d: %s", i+1, strings.Join(seen, "; "))
		if where := vendortest.Holds(procs, token); len(where) > 0 {
			t.Errorf("the real token is in the child: %v", where)
		}
		var held bool
		for _, where := range vendortest.Holds(procs, placeholder) {
			if !strings.HasSuffix(where, " environ "+placeholderVar) {
				t.Errorf("the placeholder is where it should not be: %s", where)
			}
			held = true
		}
		if !held {
			t.Errorf("no process of the child holds the placeholder in %s", placeholderVar)
		}
	}
}

func randomToken(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// runVendor runs a vendor CLI in dir with env to its end (three minutes at
// most) and returns its stdout and stderr. Stdin stays /dev/null: codex exec
// reads a non-TTY stdin into the prompt.
func runVendor(t *testing.T, w *childWatch, dir string, env []string, bin string, args ...string) ([]byte, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.started(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Errorf("%s: %v\nstdout:\n%s\nstderr:\n%s", bin, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), stderr.Bytes()
}

// checkAfter stops the verb and checks what a run through it must show:
// the upstream saw only the real token, the child held only the
// placeholder (in placeholderVar), nothing was refused, and no output
// carries a secret.
func checkAfter(t *testing.T, v *verbRun, up *scripted.Server, w *childWatch, token, placeholderVar string, childOutput []byte) {
	t.Helper()
	counters, tail := v.stop()
	t.Logf("loopback counters: %+v", counters)
	checkUpstream(t, up, token, v.started.Placeholder)
	w.check(t, token, v.started.Placeholder, placeholderVar)
	if counters.Forwarded == 0 || counters.RefusedAuth != 0 || counters.RefusedEgress != 0 || counters.RefusedRequest != 0 {
		t.Errorf("counters %+v", counters)
	}
	if lines := strings.Split(strings.TrimSpace(tail), "\n"); len(lines) > 1 {
		// --model-api: the view read every answer the vendor was given.
		var w struct {
			Wire *loopback.WireStats `json:"wire"`
		}
		if json.Unmarshal([]byte(lines[len(lines)-2]), &w) != nil || w.Wire == nil || w.Wire.Responses != int(counters.Forwarded) || w.Wire.Overflow != 0 {
			t.Errorf("the wire line does not account for the %d answers forwarded:\n%s", counters.Forwarded, tail)
		}
		t.Logf("wire: %+v", *w.Wire)
	}
	v.assertNoSecrets(token, tail)
	if bytes.Contains(childOutput, []byte(token)) {
		t.Error("the real token reached the child's output")
	}
}

// checkUpstream: every model request reached the scripted server with the
// real token and no header carried the placeholder.
func checkUpstream(t *testing.T, up *scripted.Server, token, placeholder string) {
	t.Helper()
	reqs := up.Requests()
	if len(reqs) == 0 {
		t.Fatal("the scripted server was never asked")
	}
	for _, r := range reqs {
		if r.Credential() != token {
			t.Errorf("request %d %s carried credential %q, want the real token", r.Seq, r.Path, r.Credential())
		}
		if strings.Contains(fmt.Sprint(r.Header), placeholder) {
			t.Errorf("request %d %s carried the placeholder upstream", r.Seq, r.Path)
		}
	}
}

// TestLoopbackRealClaude: real Claude Code 2.1.328, holding only the
// placeholder, completes a scripted turn through `metaharness loopback`, on
// TCP (with the egress gate in its proxy variables; with the wire view,
// whose allowlist its requests all pass) and on a unix socket.
func TestLoopbackRealClaude(t *testing.T) {
	t.Run("tcp", func(t *testing.T) { claudeThroughVerb(t, "--model-api", "anthropic-messages") })
	t.Run("unix socket", func(t *testing.T) { claudeThroughVerb(t, "--unix", t.TempDir()+"/loopback.sock") })
}

func claudeThroughVerb(t *testing.T, args ...string) {
	claude := vendortest.Binary(t, "claude")
	tools := vendortest.Tools(t)
	token := randomToken("sk-ant-test-REAL-")
	w := newChildWatch()
	up := scripted.NewAnthropicServer(scripted.Texts("DONE via loopback"), scripted.OnRequest(w.hook))
	defer up.Close()
	v := startVerb(t, []string{"MH_REAL_TOKEN=" + token}, append([]string{"--upstream", up.URL(), "--token-env", "MH_REAL_TOKEN"}, args...)...)
	home := vendortest.NewHome(t)

	stdout, stderr := runVendor(t, w, home.Work, home.ClaudeEnv(tools, v.started.Env["claude"]), claude,
		"-p", "Say done.", "--output-format", "stream-json", "--verbose",
		"--tools", "", "--strict-mcp-config", "--setting-sources", "", "--no-session-persistence", "--permission-mode", "dontAsk")
	res, err := vendortest.LastClaudeResult(stdout)
	if err != nil || res.IsError || res.Result != "DONE via loopback" {
		t.Fatalf("claude result %+v (%v)\nstdout:\n%s\nstderr:\n%s", res, err, stdout, stderr)
	}
	checkAfter(t, v, up, w, token, "ANTHROPIC_AUTH_TOKEN", append(stdout, stderr...))
}

// TestLoopbackRealCodex: real Codex 0.169.0, whose model provider's key is
// the placeholder, completes a scripted turn through `metaharness loopback`
// with the wire view, whose allowlist its requests all pass.
func TestLoopbackRealCodex(t *testing.T) {
	codex := vendortest.Binary(t, "codex")
	tools := vendortest.Tools(t)
	token := randomToken("sk-proj-test-REAL-")
	w := newChildWatch()
	up := scripted.NewOpenAIServer(scripted.Texts("DONE via loopback"), scripted.OnRequest(w.hook))
	defer up.Close()
	v := startVerb(t, []string{"MH_REAL_TOKEN=" + token}, "--upstream", up.URL(), "--token-env", "MH_REAL_TOKEN", "--upstream-auth", "bearer",
		"--model-api", "openai-responses")
	home := vendortest.NewHome(t)
	mp := v.started.ModelProviders["codex"]
	home.WriteCodexConfig(t, vendortest.CodexConfig(mp.ID, mp.Config))

	stdout, stderr := runVendor(t, w, home.Work, home.CodexEnv(tools, v.started.Env["codex"]), codex,
		"exec", "--json", "--skip-git-repo-check", "--ephemeral", "Say done.")
	out := vendortest.ReadCodexExec(stdout)
	if !out.Completed || out.AgentMessage != "DONE via loopback" {
		t.Fatalf("codex outcome %+v\nstdout:\n%s\nstderr:\n%s", out, stdout, stderr)
	}
	checkAfter(t, v, up, w, token, "METAHARNESS_LOOPBACK_KEY", append(stdout, stderr...))
}
