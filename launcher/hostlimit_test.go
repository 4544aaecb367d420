package launcher

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
)

// TestHostLimit: a limit met is named with its value, in place of the
// step's refusal; EAGAIN, ENOMEM and ENOSPC only where a process was being
// started (here or inside the confinement), where they are limits and not
// a full disk; and a refusal already naming its limit is left as it is.
func TestHostLimit(t *testing.T) {
	fork := func(errno syscall.Errno) error {
		return exit.Wrap(RefuseSpawn, fmt.Errorf("cloning the child's namespaces: %w", &os.PathError{Op: "fork/exec", Path: "/bin/x", Err: errno}), "the vendor could not be started")
	}
	inside := func(errno syscall.Errno) error {
		return fmt.Errorf("starting claude inside the confinement: %w", os.NewSyscallError("fork/exec", errno))
	}
	for _, c := range []struct {
		name string
		err  error
		want string // "" for no host limit
	}{
		{"open files", exit.Wrap(kind.RefuseScratchWrite, &os.PathError{Op: "open", Path: "/x", Err: syscall.EMFILE}, "writing /x"), "metaharness's limit on open files (RLIMIT_NOFILE, ulimit -n: "},
		{"host's files", fmt.Errorf("a socket pair: %w", syscall.ENFILE), "the host's limit on open files (fs.file-max: "},
		{"processes", fork(syscall.EAGAIN), "this user's limit on processes (RLIMIT_NPROC, ulimit -u: "},
		{"processes inside", inside(syscall.EAGAIN), "this user's limit on processes"},
		{"memory", fork(syscall.ENOMEM), "the memory a new process may have (ulimit -v: "},
		{"namespaces", inside(syscall.ENOSPC), "this user's limit on namespaces (user.max_user_namespaces "},
		{"a full disk", exit.Wrap(kind.RefuseScratchWrite, &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, "writing /x"), ""},
		{"EAGAIN elsewhere", fmt.Errorf("reading: %w", syscall.EAGAIN), ""},
		{"no errno", errors.New("no"), ""},
		{"nil", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "namespaces" && sysctl("user/max_user_namespaces") == "0" {
				t.Skip("user namespaces are forbidden on this host: ENOSPC is no limit reached here")
			}
			r := hostLimit(c.err)
			if c.want == "" {
				if r != nil {
					t.Fatalf("named a limit: %v", r)
				}
				return
			}
			if r == nil || r.Name != RefuseHostLimit || !strings.HasPrefix(r.Message, c.want) || !errors.Is(r, c.err) {
				t.Fatalf("got %v, want a host-limit refusal starting %q", r, c.want)
			}
			if again := hostLimit(fmt.Errorf("later: %w", r)); again != r {
				t.Errorf("a named limit was named again: %v", again)
			}
		})
	}
}
