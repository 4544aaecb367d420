package confine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Kinds of step in the mount view, in the order they apply at one depth:
// what hides a directory comes before what binds something back into it.
const (
	stepHide = iota
	stepFresh
	stepLink
	stepBind
	stepSeed
	stepCover
)

// step is one change to the mount view at one path.
type step struct {
	kind     int
	path     string
	writable bool   // stepBind
	dir      bool   // stepBind, stepCover: the path is a directory
	link     string // stepLink: the link's text
	from     string // stepCover: the file it is covered with, "" an empty one
	src      int    // stepBind, stepSeed, stepCover of a file: the detached clone, -1 none
}

// setUp gives the init's mount namespace the view s describes. Every source
// is cloned (open_tree) before anything is mounted over it, so a directory
// bound back from under a hidden one is the real one.
func setUp(s *Spec) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mount propagation private: %w", err)
	}
	steps, err := plan(s)
	if err != nil {
		return err
	}
	defer func() {
		for _, st := range steps {
			if st.src >= 0 {
				_ = unix.Close(st.src)
			}
		}
	}()
	devices, err := cloneDevices()
	if err != nil {
		return err
	}
	seeds, err := newSeeds(steps, s.FreshBytes)
	if err != nil {
		return err
	}
	defer seeds.close()
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making / read-only: %w", err)
	}
	// /proc after /, so it stays writable (a sandbox nested inside, such as
	// Codex's bubblewrap, must be able to mount its own).
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting the child's own /proc: %w", err)
	}
	if err := mountDev(devices, s.ShmBytes); err != nil {
		return err
	}
	var hidden []string
	for _, st := range steps {
		switch st.kind {
		case stepHide, stepFresh:
			if isHidden(steps, st) {
				continue
			}
			size := int64(0)
			if st.kind == stepFresh {
				size = s.FreshBytes
			}
			if err := mountTmpfs(st.path, st.kind == stepFresh, size); err != nil {
				return err
			}
			if st.kind == stepHide {
				hidden = append(hidden, st.path)
			}
		case stepLink:
			if _, err := os.Lstat(st.path); err == nil {
				continue // still there: it was never hidden
			}
			if err := os.MkdirAll(filepath.Dir(st.path), 0o755); err != nil {
				return fmt.Errorf("recreating the link %s: %w", st.path, err)
			}
			if err := os.Symlink(st.link, st.path); err != nil {
				return fmt.Errorf("recreating the link %s: %w", st.path, err)
			}
		case stepBind:
			if err := attach(st.src, st.path, st.dir); err != nil {
				return fmt.Errorf("binding %s back: %w", st.path, err)
			}
		case stepSeed:
			if err := seeds.seed(st); err != nil {
				return fmt.Errorf("putting %s on its bounded tmpfs: %w", st.path, err)
			}
		case stepCover:
			if isHidden(steps, st) {
				continue
			}
			if st.dir {
				if err := mountTmpfs(st.path, false, 0); err != nil {
					return err
				}
				hidden = append(hidden, st.path)
				continue
			}
			if err := attach(st.src, st.path, false); err != nil {
				return fmt.Errorf("covering %s: %w", st.path, err)
			}
		}
	}
	for _, p := range hidden {
		if err := readOnly(p); err != nil {
			return err
		}
	}
	return readOnly("/dev")
}

// isHidden reports whether st's path already lies in a directory an
// earlier step hid, with nothing bound back between. Steps are in the order
// they apply, so at one depth the later one is on top.
func isHidden(steps []step, st step) bool {
	deepest := -1
	hides := false
	for _, o := range steps {
		if o.path == st.path || !within(st.path, o.path) || o.kind == stepLink || o.kind == stepCover && !o.dir {
			continue
		}
		if d := depth(o.path); d >= deepest {
			deepest, hides = d, o.kind != stepBind && o.kind != stepSeed
		}
	}
	return hides
}

