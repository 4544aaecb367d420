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

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// killGrace is how long a child's process group gets between SIGTERM and
// SIGKILL when the run is stopped, and ownStopGrace how long it gets to
// answer its own stop signal before SIGTERM (Descriptor.StopSignal). With
// the wind-up after them, a stopped run returns well within the four
// seconds an embedder is promised.
const (
	killGrace    = 1500 * time.Millisecond
	ownStopGrace = time.Second
)

// stderrDrain bounds how long Wait copies the child's stderr after the
// child has exited, should something it started still hold the pipe.
const stderrDrain = time.Second

// child is a spawned vendor process: under a confinement (Plan.Confinement)
// its init, PID 1 of the child's namespaces, whose end ends every process in
// them; unconfined, the leader of its own process group. Either way,
// stopping the run stops everything it started.
type child struct {
	cmd    *exec.Cmd
	init   *confine.Init // nil: unconfined
	stdin  io.WriteCloser
	stderr *os.File      // our end of the child's stderr
	copied chan struct{} // closed when the child's stderr is copied to its end
	done   chan struct{}

	// stopSignal is the vendor's own stop, sent before SIGTERM (0: none).
	stopSignal syscall.Signal
}

// spawnPlan starts plan's program with exactly plan's environment, in plan's
// directory (inside plan.Confinement when there is one), stdin from
// /dev/null (a one-way socket under plan.StdinPipe, see Child.Stdin),
// stdout to the returned reader and stderr copied to stderr, escape
// sequences left out. The child's stdio are one-way unix sockets
// (confine.OneWay), never pipes: nothing it starts can reopen its stdout
// through /proc and write into the record.
func spawnPlan(plan *kind.Plan, stderr io.Writer) (*child, io.ReadCloser, error) {
	c := &child{done: make(chan struct{}), copied: make(chan struct{})}
	if plan.Confinement != nil {
		var err error
		c.init, err = confine.New(plan.Confinement, confine.Command{
			Program: plan.Program, Args: append([]string{plan.Program}, plan.Args...), Env: plan.Env, Dir: plan.Dir,
		})
		if err != nil {
			return nil, nil, err
		}
		c.cmd = c.init.Cmd
	} else {
		c.cmd = exec.Command(plan.Program, plan.Args...)
		c.cmd.Env = plan.Env
		c.cmd.Dir = plan.Dir
		c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	// Never our own files either: when metaharness runs under a fleet's
	// PTY, a child handed the terminal would sit in a background process
	// group (stopped by the first terminal call it makes), and a vendor that
	// sees a terminal may colour its output or prompt. Its colour is taken
	// out even so (plainWriter).
	ours, theirs, err := streams(plan.StdinPipe)
	if err != nil {
		return nil, nil, err
	}
	c.cmd.Stdout, c.cmd.Stderr = theirs[1], theirs[2]
	if plan.StdinPipe {
		c.cmd.Stdin, c.stdin = theirs[0], ours[0]
	}
	c.stderr = ours[2]
	if c.init != nil {
		err = c.init.Start()
	} else {
		err = c.cmd.Start()
	}
	closeFiles(theirs[:]) // the child holds its ends now
	if err != nil {
		closeFiles(ours[:])
		return nil, nil, fmt.Errorf("starting %s: %w", plan.Program, err)
	}
	go func() {
		defer close(c.copied)
		_, _ = io.Copy(&plainWriter{w: stderr}, c.stderr)
	}()
	return c, ours[1], nil
}

// streams are the child's ends of its stdin, stdout and stderr and ours
// (confine.OneWay), stdin's nil unless piped.
func streams(stdinPipe bool) (ours, theirs [3]*os.File, err error) {
	for i := range ours {
		if i == 0 && !stdinPipe {
			continue
		}
		if ours[i], theirs[i], err = confine.OneWay(i > 0); err != nil {
			closeFiles(ours[:])
			closeFiles(theirs[:])
			return ours, theirs, err
		}
	}
	return ours, theirs, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// VendorPid is the vendor's process id in metaharness's namespace: under
// a confinement the init's child, as the init reports it (0 when it could
// not), else the child itself.
func (c *child) VendorPid() int {
	if c.init != nil {
		return c.init.VendorPid()
	}
	return c.cmd.Process.Pid
}

// Stdin is the child's stdin under Plan.StdinPipe, else nil.
func (c *child) Stdin() io.WriteCloser { return c.stdin }

// Listeners are the listeners opened inside a confined child's network
// namespace (confine.Spec.Listen, GateListen and DecisionListen), none
// without them: the loopback proxy serves the first two
// (loopback.Proxy.ServeModel, ServeGate), the decision endpoint the third.
func (c *child) Listeners() confine.Listeners {
	if c.init == nil {
		return confine.Listeners{}
	}
	return c.init.Listeners()
}

// Wait waits for the child after its stdout has been read to the end, and
// reports how it ended: the vendor's own end, as its init saw it, under a
// confinement.
func (c *child) Wait() *record.Process {
	defer close(c.done)
	defer c.drainStderr()
	if c.init == nil {
		_ = c.cmd.Wait()
		return processOf(c.cmd.ProcessState)
	}
	ex, _ := c.init.Wait()
	switch {
	case ex == nil: // the init ended without saying: its own end is the child's
		return processOf(c.cmd.ProcessState)
	case ex.Signal != nil:
		return &record.Process{Kind: record.ProcessSignaled, Signal: ex.Signal}
	case ex.Code != nil:
		return &record.Process{Kind: record.ProcessExited, Code: ex.Code}
	}
	return &record.Process{Kind: record.ProcessUnknown}
}

// drainStderr gives the copy of the child's stderr stderrDrain to finish
// after the child has exited, should something it started still hold the
// socket, then ends it.
func (c *child) drainStderr() {
	t := time.NewTimer(stderrDrain)
	defer t.Stop()
	select {
	case <-c.copied:
	case <-t.C:
	}
	_ = c.stderr.Close()
	<-c.copied
}

// Stop ends the child and everything it started: its own stop signal
// first when it has one, for ownStopGrace; then SIGTERM (to the process
// group; under a confinement to the init, which passes it to the vendor's
// group), then SIGKILL after killGrace; SIGKILL at once when ctx ends. It
// returns at once when the child has already exited.
func (c *child) Stop(ctx context.Context) {
	for _, step := range []struct {
		sig   syscall.Signal
		grace time.Duration
	}{{c.stopSignal, ownStopGrace}, {syscall.SIGTERM, killGrace}} {
		if step.sig == 0 {
			continue
		}
		c.signal(step.sig)
		if !c.runsAfter(ctx, step.grace) {
			break
		}
	}
	// Whatever the leader did, nothing of the group may outlive the run:
	// the init's end ends its whole PID namespace.
	c.signal(syscall.SIGKILL)
}

// runsAfter waits up to grace for the child to exit and reports whether it
// still runs; false too when ctx ends first.
func (c *child) runsAfter(ctx context.Context, grace time.Duration) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-c.done:
		return false
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (c *child) signal(sig syscall.Signal) {
	switch {
	case c.init != nil && sig == syscall.SIGKILL:
		_ = c.init.Signal(sig)
		return
	case c.init != nil:
		_ = c.init.SignalVendor(sig)
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, sig)
}

// processOf renders an exit status for stream.closed.process.
func processOf(st *os.ProcessState) *record.Process {
	if st == nil {
		return &record.Process{Kind: record.ProcessUnknown}
	}
	ws, ok := st.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		sig := int(ws.Signal())
		return &record.Process{Kind: record.ProcessSignaled, Signal: &sig}
	case st.Exited():
		code := st.ExitCode()
		return &record.Process{Kind: record.ProcessExited, Code: &code}
	}
	return &record.Process{Kind: record.ProcessUnknown}
}

// lookPath finds an executable regular file named name on path (a
// colon-separated list), the way the child's own PATH would.
func lookPath(name, path string) (string, error) {
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

// versionDeadline bounds "--version": the pinned vendors answer in well
// under a second (Claude Code 0.03 s, Codex 0.12 s).
const versionDeadline = 10 * time.Second

// versionOf runs "binary --version" with env and returns the first word that
// starts with a digit ("2.1.328 (Claude Code)" → "2.1.328"). The probe is
// the leader of its own process group: when ctx ends or versionDeadline
// passes, the whole group is killed and versionOf returns at once, even if
// something the probe started still holds its stdout.
func versionOf(ctx context.Context, binary string, env []string) (string, error) {
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
