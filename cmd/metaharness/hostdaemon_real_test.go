package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// daemonSession is one Command run the way Auto Harness's host daemon runs
// it (pty-runner.ts): the argv with "--" and the prompt appended, in the
// worktree, with the daemon's scrubbed environment, under a PTY of 120×40
// (stdin a terminal; stdout and stderr merged into one stream); a cancel
// is SIGTERM to the process group and SIGKILL five seconds later.
type daemonSession struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	read chan struct{} // the output has ended
	done chan struct{} // the process has been waited for

	mu     sync.Mutex
	out    bytes.Buffer
	exitAt time.Time
}

func startDaemonSession(t *testing.T, dir string, env, argv []string, prompt string) *daemonSession {
	t.Helper()
	full := append(append([]string{}, argv...), "--", prompt)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Dir, cmd.Env = dir, env
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	tty := pollable(t, ptmx)
	s := &daemonSession{t: t, cmd: cmd, tty: tty, read: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.read)
		buf := make([]byte, 32<<10)
		for {
			n, err := tty.Read(buf)
			s.mu.Lock()
			s.out.Write(buf[:n])
			s.mu.Unlock()
			if err != nil {
				return // EIO once every holder of the terminal has gone
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		s.mu.Lock()
		s.exitAt = time.Now()
		s.mu.Unlock()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		_ = tty.Close()
	})
	return s
}

