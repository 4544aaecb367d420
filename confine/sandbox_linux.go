package confine

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// sandboxScopes are what the command sandbox scopes to its own domain.
var sandboxScopes = landlock.Config{Scoped: ll.ScopeSignal | ll.ScopeAbstractUnixSocket}

// Sandbox replaces this process with shell (args after its name) inside a
// Landlock domain of its own, nested in whatever domain it runs in: no
// process in it may signal one outside it or connect to an abstract unix
// socket made outside it, and by Landlock's ptrace rule none may ptrace one
// outside it or open its /proc/<pid>/mem, environ or fd entries. The vendor
// that started the command (and metaharness's own hook and server) are
// outside. With r.Connect it may open TCP connections to those ports alone
// (the egress gate's, never the model route's); r.Unset are taken out of
// the environment the shell gets. File access is the mount view's business:
// no file right is handled. Descriptors pass through untouched. It returns
// only when the domain cannot be made or shell cannot be executed, and then
// nothing ran.
//
// go-landlock's own Restrict would restrict every thread through libpsx;
// the domain is only needed on the thread that execs, and exec ends the
// others, so the ruleset is applied there alone (the library's documented
// pattern for a program that execs at once).
func Sandbox(shell string, r SandboxRules, args []string) error {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi < ScopedABI {
		return fmt.Errorf("the command sandbox needs Landlock ABI %d (scoped signals and abstract unix sockets), and this kernel has %s", ScopedABI, abiWords(abi, err))
	}
	cfg, rules := sandboxScopes, []landlock.Rule(nil)
	if r.Connect != nil {
		cfg.HandledAccessNet = ll.AccessNetConnectTCP
		for _, p := range r.Connect {
			rules = append(rules, landlock.ConnectTCP(p))
		}
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("the command sandbox's Landlock ruleset: %w", err)
	}
	runtime.LockOSThread() // never unlocked: this thread execs or the process exits
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("the command sandbox: no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("the command sandbox: entering its Landlock domain: %w", err)
	}
	_ = unix.Close(fd)
	if err := syscall.Exec(shell, append([]string{shell}, args...), withoutVars(os.Environ(), r.Unset)); err != nil {
		return fmt.Errorf("the command sandbox: executing %s: %w", shell, err)
	}
	return nil
}

// withoutVars is env less every entry that names one of names.
func withoutVars(env, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			out = append(out, kv)
		}
	}
	return out
}

// landlockABI is the kernel's Landlock ABI version, 0 and why when there is
// none.
func landlockABI() (int, string) {
	abi, err := ll.LandlockGetABIVersion()
	if err != nil || abi <= 0 {
		return 0, abiWords(abi, err)
	}
	return abi, ""
}

func abiWords(abi int, err error) string {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return "no Landlock (the kernel is older than 5.13 or built without it)"
	case errors.Is(err, unix.EOPNOTSUPP):
		return "no Landlock (built in, but not enabled at boot: add landlock to the lsm= kernel parameter)"
	case err != nil:
		return "no Landlock (" + err.Error() + ")"
	}
	return fmt.Sprintf("ABI %d", abi)
}
