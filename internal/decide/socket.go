package decide

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// maxSunPath is the longest path a sockaddr_un holds: 108 bytes, one of
// them the terminating NUL.
const maxSunPath = 107

// Listen listens on a unix socket at path, an absolute path of any length.
// A path past what a socket address holds is bound through the directory
// that holds it (/proc/self/fd/N/name); the listener's Addr is still path,
// and Close removes the socket there.
func Listen(path string) (net.Listener, error) {
	if err := absolute(path); err != nil {
		return nil, err
	}
	if len(path) <= maxSunPath {
		return net.Listen("unix", path)
	}
	dir, name := filepath.Split(path)
	fd, short, err := throughDir(dir, name)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", short)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the short name dies with the directory's descriptor
	return &dirListener{UnixListener: ul, dir: fd, name: name, addr: &net.UnixAddr{Name: path, Net: "unix"}}, nil
}

// dial connects to the unix socket at path, as Listen binds it.
func dial(ctx context.Context, path string) (net.Conn, error) {
	if err := absolute(path); err != nil {
		return nil, err
	}
	var d net.Dialer
	if len(path) <= maxSunPath {
		return d.DialContext(ctx, "unix", path)
	}
	dir, name := filepath.Split(path)
	fd, short, err := throughDir(dir, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	return d.DialContext(ctx, "unix", short)
}

func absolute(path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("the decision socket %q is not an absolute path; a run's socket is in its scratch tree, named from the root", path)
	}
	return nil
}

// throughDir opens dir and names name inside it through the descriptor,
// a path short enough for a socket address whatever dir's length.
func throughDir(dir, name string) (int, string, error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", fmt.Errorf("opening the decision socket's directory %s: %w", dir, err)
	}
	short := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + name
	if len(short) > maxSunPath {
		_ = unix.Close(fd)
		return -1, "", fmt.Errorf("the decision socket's name %q is longer than a unix socket address holds even through its directory (%d bytes at most)", name, maxSunPath)
	}
	return fd, short, nil
}

// dirListener is a listener bound through a directory's descriptor, held
// until Close.
type dirListener struct {
	*net.UnixListener
	dir   int
	name  string
	addr  net.Addr
	close sync.Once
	err   error
}

func (l *dirListener) Addr() net.Addr { return l.addr }

func (l *dirListener) Close() error {
	l.close.Do(func() {
		// The name goes first, as net.UnixListener's does: whoever sees
		// Accept fail sees the socket gone.
		_ = unix.Unlinkat(l.dir, l.name, 0)
		l.err = l.UnixListener.Close()
		_ = unix.Close(l.dir)
	})
	return l.err
}
