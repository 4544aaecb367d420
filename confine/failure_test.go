//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInitFailureKeepsItsErrno: the init's report of a process it could
// not start carries the system call's failure across, so that metaharness
// can tell a limit reached inside the confinement (ENOSPC: namespaces,
// EAGAIN: processes) from a host that cannot confine; a failure without
// one reads as the init's words alone.
func TestInitFailureKeepsItsErrno(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
	defer ours.Close()
	defer theirs.Close()
	for _, c := range []struct {
		err   error
		errno syscall.Errno
	}{
		{fmt.Errorf("starting claude inside the confinement: %w", os.NewSyscallError("fork/exec", syscall.ENOSPC)), syscall.ENOSPC},
		{errors.New("the launch names no program arguments"), 0},
	} {
		failed(theirs, c.err)
		r, _, err := receive(ours)
		if err != nil {
			t.Fatal(err)
		}
		got := r.failure()
		var se *os.SyscallError
		switch {
		case got.Error() != c.err.Error():
			t.Errorf("the failure reads %q, want %q", got, c.err)
		case c.errno == 0 && errors.As(got, &se):
			t.Errorf("%q carries a system call's failure it did not have: %v", got, se)
		case c.errno != 0 && (!errors.As(got, &se) || se.Syscall != "fork/exec" || !errors.Is(got, c.errno)):
			t.Errorf("%q lost its errno %v", got, c.errno)
		}
	}
}