// plan resolves s against the caller's view, still untouched, into steps
// sorted by depth, and clones every source.
func plan(s *Spec) ([]step, error) {
	var steps []step
	add := func(st step) { st.src = -1; steps = append(steps, st) }
	for _, p := range s.Hidden {
		if real, ok := existing(p); ok {
			add(step{kind: stepHide, path: real})
		}
	}
	for _, p := range s.Fresh {
		if real, ok := existing(p); ok {
			add(step{kind: stepFresh, path: real})
		}
	}
	for _, p := range s.ReadOnly {
		links, real, err := hops(p)
		if err != nil {
			continue // gone since it was planned: nothing to bind
		}
		for _, l := range links {
			add(l)
		}
		add(step{kind: stepBind, path: real})
	}
	// A writable path named through a link (a --cwd that is one) keeps the
	// link, as a read-only one does, so the child can enter it by its name.
	for _, p := range s.Writable {
		links, real, err := hops(p)
		if err != nil {
			continue
		}
		for _, l := range links {
			add(l)
		}
		add(step{kind: stepBind, path: real, writable: true})
	}
	for _, p := range s.Seeded {
		if real, ok := existing(p); ok {
			add(step{kind: stepSeed, path: real, dir: true})
		}
	}
	for _, pattern := range s.Covered {
		matches, _ := filepath.Glob(pattern)
		for _, m := range matches {
			if real, ok := existing(m); ok {
				add(step{kind: stepCover, path: real})
			}
		}
	}
	for _, r := range s.Replaced {
		if real, ok := existing(r.Path); ok {
			add(step{kind: stepCover, path: real, from: r.Source})
		}
	}
	sort.SliceStable(steps, func(i, j int) bool {
		a, b := steps[i], steps[j]
		if (a.kind == stepCover) != (b.kind == stepCover) {
			return b.kind == stepCover
		}
		if depth(a.path) != depth(b.path) {
			return depth(a.path) < depth(b.path)
		}
		return a.kind < b.kind
	})
	for i := range steps {
		st := &steps[i]
		if st.kind == stepSeed {
			// The original, whose content the tmpfs is seeded with.
			fd, err := unix.OpenTree(unix.AT_FDCWD, st.path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
			if err != nil {
				return nil, fmt.Errorf("seeding %s: cloning it: %w", st.path, err)
			}
			st.src = fd
			continue
		}
		if st.kind != stepBind && st.kind != stepCover {
			continue
		}
		fi, err := os.Stat(st.path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", st.path, err)
		}
		st.dir = fi.IsDir()
		if st.kind == stepCover && st.dir {
			if st.from != "" {
				return nil, fmt.Errorf("replacing %s: it is a directory, and only a file is replaced", st.path)
			}
			continue
		}
		src, what := st.path, "binding"
		switch {
		case st.from != "":
			src, what = st.from, "replacing"
		case st.kind == stepCover:
			src, what = os.DevNull, "covering"
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return nil, fmt.Errorf("%s %s: cloning %s: %w", what, st.path, src, err)
		}
		st.src = fd
		if st.kind == stepBind && !st.writable || st.from != "" {
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
				return nil, fmt.Errorf("making %s read-only: %w", st.path, err)
			}
		}
	}
	return steps, nil
}

// existing resolves p's symbolic links; ok is false when p does not exist.
func existing(p string) (string, bool) {
	real, err := filepath.EvalSymlinks(p)
	return real, err == nil
}

// hops follows p's chain of symbolic links: a stepLink for each link on the
// way (its directory resolved, the link itself kept) and the file at the end.
func hops(p string) ([]step, string, error) {
	var links []step
	for range 40 { // the kernel's own limit on links in one lookup
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return nil, "", err
		}
		p = filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			return links, p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return nil, "", err
		}
		links = append(links, step{kind: stepLink, path: p, link: target, src: -1})
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		p = target
	}
	return nil, "", fmt.Errorf("%s: too many levels of symbolic links", p)
}

func depth(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(filepath.Clean(p), "/")
}

func within(p, dir string) bool {
	return dir == "/" || strings.HasPrefix(p, dir+"/")
}

// attach moves the detached clone src onto path, making path (a directory,
// or an empty file) first when an earlier tmpfs hid it.
func attach(src int, path string, dir bool) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if dir {
			err = os.Mkdir(path, 0o755)
		} else {
			var f *os.File
			if f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444); err == nil {
				err = f.Close()
			}
		}
		if err != nil {
			return err
		}
	}
	return unix.MoveMount(src, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// mountTmpfs mounts an empty tmpfs on path, bounded to size bytes (and an
// inode per 4 KiB of it, so that empty files cannot stand in for data)
// when size is not 0.
func mountTmpfs(path string, writable bool, size int64) error {
	opts := "mode=0755"
	if writable {
		opts = "mode=1777"
	}
	if size > 0 {
		opts += fmt.Sprintf(",size=%d,nr_inodes=%d", size, max(size/4096, 1024))
	}
	if err := unix.Mount("tmpfs", path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mounting an empty directory over %s: %w", path, err)
	}
	return nil
}

func readOnly(path string) error {
	if err := unix.MountSetattr(unix.AT_FDCWD, path, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making %s read-only: %w", path, err)
	}
	return nil
}

// devNodes are the devices the child's /dev holds: what programs open
// without asking. Disks, the console and the rest of the caller's /dev are
// not among them.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// cloneDevices clones each of devNodes that exists, before /dev is
// replaced.
func cloneDevices() (map[string]int, error) {
	out := map[string]int{}
	for _, n := range devNodes {
		fd, err := unix.OpenTree(unix.AT_FDCWD, "/dev/"+n, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cloning /dev/%s: %w", n, err)
		}
		out[n] = fd
	}
	return out, nil
}

// mountDev replaces /dev by a tmpfs holding the cloned devices, a private
// devpts, a fresh /dev/shm (of shm bytes, 0 unbounded) and the usual links.
func mountDev(devices map[string]int, shm int64) error {
	defer func() {
		for _, fd := range devices {
			_ = unix.Close(fd)
		}
	}()
	if err := mountTmpfs("/dev", false, 0); err != nil {
		return err
	}
	for n, fd := range devices {
		if err := attach(fd, "/dev/"+n, false); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", n, err)
		}
	}
	for _, d := range []string{"/dev/pts", "/dev/shm"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("mounting the child's own /dev/pts: %w", err)
	}
	if err := mountTmpfs("/dev/shm", true, shm); err != nil {
		return err
	}
	for link, target := range map[string]string{
		"/dev/ptmx": "pts/ptmx", "/dev/fd": "/proc/self/fd",
		"/dev/stdin": "/proc/self/fd/0", "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	return nil
}
