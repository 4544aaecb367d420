package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/record"
)

// KillGrace is how long a child's process group gets between SIGTERM and
// SIGKILL when the run is stopped. With the wind-up after it, a stopped run
// returns well within the four seconds an embedder is promised.
const KillGrace = 1500 * time.Millisecond

// Child is a spawned vendor process, the leader of its own process group so
// that stopping the run stops everything it started.
type Child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}
	err   error
}

// Spawn starts plan's program with exactly plan's environment, in plan's
// directory, stdin from /dev/null (a pipe under plan.StdinPipe, see
// Child.Stdin), stdout to the returned reader and stderr to stderr.
func Spawn(plan *Plan, stderr io.Writer) (*Child, io.ReadCloser, error) {
	cmd := exec.Command(plan.Program, plan.Args...)
	cmd.Env = plan.Env
	cmd.Dir = plan.Dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	var in io.WriteCloser
	if plan.StdinPipe {
		if in, err = cmd.StdinPipe(); err != nil {
			return nil, nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", plan.Program, err)
	}
	c := &Child{cmd: cmd, stdin: in, done: make(chan struct{})}
	return c, out, nil
}

// Stdin is the child's stdin under Plan.StdinPipe, else nil.
func (c *Child) Stdin() io.WriteCloser { return c.stdin }

// Pid is the child's process id (and its process group id).
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Wait waits for the child after its stdout has been read to the end, and
// reports how it ended.
func (c *Child) Wait() *record.Process {
	c.err = c.cmd.Wait()
	close(c.done)
	return ProcessOf(c.cmd.ProcessState)
}

// Stop ends the child's whole process group: SIGTERM, then SIGKILL after
// KillGrace or when ctx ends, whichever is first. It returns at once when the
// child has already exited.
func (c *Child) Stop(ctx context.Context) {
	pg := -c.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	t := time.NewTimer(KillGrace)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	case <-ctx.Done():
	}
	// Whatever the leader did, nothing of the group may outlive the run.
	_ = syscall.Kill(pg, syscall.SIGKILL)
}

// ProcessOf renders an exit status for stream.closed.process.
func ProcessOf(st *os.ProcessState) *record.Process {
	if st == nil {
		return &record.Process{Kind: "unknown"}
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		sig := int(ws.Signal())
		return &record.Process{Kind: "signaled", Signal: &sig}
	case st.Exited():
		code := st.ExitCode()
		return &record.Process{Kind: "exited", Code: &code}
	}
	return &record.Process{Kind: "unknown"}
}

// LookPath finds an executable regular file named name on path (a
// colon-separated list), the way the child's own PATH would.
func LookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not an executable file on %s", name, path)
}

// ChildPath is the PATH a child gets: the caller's ~/.local/bin, then the
// system directories. The vendor binary is looked up on it, so what runs is
// what the caller installed, never whatever their shell PATH finds first.
func ChildPath(callerHome string) string {
	if callerHome == "" {
		return "/usr/local/bin:/usr/bin:/bin"
	}
	return filepath.Join(callerHome, ".local/bin") + ":/usr/local/bin:/usr/bin:/bin"
}

// versionDeadline bounds "--version": the pinned vendors answer in well
// under a second (Claude Code 0.03 s, Codex 0.12 s).
const versionDeadline = 10 * time.Second

// VersionOf runs "binary --version" with env and returns the first word that
// starts with a digit ("2.1.328 (Claude Code)" → "2.1.328"). The probe is
// the leader of its own process group: when ctx ends or versionDeadline
// passes, the whole group is killed and VersionOf returns at once, even if
// something the probe started still holds its stdout.
func VersionOf(ctx context.Context, binary string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "--version")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 100 * time.Millisecond
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return "", fmt.Errorf("%s --version: %w", binary, context.Cause(ctx))
	}
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", binary, err)
	}
	for _, w := range strings.Fields(string(out)) {
		if w[0] >= '0' && w[0] <= '9' {
			return w, nil
		}
	}
	return "", errors.New(binary + " --version printed no version number")
}
