package contextfile

import (
	"errors"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// openat2 is openat2(2); tests replace it to drive the fallback walk.
var openat2 = unix.Openat2

// openFlags open the file itself: read-only, never following a
// symbolic link in the last component, and without blocking on a FIFO or
// taking a terminal (the file type is checked after the open).
const openFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY

// openRetries bounds the retries of openat2 when it reports EAGAIN (a
// rename or mount raced the RESOLVE_BENEATH lookup).
const openRetries = 8

// errSymlink: the path is, or passes through, a symbolic link.
var errSymlink = errors.New("the path is or passes through a symbolic link")

// errEscapes: resolving the path would leave the directory.
var errEscapes = errors.New("the path resolves outside the directory")

// openBeneath opens rel (a clean, relative, slash-separated path with
// no "..") beneath the directory dirfd without following any symbolic link.
// It uses openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS and falls back to
// a component-by-component walk with O_NOFOLLOW where the kernel lacks
// openat2 (ENOSYS). It returns errSymlink or errEscapes for
// those refusals and the errno otherwise.
func openBeneath(dirfd int, rel string) (int, error) {
	how := unix.OpenHow{
		Flags:   openFlags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range openRetries {
		fd, err := openat2(dirfd, rel, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS):
			return openWalk(dirfd, rel)
		case errors.Is(err, unix.ELOOP):
			return -1, errSymlink
		case errors.Is(err, unix.EXDEV):
			return -1, errEscapes
		default:
			return -1, err
		}
	}
	return -1, unix.EAGAIN
}

// openWalk opens rel one component at a time, each directory with
// O_DIRECTORY|O_NOFOLLOW and the last component with O_NOFOLLOW, so no
// symbolic link is ever followed; it refuses a ".." component itself, so
// nothing outside dirfd can be reached whatever the caller checked.
func openWalk(dirfd int, rel string) (int, error) {
	parts := strings.Split(rel, "/")
	if strings.HasPrefix(rel, "/") || slices.Contains(parts, "..") {
		return -1, errEscapes
	}
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for _, part := range parts[:len(parts)-1] {
		fd, err := openStep(cur, part, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = fd
	}
	return openStep(cur, parts[len(parts)-1], openFlags)
}

// openStep is openat(2) of one component, retried on EINTR. A failure
// is classified by looking at the component without following it, because
// O_NOFOLLOW reports a link as ELOOP or, beside O_DIRECTORY, as ENOTDIR.
func openStep(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			var st unix.Stat_t
			if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, errSymlink
			}
		}
		return fd, err
	}
}
