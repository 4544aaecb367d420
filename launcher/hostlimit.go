package launcher

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/exit"
)

// A busy host runs out of what every run takes: processes, namespaces,
// open files. A run that meets such a limit refuses with host-limit, the
// limit named with its value, instead of the step's own refusal (whose
// remedy, a flag or a path, would be wrong) or, where the confinement
// probe met it, a child run unconfined: the same run passes once others
// end, and the run summary says so (attest.OutcomeHostLimit, retry yes).

// hostLimit is err as the host-limit refusal when a limit of the user's
// or the host's stopped it, else nil. EMFILE and ENFILE are limits
// wherever met; EAGAIN, ENOMEM and ENOSPC only where a process was being
// started (fork/exec, or the clone of the confinement's namespaces), where
// they are the process, memory and namespace limits, not a full disk.
func hostLimit(err error) *exit.Refusal {
	var errno syscall.Errno
	var named *exit.Refusal
	switch {
	case err == nil || !errors.As(err, &errno):
		return nil
	case errors.As(err, &named) && named.Name == RefuseHostLimit:
		return named
	}
	var limit string
	switch {
	case errno == syscall.EMFILE:
		limit = "metaharness's limit on open files (RLIMIT_NOFILE, ulimit -n: " + rlimit(unix.RLIMIT_NOFILE) + ")"
	case errno == syscall.ENFILE:
		limit = "the host's limit on open files (fs.file-max: " + sysctl("fs/file-max") + ")"
	case !startingProcess(err):
		return nil
	case errno == syscall.EAGAIN:
		limit = "this user's limit on processes (RLIMIT_NPROC, ulimit -u: " + rlimit(unix.RLIMIT_NPROC) + ", or pids.max of metaharness's cgroup)"
	case errno == syscall.ENOMEM:
		limit = "the memory a new process may have (ulimit -v: " + rlimit(unix.RLIMIT_AS) + ", or the host's)"
	case errno == syscall.ENOSPC:
		var vals []string
		for _, ns := range []string{"user", "mnt", "pid", "net"} {
			v := sysctl("user/max_" + ns + "_namespaces")
			if v == "0" {
				return nil // namespaces of that kind are forbidden here: no limit to wait out (confine.Probe says so)
			}
			vals = append(vals, "user.max_"+ns+"_namespaces "+v)
		}
		limit = "this user's limit on namespaces (" + strings.Join(vals, ", ") + "; each confined run takes two user, two mount, one pid and one network namespace)"
	default:
		return nil
	}
	what := err.Error()
	if named != nil {
		what = named.Message
	}
	return exit.Within(RefuseHostLimit, err, "%s is reached (%s); the same run may pass once other runs end: start fewer at once, or raise the limit", limit, what)
}

// startingProcess: err came of starting a process, here or in the
// confinement's init.
func startingProcess(err error) bool {
	var pe *os.PathError
	var se *os.SyscallError
	return errors.As(err, &pe) && pe.Op == "fork/exec" || errors.As(err, &se) && se.Syscall == "fork/exec"
}

// rlimit is the soft limit of resource, as ulimit prints it.
func rlimit(resource int) string {
	var l unix.Rlimit
	switch err := unix.Getrlimit(resource, &l); {
	case err != nil:
		return "unknown"
	case l.Cur == unix.RLIM_INFINITY:
		return "unlimited"
	}
	return strconv.FormatUint(l.Cur, 10)
}

// sysctl is the value of /proc/sys/<name>, or "unknown".
func sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
