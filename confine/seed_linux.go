package confine

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// seeds is the one tmpfs the Seeded directories share, detached (fsmount):
// each directory gets a subdirectory of it, seeded with a copy of the
// original's content and then bound over the original, so that what the
// child writes in any of them counts against one bound.
type seeds struct {
	fd int // the detached tmpfs, -1 when no directory is seeded
	n  int // subdirectories made
}

// newSeeds makes the shared tmpfs of size bytes (0: the kernel's default)
// when steps seed a directory.
func newSeeds(steps []step, size int64) (*seeds, error) {
	s := &seeds{fd: -1}
	for _, st := range steps {
		if st.kind != stepSeed {
			continue
		}
		fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("the seeded directories' tmpfs: %w", err)
		}
		defer unix.Close(fs)
		opts := [][2]string{{"mode", "0755"}}
		if size > 0 {
			opts = append(opts, [2]string{"size", strconv.FormatInt(size, 10)}, [2]string{"nr_inodes", strconv.FormatInt(max(size/4096, 1024), 10)})
		}
		for _, o := range opts {
			if err := unix.FsconfigSetString(fs, o[0], o[1]); err != nil {
				return nil, fmt.Errorf("the seeded directories' tmpfs: %s=%s: %w", o[0], o[1], err)
			}
		}
		if err := unix.FsconfigCreate(fs); err != nil {
			return nil, fmt.Errorf("the seeded directories' tmpfs: %w", err)
		}
		if s.fd, err = unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV); err != nil {
			return nil, fmt.Errorf("the seeded directories' tmpfs: %w", err)
		}
		return s, nil
	}
	return s, nil
}

func (s *seeds) close() {
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
	}
}

// seed gives st's directory a subdirectory of the tmpfs holding a copy of
// its original (st.src) and binds it over st.path.
func (s *seeds) seed(st step) error {
	s.n++
	name := strconv.Itoa(s.n)
	var fi unix.Stat_t
	if err := unix.Fstat(st.src, &fi); err != nil {
		return err
	}
	if err := unix.Mkdirat(s.fd, name, fi.Mode&0o7777); err != nil {
		return err
	}
	dir, err := unix.Openat(s.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	err = copyTree(st.src, dir, 0)
	_ = unix.Close(dir)
	if err != nil {
		return err
	}
	clone, err := unix.OpenTree(s.fd, name, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(clone)
	return attach(clone, st.path, true)
}

// copyTree copies the directory from into the directory to: directories,
// regular files and symbolic links, with their modes; anything else (a
// socket, a fifo) is left out. depth bounds the walk.
func copyTree(from, to int, depth int) error {
	if depth > 64 {
		return fmt.Errorf("nested more than 64 directories deep")
	}
	rd, err := unix.Openat(from, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(rd), "seed")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		var fi unix.Stat_t
		if err := unix.Fstatat(rd, n, &fi, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return err
		}
		mode := fi.Mode & 0o7777
		switch fi.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			if err := unix.Mkdirat(to, n, mode); err != nil {
				return err
			}
			src, err := unix.Openat(rd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			dst, err := unix.Openat(to, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err == nil {
				err = copyTree(src, dst, depth+1)
				_ = unix.Close(dst)
			}
			_ = unix.Close(src)
			if err != nil {
				return err
			}
		case unix.S_IFREG:
			if err := copyFile(rd, to, n, mode); err != nil {
				return err
			}
		case unix.S_IFLNK:
			buf := make([]byte, unix.PathMax)
			k, err := unix.Readlinkat(rd, n, buf)
			if err != nil {
				return err
			}
			if err := unix.Symlinkat(string(buf[:k]), to, n); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(fromDir, toDir int, name string, mode uint32) error {
	src, err := unix.Openat(fromDir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	in := os.NewFile(uintptr(src), name)
	defer in.Close()
	dst, err := unix.Openat(toDir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(dst), name)
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	if err := unix.Fchmod(dst, mode); err != nil { // past the umask
		_ = out.Close()
		return err
	}
	return out.Close()
}
