package sandbox

import (
	"errors"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// Landlock's system calls and constants (include/uapi/linux/landlock.h);
// the call numbers are the same on every architecture.
const (
	sysCreateRuleset = 444
	sysAddRule       = 445
	sysRestrictSelf  = 446

	createRulesetVersion = 1 << 0 // LANDLOCK_CREATE_RULESET_VERSION
	ruleNetPort          = 2      // LANDLOCK_RULE_NET_PORT
	accessNetConnectTCP  = 1 << 1 // LANDLOCK_ACCESS_NET_CONNECT_TCP
	scopeAbstractUnix    = 1 << 0 // LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	scopeSignal          = 1 << 1 // LANDLOCK_SCOPE_SIGNAL

	prSetDumpable   = 4  // PR_SET_DUMPABLE
	prSetNoNewPrivs = 38 // PR_SET_NO_NEW_PRIVS
)

// rulesetAttr is struct landlock_ruleset_attr as of ABI 6.
type rulesetAttr struct {
	handledAccessFS  uint64
	handledAccessNet uint64
	scoped           uint64
}

// netPortAttr is struct landlock_net_port_attr.
type netPortAttr struct {
	allowedAccess uint64
	port          uint64
}

// ABI is the kernel's Landlock ABI version, or 0 and why there is none.
func ABI() (int, string) {
	v, _, e := syscall.Syscall(sysCreateRuleset, 0, 0, createRulesetVersion)
	if e != 0 {
		return 0, abiWords(0, e)
	}
	if int(v) <= 0 {
		return 0, abiWords(int(v), nil)
	}
	return int(v), ""
}

// abiWords say what the kernel's Landlock is, for a refusal.
func abiWords(abi int, err error) string {
	switch {
	case errors.Is(err, syscall.ENOSYS):
		return "no Landlock (the kernel is older than 5.13 or built without it)"
	case errors.Is(err, syscall.EOPNOTSUPP):
		return "no Landlock (built in, but not enabled at boot: add landlock to the lsm= kernel parameter)"
	case err != nil:
		return "no Landlock (" + err.Error() + ")"
	}
	return "ABI " + itoa(uint64(abi))
}

// Exec replaces this process with shell (args after its name) inside the
// domain Enter makes; r.Unset are taken out of the environment the shell
// gets. Descriptors pass through untouched. It returns only when the
// domain cannot be made or shell cannot be executed, and then nothing ran.
// Until it execs, the process is not dumpable: it holds the vendor's
// environment, and its memory and /proc entries stay closed to processes
// of the same user.
func Exec(shell string, r Rules, args []string) error {
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prSetDumpable, 0, 0, 0, 0, 0)
	runtime.LockOSThread() // never unlocked: this thread execs or the process exits
	if err := Enter(r); err != nil {
		return err
	}
	if err := syscall.Exec(shell, append([]string{shell}, args...), withoutVars(os.Environ(), r.Unset)); err != nil {
		return &Error{"the command sandbox: executing " + shell, err}
	}
	return nil
}

// Enter puts the calling thread into a Landlock domain of its own, nested
// in whatever domain it is in: no process in it may signal one outside it
// or connect to an abstract unix socket made outside it, and by Landlock's
// ptrace rule none may ptrace one outside it or open its /proc/<pid>/mem,
// environ or fd entries. The vendor that started the command (and
// metaharness's own hook and server) are outside. With r.Connect it may
// open TCP connections to those ports alone (the egress gate's, never the
// model route's). File access is the mount view's business: no file right
// is handled. The caller locks its goroutine to the thread: the domain is
// the thread's alone (Exec's thread execs, which ends the others).
func Enter(r Rules) error {
	if abi, why := ABI(); abi < ScopedABI {
		if why == "" {
			why = abiWords(abi, nil)
		}
		return errors.New("the command sandbox needs Landlock ABI " + itoa(ScopedABI) + " (scoped signals and abstract unix sockets), and this kernel has " + why)
	}
	attr := rulesetAttr{scoped: scopeSignal | scopeAbstractUnix}
	if r.Connect != nil {
		attr.handledAccessNet = accessNetConnectTCP
	}
	fd, _, e := syscall.Syscall(sysCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return &Error{"the command sandbox's Landlock ruleset", e}
	}
	defer syscall.Close(int(fd))
	for _, p := range r.Connect {
		rule := netPortAttr{allowedAccess: accessNetConnectTCP, port: uint64(p)}
		if _, _, e := syscall.Syscall6(sysAddRule, fd, ruleNetPort, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); e != 0 {
			return &Error{"the command sandbox's Landlock ruleset: port " + itoa(uint64(p)), e}
		}
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return &Error{"the command sandbox: no_new_privs", e}
	}
	if _, _, e := syscall.Syscall(sysRestrictSelf, fd, 0, 0); e != 0 {
		return &Error{"the command sandbox: entering its Landlock domain", e}
	}
	return nil
}

// Error is a step of the sandbox that failed, and why (fmt.Errorf's %w,
// without fmt: the package doc says why).
type Error struct {
	Step string
	Err  error
}

func (e *Error) Error() string { return e.Step + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
