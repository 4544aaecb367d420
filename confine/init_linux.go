package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/metaharness/metaharness/confine/sandbox"

	"golang.org/x/sys/unix"
)

// Main is the init: PID 1 of the child's namespaces, started by Start as
// `metaharness internal-init` with ConfigFD and ControlFD. It reads the
// launch, sets the mount view and the network up, hands metaharness the
// listeners, starts the vendor in a nested user namespace, passes SIGTERM,
// SIGINT and SIGHUP on to the vendor's process group, reaps every orphan,
// and when the vendor ends reports how and returns, which ends every other
// process in the namespace. It returns the init's exit code.
func Main() int {
	// Nothing inside may ptrace the init or read its memory: it holds
	// capabilities over the mounts that hide things.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	ctl := os.NewFile(ControlFD, "control")
	l, err := readLaunch(os.NewFile(ConfigFD, "launch"))
	if err != nil {
		return failed(ctl, err)
	}
	if err := setUp(&l.Spec); err != nil {
		return failed(ctl, err)
	}
	listeners := l.Spec.listeners()
	if len(listeners) > 0 {
		if err := loopbackUp(); err != nil {
			return failed(ctl, err)
		}
	}
	for _, ln := range listeners {
		if err := handOverListener(ctl, ln); err != nil {
			return failed(ctl, err)
		}
	}
	if err := applyControls(&l.Spec); err != nil {
		return failed(ctl, err)
	}
	// Signals are caught before the vendor exists, so none is lost.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGCHLD)
	pid, err := startVendor(&l.Command)
	if err != nil {
		return failed(ctl, err)
	}
	// A pidfd of the vendor goes with the report, so metaharness can name
	// the vendor's process group in its own PID namespace and signal it
	// without a hop through the init.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		pidfd = -1
	}
	err = send(ctl, report{Started: true}, pidfd)
	if pidfd >= 0 {
		_ = unix.Close(pidfd)
	}
	if err != nil {
		_ = unix.Kill(-pid, unix.SIGKILL)
		return 2
	}
	// The vendor holds the stdio now; the init keeps stderr only, for a
	// crash of its own.
	if null, err := os.Open(os.DevNull); err == nil {
		_ = unix.Dup2(int(null.Fd()), 0)
		_ = unix.Dup2(int(null.Fd()), 1)
		_ = null.Close()
	}
	// metaharness gone (the control socket at EOF): end everything now,
	// whether or not the parent-death signal has come.
	gone := make(chan struct{})
	go func() {
		buf := make([]byte, 64)
		for {
			if _, err := ctl.Read(buf); err != nil {
				close(gone)
				return
			}
		}
	}()
	for {
		select {
		case <-gone:
			_ = unix.Kill(-pid, unix.SIGKILL)
			return 2
		case sig := <-sigs:
			if sig != unix.SIGCHLD {
				_ = unix.Kill(-pid, sig.(syscall.Signal))
				continue
			}
			if ex, done := reap(pid); done {
				_ = send(ctl, report{Exited: ex}, -1)
				return 0
			}
		}
	}
}

// applyControls applies what the spec asks beyond the namespaces and the
// mount view, last before the vendor starts, or says why it cannot: the
// vendor never starts without a control its plan asked for.
func applyControls(s *Spec) error {
	if s.CommandSandbox != "" {
		if abi, why := sandbox.ABI(); abi < ScopedABI {
			if why == "" {
				why = fmt.Sprintf("ABI %d", abi)
			}
			return fmt.Errorf("the command sandbox %s needs Landlock ABI %d, and this kernel has %s", s.CommandSandbox, ScopedABI, why)
		}
	}
	if s.NprocMax > 0 {
		n := uint64(s.NprocMax)
		if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("bounding the vendor's processes (RLIMIT_NPROC %d): %w", n, err)
		}
	}
	return denySyscalls(s.DenySyscalls)
}

// reap waits for every child that has ended and reports the vendor's end
// once it is among them.
func reap(vendor int) (*Exit, bool) {
	var vendorExit *Exit
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return vendorExit, vendorExit != nil
		}
		if pid == vendor {
			vendorExit = exitOf(ws)
		}
	}
}

func exitOf(ws unix.WaitStatus) *Exit {
	if ws.Signaled() {
		s := int(ws.Signal())
		return &Exit{Signal: &s}
	}
	c := ws.ExitStatus()
	return &Exit{Code: &c}
}

func readLaunch(f *os.File) (*launch, error) {
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfig+1))
	if err != nil {
		return nil, fmt.Errorf("reading the launch: %w", err)
	}
	if len(b) > maxConfig {
		return nil, fmt.Errorf("the launch is larger than %d bytes", maxConfig)
	}
	var l launch
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("reading the launch: %w", err)
	}
	if err := l.Spec.Check(); err != nil {
		return nil, err
	}
	return &l, nil
}

// failed reports why the init could not start the vendor.
func failed(ctl *os.File, err error) int {
	r := report{Failed: err.Error()}
	var se *os.SyscallError
	var errno syscall.Errno
	if errors.As(err, &se) && errors.As(se.Err, &errno) {
		r.Syscall, r.Errno = se.Syscall, int(errno)
	}
	_ = send(ctl, r, -1)
	return 2
}

func send(ctl *os.File, r report, fd int) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	return unix.Sendmsg(int(ctl.Fd()), b, oob, nil, 0)
}

// handOverListener listens on r.Listening inside the network namespace
// and sends the listener to metaharness with r.
func handOverListener(ctl *os.File, r report) error {
	ln, err := net.Listen("tcp", r.Listening)
	if err != nil {
		return fmt.Errorf("listening on %s inside the child's network namespace: %w", r.Listening, err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return err
	}
	defer f.Close()
	r.Listening = ln.Addr().String()
	return send(ctl, r, int(f.Fd()))
}

func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

// startVendor starts c in its own process group and in a user namespace
// nested in the init's: uid 0 there is the init's uid 0, so files stay the
// caller's, but the vendor holds no capability over the namespaces the
// init made (it cannot unmount what hides things, nor touch the network),
// and every mount it could copy is locked.
func startVendor(c *Command) (int, error) {
	if len(c.Args) == 0 {
		return 0, errors.New("the launch names no program arguments")
	}
	one := []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	pid, err := syscall.ForkExec(c.Program, c.Args, &syscall.ProcAttr{
		Dir:   c.Dir,
		Env:   c.Env,
		Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{
			Setpgid:     true,
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: one,
			GidMappings: one,
			Pdeathsig:   syscall.SIGKILL,
		},
	})
	if err != nil {
		return 0, fmt.Errorf("starting %s inside the confinement: %w", c.Program, os.NewSyscallError("fork/exec", err))
	}
	return pid, nil
}
