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
// it (pty-runner.ts): the session's argv (fleetHost.command), in the
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

func startDaemonSession(t *testing.T, dir string, env, argv []string) *daemonSession {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
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

// The Auto Harness host daemon these tests follow, and the rules of it
// they keep (services/host-daemon/src at commit 178686c of
// github.com/jonathanong/auto-harness):
//
//   - the child's environment is child-env.ts's: HOME, LANG, LOGNAME,
//     PATH, SHELL, TERM, TMPDIR, TMP, TEMP, USER and LC_*, plus the names
//     HARNESS_CHILD_ENV_ALLOWLIST lists, and never a HARNESS_* variable;
//   - the argv is the Command's, then "--" and the prompt when
//     appendPromptSeparator is set (by default only on a Command with a
//     provider), else the prompt alone;
//   - a session is usage-limited when its merged output matches one of
//     usage-limit.ts's nine phrases, whatever the exit code; else exit 0 is
//     completed and anything else failed (session-run-claimed.ts).
const daemonCommit = "178686c"

// childEnvBaseline are the variables the daemon passes on without being
// asked (child-env.ts); LC_* too.
var childEnvBaseline = []string{"HOME", "LANG", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TMP", "TEMP", "USER"}

// daemonChildEnv is the environment the daemon gives a Command, made from
// its own environment the way createChildEnv makes it.
func daemonChildEnv(source map[string]string) []string {
	allowed := map[string]bool{}
	for _, k := range childEnvBaseline {
		allowed[k] = true
	}
	for _, k := range strings.Split(source["HARNESS_CHILD_ENV_ALLOWLIST"], ",") {
		if k = strings.TrimSpace(k); k != "" {
			allowed[k] = true
		}
	}
	var env []string
	for k, v := range source {
		if !strings.HasPrefix(strings.ToUpper(k), "HARNESS_") && (allowed[k] || strings.HasPrefix(k, "LC_")) {
			env = append(env, k+"="+v)
		}
	}
	slices.Sort(env)
	return env
}

// daemonStatus is how the daemon files a session that exited with code
// and printed out: usage_limit (requeued, the account cooled down), or
// completed, or failed.
func daemonStatus(code int, out string) string {
	switch {
	case quotaPhrase.MatchString(out):
		return "usage_limit"
	case code == 0:
		return "completed"
	}
	return "failed"
}

// fleetHost is a host as Auto Harness leaves it for a session: the
// daemon's HOME (whose ~/.local/bin holds the pinned vendor CLI), the
// repository and the session's worktree, made by git worktree add as the
// daemon makes them, beside them the example's metaharness directory
// (../metaharness from the worktree: the shipped frame and the records
// directory), a TMPDIR, and the daemon's own environment, which the
// child's is made from.
type fleetHost struct {
	*operator
	root    string
	repo    string
	wt      string
	records string
	tmp     string
	source  map[string]string // the daemon's own environment
}

func newFleetHost(t *testing.T, kind string) *fleetHost {
	token := randomToken("sk-test-REAL-")
	o, tokenVar := newOperator(t, token), "ANTHROPIC_API_KEY"
	if kind == "codex" {
		o, tokenVar = newCodexOperator(t, token), "OPENAI_API_KEY"
	}
	root := filepath.Dir(o.tree)
	h := &fleetHost{operator: o, root: root, repo: o.tree, wt: filepath.Join(root, "wt-1"),
		records: filepath.Join(root, "metaharness", "records"), tmp: t.TempDir()}
	o.write("README", "hello\n")
	o.git("init", "-q")
	o.git("-c", "user.name=op", "-c", "user.email=op@example.invalid", "add", "README")
	o.git("-c", "user.name=op", "-c", "user.email=op@example.invalid", "commit", "-qm", "base")
	o.git("worktree", "add", "-q", "--detach", h.wt)
	if err := os.MkdirAll(h.records, 0o700); err != nil {
		t.Fatal(err)
	}
	frame, err := os.ReadFile(filepath.Join(examplesDir, "auto-harness", "worktree.frame.json"))
	if err == nil {
		err = os.WriteFile(filepath.Join(root, "metaharness", "worktree.frame.json"), frame, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	// A HARNESS_* variable of the daemon's own never reaches the child.
	h.source = map[string]string{"HOME": h.home, "LANG": "C.UTF-8", "LOGNAME": "harness", "PATH": os.Getenv("PATH"),
		"SHELL": "/bin/sh", "TERM": "xterm-256color", "TMPDIR": h.tmp, "USER": "harness",
		tokenVar: token, "HARNESS_CHILD_ENV_ALLOWLIST": tokenVar, "HARNESS_API_KEY": "hns_not-for-children",
		"HARNESS_OUTPUT_FILE": filepath.Join(root, "never.json"), "HARNESS_ARTIFACTS_DIR": filepath.Join(root, "never")}
	return h
}

// autoHarnessCommand is a Command as Auto Harness registers it.
type autoHarnessCommand struct {
	Name                  string   `json:"name"`
	ProviderID            *string  `json:"providerId"`
	Argv                  []string `json:"argv"`
	AppendPrompt          *bool    `json:"appendPrompt"`
	AppendPromptSeparator *bool    `json:"appendPromptSeparator"`
}

// command is the kind's example Command (examples/auto-harness) resolved
// as the daemon resolves it for a session with prompt: its argv as
// written but for argv[0] (this host's metaharness) and --model-endpoint
// (the scripted model here instead of the vendor's API), then "--" when
// the Command asks for the separator, then the prompt.
func (h *fleetHost) command(upstream, prompt string) []string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(examplesDir, "auto-harness", "mh-"+h.kind+".command.json"))
	if err != nil {
		h.t.Fatal(err)
	}
	var c autoHarnessCommand
	if err := json.Unmarshal(b, &c); err != nil {
		h.t.Fatal(err)
	}
	if c.ProviderID == nil || *c.ProviderID == h.kind || len(c.Argv) == 0 || len(c.Argv) > 64 {
		h.t.Fatalf("the example Command %+v names no placeholder provider id (the daemon generates them: a literal %q is refused)", c, h.kind)
	}
	argv := slices.Clone(c.Argv)
	self, err := exec.LookPath("metaharness")
	if err != nil {
		h.t.Fatal(err)
	}
	argv[0] = self
	i := slices.Index(argv, "--model-endpoint")
	if i < 0 || i+1 >= len(argv) {
		h.t.Fatalf("the example Command names no --model-endpoint: %v", argv)
	}
	argv[i+1] = upstream
	appendPrompt := c.AppendPrompt == nil || *c.AppendPrompt
	separator := appendPrompt && c.ProviderID != nil
	if c.AppendPromptSeparator != nil {
		separator = *c.AppendPromptSeparator
	}
	switch {
	case !appendPrompt:
		h.t.Fatal("the example Command does not take the prompt")
	case separator:
		argv = append(argv, "--", prompt)
	default:
		argv = append(argv, prompt)
	}
	return argv
}

// start runs argv as the daemon's PTY runner does, in the worktree, with
// the child environment the daemon makes of its own.
func (h *fleetHost) start(argv []string) *daemonSession {
	return startDaemonSession(h.t, h.wt, daemonChildEnv(h.source), argv)
}

// run is one session of the example Command, to its end.
func (h *fleetHost) run(upstream, prompt string) (int, string) {
	return h.start(h.command(upstream, prompt)).wait()
}

// runs are the run directories the sessions left under the records
// directory, in the order they were made.
func (h *fleetHost) runs() []string {
	h.t.Helper()
	entries, err := os.ReadDir(h.records)
	if err != nil {
		h.t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		dirs = append(dirs, filepath.Join(h.records, e.Name()))
	}
	slices.SortFunc(dirs, func(a, b string) int {
		fa, _ := os.Stat(a)
		fb, _ := os.Stat(b)
		return fa.ModTime().Compare(fb.ModTime())
	})
	return dirs
}

// last is the directory of the session that ran last.
func (h *fleetHost) last() string {
	h.t.Helper()
	runs := h.runs()
	if len(runs) == 0 {
		h.t.Fatalf("the records directory %s holds no run", h.records)
	}
	return runs[len(runs)-1]
}

// events reads a run's event stream.
func (h *fleetHost) events(dir string) []*record.EventLine {
	h.t.Helper()
	f, err := os.Open(filepath.Join(dir, "metaharness-events.jsonl"))
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

// checkClosed: a run's stream ends with stream.closed and no dead run's
// scratch tree is left in the runtime directory.
func (h *fleetHost) checkClosed(dir string) {
	h.t.Helper()
	lastIsStreamClosed(h.t, &runResult{events: h.events(dir)})
	if left := deadScratchTrees(h.t); len(left) > 0 {
		h.t.Errorf("scratch trees of ended runs left in the runtime directory: %v", left)
	}
}

// deadScratchTrees are the trees in the default runtime directory
// (/tmp/metaharness-<uid>) that are marked as metaharness's and whose lock
// no live run holds: what a run that ended left behind. Other tests' live
// runs hold theirs, so they do not count.
func deadScratchTrees(t *testing.T) []string {
	t.Helper()
	trees, _ := filepath.Glob(filepath.Join("/tmp", fmt.Sprintf("metaharness-%d", os.Geteuid()), "mh-*"))
	var dead []string
	for _, tree := range trees {
		if _, err := os.Stat(filepath.Join(tree, ".metaharness-scratch")); err != nil {
			continue // not marked yet, or being removed
		}
		f, err := os.Open(filepath.Join(tree, ".lock"))
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			dead = append(dead, tree)
		}
		f.Close()
	}
	return dead
}

// attestation reads a run's attestation document.
func (h *fleetHost) attestation(dir string) map[string]any {
	h.t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(h.read(filepath.Join(dir, "metaharness-attestation.json")), &doc); err != nil {
		h.t.Fatal(err)
	}
	return doc
}

// outcome reads a run's summary and checks that it names its run, the
// exit code with its outcome, and the attestation it wrote, by digest.
func (h *fleetHost) outcome(dir string, code int, outcome string) attest.Summary {
	h.t.Helper()
	return checkSummary(h.t, filepath.Join(dir, "metaharness-summary.json"), filepath.Join(dir, "metaharness-attestation.json"), h.kind, filepath.Base(dir), code, outcome)
}

// checkSummary reads the run summary at path and checks its kind, run id
// (when given), exit code and outcome, and that it names the attestation
// at att by its digest.
func checkSummary(t *testing.T, path, att, kind, run string, code int, outcome string) attest.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum attest.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.ExitCode != code || sum.Outcome != outcome || sum.Kind != kind || run != "" && sum.Run != run {
		t.Errorf("summary run %q exit_code %d outcome %q kind %q, want %q %d %q %q", sum.Run, sum.ExitCode, sum.Outcome, sum.Kind, run, code, outcome, kind)
	}
	var attested bool
	for _, f := range sum.Records {
		if f.What == "attestation" {
			b, err := os.ReadFile(f.Path)
			d := sha256.Sum256(b)
			attested = err == nil && f.Path == att && f.SHA256 == hex.EncodeToString(d[:])
		}
	}
	if !attested {
		t.Errorf("the summary does not name the attestation %s by its digest: %+v", att, sum.Records)
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

// TestHostDaemonCommand: the example Command of each kind, verbatim but
// for argv[0] and the endpoint, under the daemon's rules (its child
// environment, with no HARNESS_* variable; "--" and the prompt appended)
// and its PTY, with the real vendor CLI against the scripted model, twice
// in the same worktree as a daemon runs sessions: each session completes
// (the merged output is the final answer and nothing else: no quota
// phrase, no colour, no prompt), the vendor never holds the terminal, and
// each leaves a run directory of its own under the records directory with
// its stream, attestation and summary; nothing goes where the daemon's own
// HARNESS_* variables point, which the child never sees.
func TestHostDaemonCommand(t *testing.T) {
	for _, kind := range []string{"claude", "codex"} {
		t.Run(kind, func(t *testing.T) {
			h := newFleetHost(t, kind)
			for i := range 2 {
				marker := randomToken("PTY-OK-")
				var sid int
				var looked sync.Once
				sidKnown := make(chan struct{})
				up := modelFor(kind, scripted.Texts(marker), scripted.OnRequest(func(scripted.Request) {
					<-sidKnown
					looked.Do(func() { noTerminal(t, sid) })
				}))
				s := h.start(h.command(up.URL(), "Reply with exactly: "+marker))
				sid = s.cmd.Process.Pid
				close(sidKnown)
				code, out := s.wait()
				up.Close()
				if st := daemonStatus(code, out); st != "completed" {
					t.Errorf("session %d: exit %d, the daemon files it %s, want completed", i+1, code, st)
				}
				if last := vendorLines(t, kind, out); last != marker {
					t.Errorf("the merged output is %q, want the final answer %q as its last line", out, marker)
				}
				if strings.Contains(out, "\x1b") {
					t.Error("an escape sequence (colour, cursor) in the output")
				}
				if len(up.Requests()) == 0 {
					t.Error("the scripted model was never asked")
				}
				if runs := h.runs(); len(runs) != i+1 {
					t.Fatalf("after session %d the records directory holds %d runs, want %d", i+1, len(runs), i+1)
				}
				dir := h.last()
				h.checkClosed(dir)
				if doc := h.attestation(dir); doc["exit_code"] != float64(0) {
					t.Errorf("attestation exit_code %v", doc["exit_code"])
				}
				if sum := h.outcome(dir, 0, "ok"); sum.FinalAnswer == nil || *sum.FinalAnswer != marker || sum.Retry != "none" || sum.ControlVerdict != "gap" {
					t.Errorf("summary final_answer %v retry %q control_verdict %q (a --cwd run has its H7/H11 gaps, unaudited)", sum.FinalAnswer, sum.Retry, sum.ControlVerdict)
				}
			}
			for _, never := range []string{filepath.Join(h.root, "never.json"), filepath.Join(h.root, "never")} {
				if _, err := os.Lstat(never); err == nil {
					t.Errorf("%s was written: a HARNESS_* variable reached the child", never)
				}
			}
		})
	}
}

// TestHostDaemonSessionOutputs: a later daemon that names per-session
// outputs and passes them to the child ($HARNESS_OUTPUT_FILE,
// $HARNESS_ARTIFACTS_DIR): they win over --records-dir, which stays empty.
func TestHostDaemonSessionOutputs(t *testing.T) {
	h := newFleetHost(t, "claude")
	art, summary := filepath.Join(h.root, "art"), filepath.Join(h.root, "output.json")
	if err := os.Mkdir(art, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := randomToken("OUTPUTS-OK-")
	up := modelFor("claude", scripted.Texts(marker))
	defer up.Close()
	env := append(daemonChildEnv(h.source), "HARNESS_OUTPUT_FILE="+summary, "HARNESS_ARTIFACTS_DIR="+art)
	code, out := startDaemonSession(t, h.wt, env, h.command(up.URL(), "Reply with exactly: "+marker)).wait()
	if code != 0 || vendorLines(t, "claude", out) != marker {
		t.Errorf("exit %d, output %q", code, out)
	}
	if runs := h.runs(); len(runs) != 0 {
		t.Errorf("the records directory holds %v, though the daemon named the session's outputs", runs)
	}
	lastIsStreamClosed(t, &runResult{events: h.events(art)})
	checkSummary(t, summary, filepath.Join(art, "metaharness-attestation.json"), "claude", "", 0, "ok")
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

// TestHostDaemonCancel: a session stopped by the daemon, by a cancel or a
// timeout (SIGTERM to the process group, SIGKILL 5 s later) or by the
// terminal closing (SIGHUP), exits on the signal within 4 s, before any
// SIGKILL, with one line saying it was stopped; its events file ends with
// stream.closed, nothing of the session is left running in any process
// group, its scratch tree is gone, and its summary's outcome is stopped.
func TestHostDaemonCancel(t *testing.T) {
	for _, tc := range []struct{ kind, how string }{{"claude", "SIGTERM"}, {"claude", "SIGHUP"}, {"codex", "SIGTERM"}, {"codex", "SIGHUP"}} {
		how := tc.how
		t.Run(tc.kind+"/"+how, func(t *testing.T) {
			h := newFleetHost(t, tc.kind)
			up, asked := heldUpstream(t, tc.kind)
			s := h.start(h.command(up.URL(), "wait for the model"))
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
			code, out := s.wait()
			if took > 4*time.Second {
				t.Errorf("metaharness took %v to exit after %s, want within 4 s", took, how)
			}
			if st := s.cmd.ProcessState; !st.Exited() || code != 3 {
				t.Errorf("metaharness did not exit 3 on %s by itself: %v", how, st)
			}
			if how == "SIGTERM" && !strings.Contains(out, "metaharness: stopped: the run was stopped") {
				t.Errorf("no stopped line in the output: %q", out)
			}
			if left := s.leftOver(); len(left) > 0 {
				t.Errorf("processes of the session outlived it: %+v", left)
			}
			dir := h.last()
			h.checkClosed(dir)
			if sum := h.outcome(dir, 3, "stopped"); sum.Retry != "yes" || sum.Reason == nil || !strings.HasPrefix(*sum.Reason, "metaharness: stopped: ") {
				t.Errorf("summary retry %q reason %v", sum.Retry, sum.Reason)
			}
		})
	}
}

// TestHostDaemonQuota: the upstream answers a quota no wait clears
// (Anthropic's 429 rate_limit_error asking an hour, beyond the throttle
// budget; OpenAI's 429 insufficient_quota). The session ends within 10 s
// of that answer instead of sitting through the vendor's retries; its
// output is one line that carries the vendor's phrase (so the daemon files
// it usage_limit and moves the session to the provider's next account),
// it exits 4, and the stream, the attestation and the summary name it.
// The retry on the next account, the same Command in the same worktree,
// reaches the model and completes.
func TestHostDaemonQuota(t *testing.T) {
	for _, tc := range []struct{ kind, typ, path, retryAfter string }{
		{"claude", "rate_limit_error", "/v1/messages", "3600"},
		{"codex", "insufficient_quota", "/v1/responses", ""},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := newFleetHost(t, tc.kind)
			var first time.Time
			var mu sync.Mutex
			up := modelFor(tc.kind, scripted.Script{Turns: []scripted.Turn{{Error: &scripted.ErrorTurn{Status: 429, Type: tc.typ, Message: "You exceeded your current quota", RetryAfter: tc.retryAfter}}}, Final: "SECOND-ACCOUNT-OK"},
				scripted.OnRequest(func(scripted.Request) {
					mu.Lock()
					if first.IsZero() {
						first = time.Now()
					}
					mu.Unlock()
				}))
			defer up.Close()
			s := h.start(h.command(up.URL(), "do some work"))
			code, out := s.wait()
			mu.Lock()
			askedAt := first
			mu.Unlock()
			if askedAt.IsZero() {
				t.Fatal("the scripted model was never asked")
			}
			if took := s.exitAt.Sub(askedAt); took > 10*time.Second {
				t.Errorf("the session ended %v after the first 429, want within 10 s", took)
			}
			if code != 4 || daemonStatus(code, out) != "usage_limit" {
				t.Errorf("exit %d, filed %s; want 4, usage_limit", code, daemonStatus(code, out))
			}
			line := vendorLines(t, tc.kind, out)
			want := "metaharness: usage-limit: the model API answered POST " + tc.path + " with 429 Too Many Requests (" + tc.typ
			if !strings.HasPrefix(line, want) || strings.Count(out, "usage-limit") != 1 {
				t.Errorf("the output does not end with the one usage-limit line %q...: %q", want, out)
			}
			if n := len(up.Requests()); n != 1 {
				t.Errorf("the upstream was asked %d times: the vendor's retries were sat through, or the quota waited out", n)
			}
			dir := h.last()
			h.checkClosed(dir)
			doc := h.attestation(dir)
			q, _ := doc["upstream_quota"].(map[string]any)
			if doc["exit_code"] != float64(4) || q == nil || q["upstream_status"] != float64(429) {
				t.Errorf("attestation exit_code %v, upstream_quota %v", doc["exit_code"], doc["upstream_quota"])
			}
			var recorded bool
			for _, ev := range h.events(dir) {
				if w, ok := ev.Event.(*record.Warning); ok && w.Code == "LOOPBACK_UPSTREAM_QUOTA" {
					recorded = true
				}
			}
			if !recorded {
				t.Error("no LOOPBACK_UPSTREAM_QUOTA warning in the stream")
			}
			sum := h.outcome(dir, 4, "quota")
			if sum.Retry != "after_cooldown" || sum.UpstreamQuota == nil || sum.UpstreamQuota.Type != tc.typ || sum.Reason == nil || *sum.Reason != line {
				t.Errorf("summary retry %q upstream_quota %+v reason %v", sum.Retry, sum.UpstreamQuota, sum.Reason)
			}
			// The daemon's retry on the provider's next account.
			code, out = h.run(up.URL(), "Reply with exactly: SECOND-ACCOUNT-OK")
			if daemonStatus(code, out) != "completed" || vendorLines(t, tc.kind, out) != "SECOND-ACCOUNT-OK" {
				t.Errorf("the retry: exit %d, output %q", code, out)
			}
			if runs := h.runs(); len(runs) != 2 {
				t.Errorf("%d runs in the records directory, want the quota's and the retry's", len(runs))
			}
		})
	}
}

// TestHostDaemonThrottle: a brief throttle (a 429 rate_limit_error asking
// two seconds, within the default budget) is waited out at the proxy and
// the request sent again: the vendor gets the answer, the session
// completes, and the output carries no phrase for the daemon to take for
// a usage limit; the stream and the attestation record the wait.
func TestHostDaemonThrottle(t *testing.T) {
	h := newFleetHost(t, "claude")
	up := modelFor("claude", scripted.Script{Turns: []scripted.Turn{
		{Error: &scripted.ErrorTurn{Status: 429, Message: "Number of request tokens has exceeded your per-minute limit", RetryAfter: "2"}},
		{Text: "THROTTLE-OK"},
	}})
	defer up.Close()
	code, out := h.run(up.URL(), "Reply with exactly: THROTTLE-OK")
	if daemonStatus(code, out) != "completed" || vendorLines(t, "claude", out) != "THROTTLE-OK" {
		t.Errorf("exit %d, filed %s, output %q", code, daemonStatus(code, out), out)
	}
	if n := len(up.Requests()); n != 2 {
		t.Errorf("the upstream was asked %d times, want the throttled request and its retry", n)
	}
	dir := h.last()
	var waited bool
	for _, ev := range h.events(dir) {
		if w, ok := ev.Event.(*record.Warning); ok && w.Code == "LOOPBACK_UPSTREAM_THROTTLED" {
			waited = strings.Contains(w.Message, "it asked for Retry-After 2")
		}
	}
	if !waited {
		t.Error("no LOOPBACK_UPSTREAM_THROTTLED warning naming the wait in the stream")
	}
	if c, _ := h.attestation(dir)["loopback"].(map[string]any)["counters"].(map[string]any); c["throttle_retries"] != float64(1) {
		t.Errorf("attestation counters %v", c)
	}
	h.outcome(dir, 0, "ok")
}

// TestHostDaemonPhraseInAnswer: the daemon matches its phrases
// against the whole merged output before it reads the exit code, so a
// final answer that says "rate limit" under the example's --output final
// is filed usage_limit though the run exited 0 (docs/embedding.md says
// so); the same Command with --output status keeps the model's words off
// the output, and the session completes, its answer in the summary.
func TestHostDaemonPhraseInAnswer(t *testing.T) {
	h := newFleetHost(t, "claude")
	answer := "Done: the client now backs off when the API answers with a rate limit."
	up := modelFor("claude", scripted.Script{Final: answer})
	defer up.Close()
	argv := h.command(up.URL(), "add retries")
	code, out := h.start(argv).wait()
	if code != 0 || daemonStatus(code, out) != "usage_limit" {
		t.Errorf("--output final: exit %d, filed %s; the daemon's rule fires on the answer, as the docs say", code, daemonStatus(code, out))
	}
	i := slices.Index(argv, "--output")
	argv[i+1] = "status"
	code, out = h.start(argv).wait()
	if daemonStatus(code, out) != "completed" || strings.Contains(out, "rate limit") {
		t.Errorf("--output status: exit %d, filed %s, output %q", code, daemonStatus(code, out), out)
	}
	dir := h.last()
	if !strings.Contains(out, "metaharness: done: run "+filepath.Base(dir)+" exited 0 (ok); the run summary, with the answer, is "+filepath.Join(dir, "metaharness-summary.json")) {
		t.Errorf("--output status's line: %q", out)
	}
	if sum := h.outcome(dir, 0, "ok"); sum.FinalAnswer == nil || *sum.FinalAnswer != answer {
		t.Errorf("summary final_answer %v", sum.FinalAnswer)
	}
}

// TestHostDaemonCommit: under the example's shipped frame, the agent edits
// a file and commits it in its worktree, a linked git worktree whose git
// directory lies in the repository's .git: the commit is in the
// repository after the session, and the attestation's H7 row names what of
// the repository the child could write.
//
// Codex runs an approved command first inside its own sandbox, where the
// repository's .git is read-only, so git cannot commit there. It runs the
// command again outside its sandbox, on the same approval, only when the
// command failed fast (codex's source: exited within 150 ms of its start,
// its output naming a denial such as "Read-only file system"); the real
// daemon's run took that path, but a test cannot make it happen on demand.
// The codex case therefore pins the two paths it can tell apart: a plain
// commit that fails after that window reaches the model as a failure (its
// command ran once), and the model's require_escalated repeat runs once,
// outside codex's sandbox, and commits. Each call is decided once, by the
// frame.
func TestHostDaemonCommit(t *testing.T) {
	commit := func(name string) string {
		return fmt.Sprintf("echo try >> %[1]s.tries && echo %[1]s > %[1]s.txt && git add %[1]s.txt && git -c user.name=agent -c user.email=agent@example.invalid commit -qm 'committed by the agent (%[1]s)' && git log --format=%%s -1", name)
	}
	for _, kind := range []string{"claude", "codex"} {
		t.Run(kind, func(t *testing.T) {
			h := newFleetHost(t, kind)
			turns := []scripted.Turn{{ToolCall: &scripted.ToolCall{Name: "Bash", Input: mustJSON(t, map[string]string{"command": commit("bash"), "description": "commit"})}}}
			// committed: the commit that lands; failed: the one codex's
			// sandbox stopped.
			committed, failed, decisions := "bash", "", "frame/hook/allow"
			if kind == "codex" {
				turns = []scripted.Turn{
					{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: mustJSON(t, map[string]string{"cmd": "sleep 0.3 && " + commit("inside")})}},
					{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: mustJSON(t, map[string]string{"cmd": commit("outside"), "sandbox_permissions": "require_escalated", "justification": "git writes the repository's .git"})}},
				}
				committed, failed, decisions = "outside", "inside", "frame/control_request/allow frame/control_request/allow"
			}
			up := modelFor(kind, scripted.Script{Turns: append(turns, scripted.Turn{Text: "COMMITTED"})})
			defer up.Close()
			code, out := h.run(up.URL(), "Commit a file")
			if daemonStatus(code, out) != "completed" || vendorLines(t, kind, out) != "COMMITTED" {
				t.Errorf("exit %d, output %q", code, out)
			}
			log, err := exec.Command("git", "-C", h.repo, "log", "--all", "--format=%s").Output()
			if err != nil {
				t.Fatalf("the repository's log: %v", err)
			}
			for name, want := range map[string]bool{committed: true, failed: false} {
				if name != "" && strings.Contains(string(log), "committed by the agent ("+name+")") != want {
					t.Errorf("the repository's log %q: the %s commit there is %v, want %v", log, name, !want, want)
				}
			}
			dir := h.last()
			res := &runResult{events: h.events(dir)}
			if got := res.decisions(); got != decisions {
				t.Errorf("decisions %q, want %q: one per call", got, decisions)
			}
			for _, ev := range res.find("tool.result") {
				r := ev.(*record.ToolResult)
				failedHere := r.ExitCode != nil && *r.ExitCode != 0 && strings.Contains(string(r.Content), "Read-only file system")
				if (r.IsError != nil && *r.IsError) != failedHere || failedHere != (kind == "codex" && r.CallID == "call_0001") {
					t.Errorf("call %s: exit %v, is_error %v, %s", r.CallID, r.ExitCode, r.IsError, r.Content)
				}
			}
			for _, name := range []string{committed, failed} {
				if b, _ := os.ReadFile(filepath.Join(h.wt, name+".tries")); name != "" && string(b) != "try\n" {
					t.Errorf("the %s call's command ran %d times, want once", name, strings.Count(string(b), "try"))
				}
			}
			b := h.read(filepath.Join(dir, "metaharness-attestation.json"))
			if !strings.Contains(string(b), "; git: the worktree's .git names ") {
				t.Error("the attestation does not say what of the repository the child could write")
			}
			h.outcome(dir, 0, "ok")
		})
	}
}
