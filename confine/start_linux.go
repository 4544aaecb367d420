package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Init is a confined child as metaharness holds it: the init's process
// (Cmd, whose stdio is the vendor's), the vendor's real end as the init
// reports it, and the listener the init opened inside the child's network
// namespace.
type Init struct {
	// Cmd is the init's process. Set its Stdin, Stdout and Stderr (or take
	// pipes) before Start; Wait on it after the vendor's stdout ends.
	Cmd *exec.Cmd

	launch launch
	config *os.File // our end of the launch pipe, until Start
	ctl    *os.File // our end of the control socket
	child  []*os.File

	ln      Listeners
	vendor  int         // the vendor's pid (its process group) here, 0 unknown
	reports chan report // after Started: the exit report, then closed
	cgroup  string      // the child's own cgroup (Spec.Cgroup), "" none
}

// New prepares the init that will start c confined by s. Nothing runs
// until Start.
func New(s *Spec, c Command) (*Init, error) {
	return prepare(launch{Spec: *s, Command: c})
}

func prepare(l launch) (*Init, error) {
	if err := l.Spec.Check(); err != nil {
		return nil, err
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the init's control socket: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		_ = unix.Close(pair[0])
		_ = unix.Close(pair[1])
		return nil, fmt.Errorf("the init's launch pipe: %w", err)
	}
	i := &Init{launch: l, config: w, ctl: os.NewFile(uintptr(pair[0]), "control"),
		child: []*os.File{r, os.NewFile(uintptr(pair[1]), "control")}}
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNS)
	if l.Spec.Has(Net) {
		flags |= unix.CLONE_NEWNET
	}
	i.Cmd = &exec.Cmd{
		Path: l.Spec.Init,
		Args: append([]string{l.Spec.Init}, InitArgs()...),
		// The init is given nothing of metaharness's environment: what the
		// vendor needs travels in the launch.
		Env:        []string{},
		ExtraFiles: i.child, // ConfigFD and ControlFD
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:  flags,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: l.Spec.UID, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: l.Spec.GID, Size: 1}},
			Pdeathsig:   syscall.SIGKILL,
			Setpgid:     true,
		},
	}
	return i, nil
}

// Start starts the init, hands it the launch and waits until the vendor
// runs inside (or the init says why not, or ends). The init is started from
// a thread that lives as long as metaharness, so its parent-death signal
// (SIGKILL) fires when metaharness dies and at no other time.
func (i *Init) Start() error {
	cgroupFD := -1
	if c := i.launch.Spec.Cgroup; c != nil {
		dir, fd, err := makeCgroup(c)
		if err != nil {
			i.closeUnstarted()
			return err
		}
		i.cgroup, cgroupFD = dir, fd
		i.Cmd.SysProcAttr.UseCgroupFD, i.Cmd.SysProcAttr.CgroupFD = true, fd
	}
	var err error
	onSpawner(func() { err = i.Cmd.Start() })
	if cgroupFD >= 0 {
		_ = unix.Close(cgroupFD) // the clone has landed in it, or failed
	}
	if err != nil {
		i.closeUnstarted()
		return fmt.Errorf("cloning the child's namespaces: %w", err)
	}
	for _, f := range i.child {
		_ = f.Close()
	}
	b, err := json.Marshal(i.launch)
	if err == nil {
		_, err = i.config.Write(b)
	}
	_ = i.config.Close()
	if err != nil {
		return i.abort(fmt.Errorf("handing the init its launch: %w", err))
	}
	for {
		r, fd, err := receive(i.ctl)
		switch {
		case err != nil:
			return i.abort(fmt.Errorf("the init ended before the vendor started: %w", err))
		case r.Failed != "":
			return i.abort(r.failure())
		case r.Listening != "":
			if fd < 0 {
				return i.abort(errors.New("the init reported a listener without passing it"))
			}
			f := os.NewFile(uintptr(fd), "listener")
			ln, err := net.FileListener(f)
			_ = f.Close()
			if err != nil {
				return i.abort(fmt.Errorf("the listener inside the child's network namespace: %w", err))
			}
			switch r.Role {
			case roleModel:
				i.ln.Model = ln
			case roleGate:
				i.ln.Gate = ln
			case roleDecision:
				i.ln.Decision = ln
			default:
				_ = ln.Close()
				return i.abort(fmt.Errorf("the init passed a listener for %q, which no launch asks for", r.Role))
			}
		case r.Started:
			if fd >= 0 {
				i.vendor = pidOf(fd)
				_ = unix.Close(fd)
			}
			i.reports = make(chan report, 1)
			go i.readReports()
			return nil
		}
	}
}

