package launcher

import (
	"errors"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// contextOpenat2 is openat2(2); tests replace it to drive the fallback walk.
var contextOpenat2 = unix.Openat2

// contextOpenFlags open the file itself: read-only, never following a
// symbolic link in the last component, and without blocking on a FIFO or
// taking a terminal (the file type is checked after the open).
const contextOpenFlags = unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY

// contextOpenRetries bounds the retries of openat2 when it reports EAGAIN (a
// rename or mount raced the RESOLVE_BENEATH lookup).
const contextOpenRetries = 8

// errContextSymlink: the path is, or passes through, a symbolic link.
var errContextSymlink = errors.New("the path is or passes through a symbolic link")

// errContextEscapes: resolving the path would leave the directory.
var errContextEscapes = errors.New("the path resolves outside the directory")

// contextOpenBeneath opens rel (a clean, relative, slash-separated path with
// no "..") beneath the directory dirfd without following any symbolic link.
// It uses openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS and falls back to
// a component-by-component walk with O_NOFOLLOW where the kernel lacks
// openat2 (ENOSYS). It returns errContextSymlink or errContextEscapes for
// those refusals and the errno otherwise.
func contextOpenBeneath(dirfd int, rel string) (int, error) {
	how := unix.OpenHow{
		Flags:   contextOpenFlags,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range contextOpenRetries {
		fd, err := contextOpenat2(dirfd, rel, &how)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS):
			return contextOpenWalk(dirfd, rel)
		case errors.Is(err, unix.ELOOP):
			return -1, errContextSymlink
		case errors.Is(err, unix.EXDEV):
			return -1, errContextEscapes
		default:
			return -1, err
		}
	}
	return -1, unix.EAGAIN
}

// contextOpenWalk opens rel one component at a time, each directory with
// O_DIRECTORY|O_NOFOLLOW and the last component with O_NOFOLLOW, so no
// symbolic link is ever followed; it refuses a ".." component itself, so
// nothing outside dirfd can be reached whatever the caller checked.
func contextOpenWalk(dirfd int, rel string) (int, error) {
	parts := strings.Split(rel, "/")
	if strings.HasPrefix(rel, "/") || slices.Contains(parts, "..") {
		return -1, errContextEscapes
	}
	cur := dirfd
	defer func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}()
	for _, part := range parts[:len(parts)-1] {
		fd, err := contextOpenStep(cur, part, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_DIRECTORY|unix.O_NOFOLLOW)
		if err != nil {
			return -1, err
		}
		if cur != dirfd {
			unix.Close(cur)
		}
		cur = fd
	}
	return contextOpenStep(cur, parts[len(parts)-1], contextOpenFlags)
}

// contextOpenStep is openat(2) of one component, retried on EINTR. A failure
// is classified by looking at the component without following it, because
// O_NOFOLLOW reports a link as ELOOP or, beside O_DIRECTORY, as ENOTDIR.
func contextOpenStep(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flags, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			var st unix.Stat_t
			if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, errContextSymlink
			}
		}
		return fd, err
	}
}