// pollable is the terminal's master side in non-blocking mode, so that
// Close wakes the reader and closes the descriptor at once (a blocking
// read would hold it open, and the terminal would never hang up).
func pollable(t *testing.T, ptmx *os.File) *os.File {
	fd, err := syscall.Dup(int(ptmx.Fd()))
	if err == nil {
		err = syscall.SetNonblock(fd, true)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = ptmx.Close()
	return os.NewFile(uintptr(fd), "/dev/ptmx")
}

// wait waits for the session to end (three minutes at most, then it is
// killed as the daemon's deadline would) and returns its exit code and
// its output, with the terminal's \r\n read as \n.
func (s *daemonSession) wait() (int, string) {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		s.t.Errorf("the session was still running after three minutes")
	}
	select {
	case <-s.read:
	case <-time.After(5 * time.Second):
		s.t.Errorf("the terminal's output did not end within 5 s of the process")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := strings.ReplaceAll(s.out.String(), "\r\n", "\n")
	s.t.Logf("exit %d, merged output:\n%s", s.cmd.ProcessState.ExitCode(), out)
	return s.cmd.ProcessState.ExitCode(), out
}

// cancel stops the session as the daemon does on a cancel or a timeout:
// SIGTERM to the process group, SIGKILL to it 5 s later if it is still
// there. It returns how long the process took to exit after the SIGTERM.
func (s *daemonSession) cancel() time.Duration {
	pg := -s.cmd.Process.Pid
	at := time.Now()
	_ = syscall.Kill(pg, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(pg, syscall.SIGKILL)
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitAt.Sub(at)
}

// hangup closes the daemon's side of the terminal, as the daemon going
// away does: the kernel sends SIGHUP to the session's leader. It returns
// how long the process took to exit after it.
func (s *daemonSession) hangup() time.Duration {
	at := time.Now()
	_ = s.tty.Close()
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exitAt.Sub(at)
}

// leftOver is what of the session still runs after it ended, in any
// process group: the daemon's SIGKILL reaches only metaharness's own.
func (s *daemonSession) leftOver() []vendortest.Proc {
	var left []vendortest.Proc
	for range 20 { // a killed process takes a moment to be reaped
		if left = vendortest.InSession(s.cmd.Process.Pid); len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// fleetHost is a host as Auto Harness leaves it for a session: the
// daemon's HOME (whose ~/.local/bin holds the pinned vendor CLI), a
// worktree, a TMPDIR, the daemon's environment allowlist (child-env.ts),
// the token as the account's execution profile sets it, and the session
// outputs the daemon names per attempt, and nothing else.
type fleetHost struct {
	*operator
	tmp     string
	art     string // $HARNESS_ARTIFACTS_DIR
	summary string // $HARNESS_OUTPUT_FILE
	env     []string
}

func newFleetHost(t *testing.T, kind string) *fleetHost {
	token := randomToken("sk-test-REAL-")
	o, tokenVar := newOperator(t, token), "ANTHROPIC_API_KEY"
	if kind == "codex" {
		o, tokenVar = newCodexOperator(t, token), "OPENAI_API_KEY"
	}
	outputs := t.TempDir()
	h := &fleetHost{operator: o, tmp: t.TempDir(), art: filepath.Join(outputs, "artifacts"), summary: filepath.Join(outputs, "output.json")}
	if err := os.Mkdir(h.art, 0o700); err != nil {
		t.Fatal(err)
	}
	h.env = []string{"HOME=" + h.home, "LANG=C.UTF-8", "LOGNAME=harness", "PATH=" + os.Getenv("PATH"),
		"SHELL=/bin/sh", "TERM=xterm-256color", "TMPDIR=" + h.tmp, "USER=harness",
		tokenVar + "=" + token, "HARNESS_OUTPUT_FILE=" + h.summary, "HARNESS_ARTIFACTS_DIR=" + h.art}
	return h
}

// autoHarnessCommand is a Command as Auto Harness registers it.
type autoHarnessCommand struct {
	Name                  string   `json:"name"`
	ProviderID            *string  `json:"providerId"`
	Argv                  []string `json:"argv"`
	AppendPrompt          bool     `json:"appendPrompt"`
	AppendPromptSeparator bool     `json:"appendPromptSeparator"`
}

// command is the kind's example Command (examples/auto-harness) on this
// host: its argv as written, but for --model-endpoint, which names the
// scripted model here instead of the vendor's API.
func (h *fleetHost) command(upstream string) []string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "auto-harness", "mh-"+h.kind+".command.json"))
	if err != nil {
		h.t.Fatal(err)
	}
	var c autoHarnessCommand
	if err := json.Unmarshal(b, &c); err != nil {
		h.t.Fatal(err)
	}
	if !c.AppendPrompt || !c.AppendPromptSeparator || c.ProviderID == nil || *c.ProviderID != h.kind || len(c.Argv) == 0 || len(c.Argv) > 64 {
		h.t.Fatalf("the example Command %+v is not a provider-owned Command that takes the prompt after --", c)
	}
	argv := slices.Clone(c.Argv)
	i := slices.Index(argv, "--model-endpoint")
	if i < 0 || i+1 >= len(argv) {
		h.t.Fatalf("the example Command names no --model-endpoint: %v", argv)
	}
	argv[i+1] = upstream
	return argv
}

// events reads the session's event stream from the artifacts directory.
func (h *fleetHost) events() []*record.EventLine {
	h.t.Helper()
	f, err := os.Open(filepath.Join(h.art, "metaharness-events.jsonl"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer f.Close()
	var out []*record.EventLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		ev, err := record.ParseEvent(sc.Bytes())
		if err != nil {
			h.t.Fatalf("metaharness-events.jsonl: %v", err)
		}
		out = append(out, ev)
	}
	return out
}

// checkClosed: the stream ends with stream.closed and no scratch tree is
// left in the host's TMPDIR.
func (h *fleetHost) checkClosed() {
	h.t.Helper()
	lastIsStreamClosed(h.t, &runResult{events: h.events()})
	left, _ := filepath.Glob(filepath.Join(h.tmp, "mh-*"))
	if len(left) > 0 {
		h.t.Errorf("scratch trees left in TMPDIR: %v", left)
	}
}

// attestation reads the session's attestation document from the artifacts
// directory.
func (h *fleetHost) attestation() map[string]any {
	h.t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(h.read(filepath.Join(h.art, "metaharness-attestation.json")), &doc); err != nil {
		h.t.Fatal(err)
	}
	return doc
}

// outcome reads the run summary and checks that it names exit code with
// its outcome, and that the attestation it names is the one written, by
// its digest.
func (h *fleetHost) outcome(code int, outcome string) attest.Summary {
	h.t.Helper()
	var sum attest.Summary
	if err := json.Unmarshal(h.read(h.summary), &sum); err != nil {
		h.t.Fatal(err)
	}
	if sum.ExitCode != code || sum.Outcome != outcome || sum.Kind != h.kind {
		h.t.Errorf("summary exit_code %d outcome %q kind %q, want %d %q %q", sum.ExitCode, sum.Outcome, sum.Kind, code, outcome, h.kind)
	}
	var attested bool
	for _, f := range sum.Records {
		if f.What == "attestation" {
			d := sha256.Sum256(h.read(f.Path))
			attested = f.Path == filepath.Join(h.art, "metaharness-attestation.json") && f.SHA256 == hex.EncodeToString(d[:])
		}
	}
	if !attested {
		h.t.Errorf("the summary does not name the attestation by its digest: %+v", sum.Records)
	}
	return sum
}

func (h *fleetHost) read(path string) []byte {
	h.t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// noTerminal checks that no process of the session but metaharness holds
// the terminal: the vendor and what it starts get pipes.
func noTerminal(t *testing.T, sid int) {
	for _, p := range vendortest.InSession(sid) {
		if p.PID == sid {
			continue
		}
		for fd := range 3 {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", p.PID, fd)); err == nil && strings.HasPrefix(target, "/dev/pts/") {
				t.Errorf("process %d (%s) holds the terminal as fd %d", p.PID, strings.Join(p.Cmdline[:min(2, len(p.Cmdline))], " "), fd)
			}
		}
	}
}

// modelFor is a scripted model server of the API kind's vendor speaks.
func modelFor(kind string, s scripted.Script, opts ...scripted.Option) *scripted.Server {
	if kind == "codex" {
		return scripted.NewOpenAIServer(s, opts...)
	}
	return scripted.NewAnthropicServer(s, opts...)
}

// vendorLines returns the merged output's last line, which is
// metaharness's; only codex may have written lines before it, its own
// stderr (where the host has no bubblewrap on PATH, codex says so), which
// metaharness passes on without their colour.
func vendorLines(t *testing.T, kind, out string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 1 {
		if kind != "codex" {
			t.Errorf("the merged output holds more than metaharness's one line: %q", out)
		}
		t.Logf("the vendor's stderr: %q", lines[:len(lines)-1])
	}
	return lines[len(lines)-1]
}

// TestHostDaemonCommand: the example Command of each kind under the
// daemon's PTY, with the real vendor CLI against the scripted model: the
// merged output is the final answer and nothing else (no quota phrase, no
// colour, no prompt: the run finishes without a byte written to its
// terminal), the vendor never holds the terminal, and the session outputs
// hold the stream, the attestation and a summary naming both.
func TestHostDaemonCommand(t *testing.T) {
	for _, kind := range []string{"claude", "codex"} {
		t.Run(kind, func(t *testing.T) {
			h := newFleetHost(t, kind)
			marker := randomToken("PTY-OK-")
			var sid int
			var looked sync.Once
			sidKnown := make(chan struct{})
			up := modelFor(kind, scripted.Texts(marker), scripted.OnRequest(func(scripted.Request) {
				<-sidKnown
				looked.Do(func() { noTerminal(t, sid) })
			}))
			defer up.Close()
			s := startDaemonSession(t, h.tree, h.env, h.command(up.URL()), "Reply with exactly: "+marker)
			sid = s.cmd.Process.Pid
			close(sidKnown)
			code, out := s.wait()
			if code != 0 {
				t.Errorf("exit %d, want 0", code)
			}
			if last := vendorLines(t, kind, out); last != marker {
				t.Errorf("the merged output is %q, want the final answer %q as its last line", out, marker)
			}
			noQuotaPhrase(t, "a normal session's output", out)
			if strings.Contains(out, "\x1b") {
				t.Error("an escape sequence (colour, cursor) in the output")
			}
			if len(up.Requests()) == 0 {
				t.Error("the scripted model was never asked")
			}
			h.checkClosed()
			if doc := h.attestation(); doc["exit_code"] != float64(0) {
				t.Errorf("attestation exit_code %v", doc["exit_code"])
			}
			if sum := h.outcome(0, "ok"); sum.FinalAnswer == nil || *sum.FinalAnswer != marker || sum.Retry != "none" {
				t.Errorf("summary final_answer %v retry %q", sum.FinalAnswer, sum.Retry)
			}
		})
	}
}

// heldUpstream is a scripted model whose first answer waits until the test
// ends: a session busy with its model when it is stopped.
func heldUpstream(t *testing.T, kind string) (*scripted.Server, <-chan struct{}) {
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	up := modelFor(kind, scripted.Texts("never seen"), scripted.OnRequest(func(scripted.Request) {
		once.Do(func() { close(asked) })
		<-release
	}))
	t.Cleanup(func() { close(release); up.Close() })
	return up, asked
}

// TestHostDaemonCancel: a session stopped by the daemon, by a cancel
// (SIGTERM to the process group, SIGKILL 5 s later) or by the terminal
// closing (SIGHUP), exits on the signal within 4 s, before any SIGKILL;
// its events file ends with stream.closed, nothing of the session is left
// running in any process group, its scratch tree is gone, and its summary
// says exit 3, worth another attempt.
func TestHostDaemonCancel(t *testing.T) {
	for _, tc := range []struct{ kind, how string }{{"claude", "SIGTERM"}, {"claude", "SIGHUP"}, {"codex", "SIGTERM"}, {"codex", "SIGHUP"}} {
		how := tc.how
		t.Run(tc.kind+"/"+how, func(t *testing.T) {
			h := newFleetHost(t, tc.kind)
			up, asked := heldUpstream(t, tc.kind)
			s := startDaemonSession(t, h.tree, h.env, h.command(up.URL()), "wait for the model")
			select {
			case <-asked:
			case <-time.After(time.Minute):
				t.Fatal("the vendor never asked the model")
			}
			var took time.Duration
			if how == "SIGTERM" {
				took = s.cancel()
			} else {
				took = s.hangup()
			}
			s.wait()
			if took > 4*time.Second {
				t.Errorf("metaharness took %v to exit after %s, want within 4 s", took, how)
			}
			if st := s.cmd.ProcessState; !st.Exited() {
				t.Errorf("metaharness did not exit on %s by itself: %v", how, st)
			}
			if left := s.leftOver(); len(left) > 0 {
				t.Errorf("processes of the session outlived it: %+v", left)
			}
			h.checkClosed()
			if sum := h.outcome(3, "unknown"); sum.Retry != "yes" {
				t.Errorf("summary retry %q, want yes", sum.Retry)
			}
		})
	}
}

// TestHostDaemonQuota: the upstream answers every request with a quota
// error (Anthropic's 429 rate_limit_error; OpenAI's 429
// insufficient_quota). The session ends within 10 s of the first such
// answer instead of sitting through the vendor's retries; its output is
// one line that carries the vendor's phrase (so the daemon's usage-limit
// rule fires), it exits 4, and the stream, the attestation and the
// summary (retry after a cooldown) name it.
func TestHostDaemonQuota(t *testing.T) {
	for _, tc := range []struct{ kind, typ, path string }{
		{"claude", "rate_limit_error", "/v1/messages"},
		{"codex", "insufficient_quota", "/v1/responses"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := newFleetHost(t, tc.kind)
			var first time.Time
			var mu sync.Mutex
			up := modelFor(tc.kind, scripted.Script{FinalError: &scripted.ErrorTurn{Status: 429, Type: tc.typ, Message: "You exceeded your current quota"}},
				scripted.OnRequest(func(scripted.Request) {
					mu.Lock()
					if first.IsZero() {
						first = time.Now()
					}
					mu.Unlock()
				}))
			defer up.Close()
			s := startDaemonSession(t, h.tree, h.env, h.command(up.URL()), "do some work")
			code, out := s.wait()
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() {
				t.Fatal("the scripted model was never asked")
			}
			if took := s.exitAt.Sub(first); took > 10*time.Second {
				t.Errorf("the session ended %v after the first 429, want within 10 s", took)
			}
			if code != 4 {
				t.Errorf("exit %d, want 4", code)
			}
			line := vendorLines(t, tc.kind, out)
			want := "metaharness: usage-limit: the model API answered POST " + tc.path + " with 429 Too Many Requests (" + tc.typ + ");"
			if !strings.HasPrefix(line, want) || strings.Count(out, "usage-limit") != 1 {
				t.Errorf("the output does not end with the one usage-limit line %q...: %q", want, out)
			}
			if !quotaPhrase.MatchString(out) {
				t.Error("the daemon's usage-limit rule would not fire on the output")
			}
			if n := len(up.Requests()); n > 2 {
				t.Errorf("the upstream was asked %d times: the vendor's retries were sat through", n)
			}
			h.checkClosed()
			doc := h.attestation()
			q, _ := doc["upstream_quota"].(map[string]any)
			if doc["exit_code"] != float64(4) || q == nil || q["upstream_status"] != float64(429) {
				t.Errorf("attestation exit_code %v, upstream_quota %v", doc["exit_code"], doc["upstream_quota"])
			}
			var recorded bool
			for _, ev := range h.events() {
				if w, ok := ev.Event.(*record.Warning); ok && w.Code == "LOOPBACK_UPSTREAM_QUOTA" {
					recorded = true
				}
			}
			if !recorded {
				t.Error("no LOOPBACK_UPSTREAM_QUOTA warning in the stream")
			}
			sum := h.outcome(4, "quota")
			if sum.Retry != "after_cooldown" || sum.UpstreamQuota == nil || sum.UpstreamQuota.Type != tc.typ || sum.Reason == nil || *sum.Reason != line {
				t.Errorf("summary retry %q upstream_quota %+v reason %v", sum.Retry, sum.UpstreamQuota, sum.Reason)
			}
		})
	}
}