// closeUnstarted releases what prepare and Start made for an init that
// never started.
func (i *Init) closeUnstarted() {
	for _, f := range append(i.child, i.config, i.ctl) {
		_ = f.Close()
	}
	if i.cgroup != "" {
		removeCgroup(i.cgroup)
	}
}

// abort kills an init that will not start the vendor and reaps it.
func (i *Init) abort(err error) error {
	_ = i.Cmd.Process.Kill()
	_ = i.Cmd.Wait()
	_ = i.ctl.Close()
	for _, ln := range []net.Listener{i.ln.Model, i.ln.Gate, i.ln.Decision} {
		if ln != nil {
			_ = ln.Close()
		}
	}
	if i.cgroup != "" {
		removeCgroup(i.cgroup)
	}
	return err
}

func (i *Init) readReports() {
	defer close(i.reports)
	defer i.ctl.Close()
	for {
		r, _, err := receive(i.ctl)
		if err != nil {
			return
		}
		if r.Exited != nil {
			i.reports <- r
			return
		}
	}
}

// Listeners are the listeners the init opened inside the child's network
// namespace. Their connections come from the child; what serves them dials
// from metaharness's own namespace.
func (i *Init) Listeners() Listeners { return i.ln }

// Pid is the init's process id in metaharness's namespace.
func (i *Init) Pid() int { return i.Cmd.Process.Pid }

// VendorPid is the vendor's process id in metaharness's namespace, 0 when
// the init could not say (no pidfd).
func (i *Init) VendorPid() int { return i.vendor }

// Signal sends sig to the init, which passes SIGTERM, SIGINT and SIGHUP on
// to the vendor's process group. SIGKILL ends the init and with it every
// process in the namespace.
func (i *Init) Signal(sig syscall.Signal) error { return i.Cmd.Process.Signal(sig) }

// SignalVendor sends sig straight to the vendor's process group, without
// the hop through the init (which a vendor racing to its next step could
// outrun); through the init when the group is not known.
func (i *Init) SignalVendor(sig syscall.Signal) error {
	if i.vendor > 0 {
		return unix.Kill(-i.vendor, sig)
	}
	return i.Signal(sig)
}

// pidOf is the pid a pidfd stands for, in this process's PID namespace.
func pidOf(pidfd int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", pidfd))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Pid:"); ok {
			if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && pid > 0 {
				return pid
			}
		}
	}
	return 0
}

// Wait waits for the init (call it after the vendor's stdout has ended)
// and returns how the vendor ended, or nil when the init ended without
// saying (it was killed, say): then the init's own state is Cmd's.
func (i *Init) Wait() (*Exit, error) {
	err := i.Cmd.Wait()
	if i.cgroup != "" {
		removeCgroup(i.cgroup)
	}
	r, ok := <-i.reports
	if !ok {
		return nil, err
	}
	return r.Exited, nil
}

func receive(ctl *os.File) (report, int, error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(ctl.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return report{}, -1, err
		}
		if n == 0 {
			return report{}, -1, errors.New("the control socket closed")
		}
		fd := -1
		if oobn > 0 {
			msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err == nil && len(msgs) > 0 {
				if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) > 0 {
					fd = fds[0]
					for _, extra := range fds[1:] {
						_ = unix.Close(extra)
					}
				}
			}
		}
		var r report
		if err := json.Unmarshal(buf[:n], &r); err != nil {
			if fd >= 0 {
				_ = unix.Close(fd)
			}
			return report{}, -1, fmt.Errorf("an unreadable report from the init: %w", err)
		}
		return r, fd, nil
	}
}

// spawner is a goroutine locked to its own thread for good: Go's Pdeathsig
// fires when the thread that started the child exits, and this one never
// does while the process lives.
var spawner struct {
	once sync.Once
	jobs chan func()
}

func onSpawner(f func()) {
	spawner.once.Do(func() {
		spawner.jobs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked, see spawner
			for job := range spawner.jobs {
				job()
			}
		}()
	})
	done := make(chan struct{})
	spawner.jobs <- func() {
		defer close(done)
		withDumpable(f)
	}
	<-done
}

// withDumpable runs f (a clone with id maps) dumpable: an unprivileged
// caller writes the new child's uid_map through /proc, which it may only
// open while the child, a copy of a non-dumpable metaharness, is dumpable
// too. The window has no child in it to read anything; root needs none.
func withDumpable(f func()) {
	was, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if was != 0 || os.Geteuid() == 0 {
		f()
		return
	}
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
	defer func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }()
	f()
}
