package confine

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OneWay makes one of a child's standard streams: a unix socket pair whose
// end theirs is the child's and ours the caller's, carrying data one way
// only, from the child when childWrites, else to it. Not a pipe: a process
// that may look at the child's /proc/<pid>/fd cannot open a socket there
// (ENXIO), so nothing the child starts can open the vendor's stdout anew
// and write into what metaharness records. The other way is shut down, so
// the child cannot read back what it wrote, nor write into its stdin. ours
// is non-blocking, so closing it ends a read or write in progress.
func OneWay(childWrites bool) (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("a socket pair for the child's stdio: %w", err)
	}
	how := unix.SHUT_RD
	if childWrites {
		how = unix.SHUT_WR
	}
	if err = unix.Shutdown(fds[0], how); err == nil {
		err = unix.SetNonblock(fds[0], true)
	}
	if err != nil {
		_ = unix.Close(fds[0])
		_ = unix.Close(fds[1])
		return nil, nil, fmt.Errorf("a socket pair for the child's stdio: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "stdio"), os.NewFile(uintptr(fds[1]), "child stdio"), nil
}
