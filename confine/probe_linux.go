package confine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/metaharness/metaharness/confine/sandbox"
)

// Host is what decides Probe's answer for a caller, so that a yes may be
// kept and believed while all of it stays the same: the boot (the kernel and
// its configuration), the user namespace the caller runs in and its ids, the
// sysctls that allow or limit unprivileged namespaces, and the caller's
// seccomp and no_new_privs state. The init's own binary is the caller's
// concern (launcher keys the answer on it too).
type Host struct {
	BootID  string            `json:"boot_id"`
	UserNS  string            `json:"user_ns"`
	UID     int               `json:"uid"`
	GID     int               `json:"gid"`
	Sysctls map[string]string `json:"sysctls"`
	Status  []string          `json:"status"`
}

// hostSysctls are the knobs that decide whether (and how many) unprivileged
// namespaces may be made; one that does not exist here is left out.
var hostSysctls = []string{
	"kernel/unprivileged_userns_clone",
	"kernel/apparmor_restrict_unprivileged_userns",
	"user/max_user_namespaces",
	"user/max_pid_namespaces",
	"user/max_mnt_namespaces",
	"user/max_net_namespaces",
}

// ThisHost reads Host for the calling process.
func ThisHost() (Host, error) {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return Host{}, err
	}
	ns, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		return Host{}, err
	}
	h := Host{BootID: strings.TrimSpace(string(boot)), UserNS: ns, UID: os.Geteuid(), GID: os.Getegid(), Sysctls: map[string]string{}}
	for _, k := range hostSysctls {
		if b, err := os.ReadFile("/proc/sys/" + k); err == nil {
			h.Sysctls[k] = strings.TrimSpace(string(b))
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Host{}, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Seccomp:") || strings.HasPrefix(l, "NoNewPrivs:") {
			h.Status = append(h.Status, strings.Join(strings.Fields(l), " "))
		}
	}
	return h, nil
}

// Probe answers whether this host can confine a child, and with which
// Controls: it starts init (this binary) as a real confinement would, with
// a network namespace and a listener, a fresh /tmp, and a nested user
// namespace for a child (NestedProbe) that tries, in the vendor's
// position, to install the seccomp filter and to enter a Landlock domain,
// and says how that went. A nil error means the host can confine;
// otherwise it says why not, in words an operator can act on. The cgroup
// fields are DelegatedCgroup's.
func Probe(init string) (Controls, error) {
	i, err := prepare(launch{Spec: *probeSpec(init), Command: Command{
		// The init's own binary, through its own /proc: visible whatever
		// the view hides.
		Program: "/proc/self/exe", Args: append([]string{"metaharness"}, NestedProbeArgs()...), Dir: "/",
	}})
	if err != nil {
		return Controls{}, err
	}
	var out bytes.Buffer
	i.Cmd.Stdin, i.Cmd.Stdout, i.Cmd.Stderr = nil, &out, nil
	if err := i.Start(); err != nil {
		return Controls{}, explain(err)
	}
	if i.ln.Model != nil {
		_ = i.ln.Model.Close()
	}
	ex, err := i.Wait()
	switch {
	case err != nil:
		return Controls{}, fmt.Errorf("the probe's init failed: %w", err)
	case ex == nil || ex.Code == nil || *ex.Code != 0:
		return Controls{}, errors.New("the probe's child did not exit cleanly inside a nested user namespace")
	}
	var c Controls
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		return Controls{}, fmt.Errorf("the probe's child said %q, not what it found: %w", out.Bytes(), err)
	}
	c.Cgroup, c.CgroupWhy = DelegatedCgroup()
	c.Nproc, c.NprocWhy = nproc(os.Geteuid())
	return c, nil
}

// NestedProbe is the probe's child, in the vendor's position: it installs
// the seccomp filter a run asks for and enters a Landlock domain like the
// command sandbox's (both on itself, which then only exits), and prints
// what held as Controls.
func NestedProbe() int {
	var c Controls
	if err := denySyscalls(DeniedSyscalls); err != nil {
		c.SeccompWhy = err.Error()
	} else {
		c.Seccomp = true
	}
	c.LandlockABI, c.LandlockWhy = sandbox.ABI()
	if c.LandlockABI > 0 && c.LandlockABI < ScopedABI {
		c.LandlockWhy = fmt.Sprintf("Landlock ABI %d has no scoped signals or abstract unix sockets (ABI %d, Linux 6.12, has)", c.LandlockABI, ScopedABI)
	}
	if c.Scoped() {
		runtime.LockOSThread() // the domain is this thread's; the probe then only prints and exits
		if err := sandbox.Enter(sandbox.Rules{}); err != nil {
			c.LandlockABI, c.LandlockWhy = 0, "a Landlock domain cannot be entered in the vendor's position: "+err.Error()
		}
	}
	b, _ := json.Marshal(c)
	if _, err := os.Stdout.Write(b); err != nil {
		return 2
	}
	return 0
}

// probeSpec is the confinement Probe tries: every namespace and each kind
// of mount a run uses.
func probeSpec(init string) *Spec {
	return &Spec{
		Init: init, Namespaces: []string{User, PID, Mount, Net},
		UID: os.Geteuid(), GID: os.Getegid(),
		Hidden: []string{"/run"}, Fresh: []string{"/tmp"}, ReadOnly: []string{init},
		Listen: "127.0.0.1:0",
	}
}

// explain adds to a failure to clone the namespaces what usually causes it.
func explain(err error) error {
	msg := err.Error()
	if !strings.Contains(msg, "cloning the child's namespaces") {
		return err
	}
	var why []string
	if b, e := os.ReadFile("/proc/sys/user/max_user_namespaces"); e == nil && strings.TrimSpace(string(b)) == "0" {
		why = append(why, "user.max_user_namespaces is 0")
	}
	if b, e := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); e == nil && strings.TrimSpace(string(b)) == "0" {
		why = append(why, "kernel.unprivileged_userns_clone is 0")
	}
	if b, e := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); e == nil && strings.TrimSpace(string(b)) == "1" {
		why = append(why, "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)")
	}
	if len(why) == 0 {
		for _, limit := range []syscall.Errno{syscall.EAGAIN, syscall.ENOSPC, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE} {
			if errors.Is(err, limit) {
				return err // a limit reached (processes, namespaces, files), not a host that cannot
			}
		}
		why = append(why, "user namespaces cannot be made here (a seccomp filter, a container runtime or an unmapped uid forbids them)")
	}
	return fmt.Errorf("%w: %s", err, strings.Join(why, "; "))
}
