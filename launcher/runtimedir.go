package launcher

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/exit"
)

// Every run's scratch tree lives in one per-user runtime directory, which
// every confined child's view hides whole (its own tree bound back), so
// that no run's child can read another run's files or write into its tree:
// $METAHARNESS_RUNTIME_DIR when set, else /tmp/metaharness-<uid>. It does
// not follow TMPDIR: runs started with different TMPDIRs would keep their
// trees apart, and each child's view would hide only its own run's
// directory. It is resolved to a path without symbolic links, so that the
// mount view names what the kernel sees.

// envRuntimeDir names the runtime directory instead of the default.
const envRuntimeDir = "METAHARNESS_RUNTIME_DIR"

// defaultRuntimeBase holds the default runtime directory: the same for
// every run of a user, whatever its environment.
const defaultRuntimeBase = "/tmp"

// scratchPrefix begins every scratch tree's name; scratchMark is the file
// that says a tree is metaharness's own, and scratchLock the one a live
// run holds locked.
const (
	scratchPrefix = "mh-"
	scratchMark   = ".metaharness-scratch"
	scratchLock   = ".lock"
)

// runtimeDir is the run's runtime directory, created 0700 if absent and
// refused unless it is a directory of this user's that no one else may
// enter.
func runtimeDir(env map[string]string) (string, error) {
	dir, from := env[envRuntimeDir], "$"+envRuntimeDir
	named := dir != ""
	if !named {
		base := defaultRuntimeBase
		if real, err := filepath.EvalSymlinks(base); err == nil {
			base = real
		}
		dir, from = filepath.Join(base, fmt.Sprintf("metaharness-%d", os.Geteuid())), "the default"
	}
	if !filepath.IsAbs(dir) {
		return "", exit.Refuse(RefuseScratchUnavailable, "%s %s is not an absolute path; name the runtime directory absolutely", from, dir)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", exit.Wrap(RefuseScratchUnavailable, err, "the runtime directory %s (%s) cannot be created; set %s to a writable directory, the same for every run of yours", dir, from, envRuntimeDir)
	}
	// A directory the caller names may be reached through a link; the
	// default's own name, in a directory every user may write, may not be
	// one: another user could have planted it.
	real := dir
	if named {
		var err error
		if real, err = filepath.EvalSymlinks(dir); err != nil {
			return "", exit.Wrap(RefuseScratchUnavailable, err, "the runtime directory %s", dir)
		}
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return "", exit.Wrap(RefuseScratchUnavailable, err, "the runtime directory %s", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", exit.Refuse(RefuseScratchUnavailable, "the runtime directory %s (%s) is not a 0700 directory of this user's, so other users could reach the runs' scratch trees; remove it, or set %s to a directory of your own", dir, from, envRuntimeDir)
	}
	return real, nil
}

// scratch is one run's tree, marked as metaharness's own and locked for
// the run's life: a run that dies, even by SIGKILL, releases the lock, and
// the next run reclaims the tree (reclaimScratch).
type scratch struct {
	root string
	lock *os.File
}

// newScratch makes a scratch tree in dir, marks it and locks it.
func newScratch(dir string) (*scratch, error) {
	root, err := os.MkdirTemp(dir, scratchPrefix)
	if err != nil {
		return nil, exit.Wrap(RefuseScratchUnavailable, err, "the scratch tree cannot be created in %s; set %s to a writable directory", dir, envRuntimeDir)
	}
	s := &scratch{root: root}
	// Locked before it is marked: a marked tree is always a locked one
	// while its run lives.
	if s.lock, err = lockFile(filepath.Join(root, scratchLock), os.O_CREATE, unix.LOCK_EX); err != nil {
		_ = s.remove()
		return nil, exit.Wrap(RefuseScratchUnavailable, err, "locking the scratch tree %s", root)
	}
	if err := os.WriteFile(filepath.Join(root, scratchMark), nil, 0o600); err != nil {
		_ = s.remove()
		return nil, exit.Wrap(RefuseScratchUnavailable, err, "marking the scratch tree %s", root)
	}
	return s, nil
}

// remove removes the tree and releases its lock, in that order, so that no
// other run reclaims it while it is being removed.
func (s *scratch) remove() error {
	err := os.RemoveAll(s.root)
	if s.lock != nil {
		_ = s.lock.Close()
	}
	return err
}

// lockFile opens path close-on-exec (with flag, os.O_CREATE or 0) and
// takes a flock on it, without waiting when how has LOCK_NB.
func lockFile(path string, flag, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|flag|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// reclaimScratch removes the trees in dir that a dead run left: a
// directory of this user's named as scratch trees are, holding the mark,
// whose lock no run holds. Anything else is left alone. It reports what it
// removed.
func reclaimScratch(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		root := filepath.Join(dir, e.Name())
		if !strings.HasPrefix(e.Name(), scratchPrefix) || !e.IsDir() || !ownDir(root) {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(root, scratchMark)); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		// The lock file is never created here: a marked tree without one
		// is being removed by its run (the lock still held) or was left
		// half removed, and is removed alongside; a file made in it would
		// only fail its owner's removal.
		lock, err := lockFile(filepath.Join(root, scratchLock), 0, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // a live run holds it, or it is not ours to lock
		}
		if os.RemoveAll(root) == nil {
			removed = append(removed, root)
		}
		if lock != nil {
			_ = lock.Close()
		}
	}
	return removed
}

// ownDir reports a real directory (not a link) of this user's.
func ownDir(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
