package mcpserve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/inputfile"
)

// workspace is the tree the performers act in. Every path is resolved
// beneath it through an os.Root: each component is opened relative to a
// directory descriptor without following a symbolic link, and a link is
// followed only while it stays inside the tree (the user-space equivalent
// of openat2 RESOLVE_BENEATH, immune to a link or rename swapped in midway).
type workspace struct {
	dir      string
	root     *os.Root
	writable bool
}

func openWorkspace(dir string, writable bool) (*workspace, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, exit.Wrap(RefuseWorkspaceUnusable, err, "--workspace %s", dir)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, exit.Refuse(RefuseWorkspaceUnusable, "--workspace %s cannot be opened as a directory (%v); name an existing directory", dir, errors.Unwrap(err))
	}
	return &workspace{dir: abs, root: root, writable: writable}, nil
}

func (w *workspace) Close() error { return w.root.Close() }

// rel checks a path as the model wrote it and returns it cleaned: relative,
// no .. component, no NUL. "" stands for the workspace itself.
func rel(entry, field, p string) (string, *CallError) {
	if p == "" {
		return ".", nil
	}
	if strings.ContainsRune(p, 0) {
		return "", callErr(entry, field, "holds a NUL byte")
	}
	if filepath.IsAbs(p) {
		return "", callErr(entry, field, "is the absolute path %q; give a path relative to the workspace", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return "", callErr(entry, field, "%q has a .. component; give a path beneath the workspace without ..", p)
		}
	}
	return filepath.Clean(p), nil
}

// fsError turns a failure of the file system into the isError text, naming
// the entry and the field the path came from.
func fsError(entry, field, p string, err error) *CallError {
	var errno syscall.Errno
	errors.As(err, &errno)
	switch {
	case strings.Contains(err.Error(), "path escapes from parent"), errno == syscall.EXDEV:
		return callErr(entry, field, "%q leads out of the workspace (through a symbolic link or ..); paths stay beneath the workspace", p)
	case errors.Is(err, fs.ErrNotExist):
		return callErr(entry, field, "%q names nothing in the workspace", p)
	case errno == syscall.ELOOP:
		return callErr(entry, field, "%q goes through too many symbolic links", p)
	case errno == syscall.ENOTDIR:
		return callErr(entry, field, "%q goes through something that is not a directory", p)
	case errors.Is(err, fs.ErrPermission):
		return callErr(entry, field, "%q is not permitted (%v)", p, errno)
	}
	return callErr(entry, field, "%q: %v", p, unwrapPath(err))
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openRegular opens a regular file for reading beneath the workspace. It
// opens without blocking so that a FIFO swapped in is refused, not waited on.
func (w *workspace) openRegular(entry, field, p string) (*os.File, fs.FileInfo, *CallError) {
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fsError(entry, field, p, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError(entry, field, p, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, callErr(entry, field, "%q is %s, not a regular file", p, inputfile.Kind(st.Mode()))
	}
	return f, st, nil
}

// replaceFile writes data as the file at p: parents created beneath the
// workspace, a temporary file beside it, then a rename over the name. A
// rename never follows a link at the name, so a link swapped in is replaced,
// not written through.
func (w *workspace) replaceFile(entry, field, p string, data []byte) *CallError {
	if !w.writable {
		return callErr(entry, "", "writes, and this workspace is read-only (start mcp-serve with --writable)")
	}
	if p == "." {
		return callErr(entry, field, "names the workspace itself, not a file")
	}
	dir := filepath.Dir(p)
	if dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return fsError(entry, field, p, err)
		}
	}
	mode := fs.FileMode(0o644)
	switch st, err := w.root.Lstat(p); {
	case err == nil && st.Mode()&fs.ModeSymlink != 0:
		return callErr(entry, field, "%q is a symbolic link; write the file it points to by its own path", p)
	case err == nil && !st.Mode().IsRegular():
		return callErr(entry, field, "%q is %s, not a regular file", p, inputfile.Kind(st.Mode()))
	case err == nil:
		mode = st.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return fsError(entry, field, p, err)
	}
	tmp, f, err := w.createTemp(dir)
	if err != nil {
		return fsError(entry, field, p, err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(mode), f.Close()); err != nil {
		_ = w.root.Remove(tmp)
		return fsError(entry, field, p, err)
	}
	if err := w.root.Rename(tmp, p); err != nil {
		_ = w.root.Remove(tmp)
		return fsError(entry, field, p, err)
	}
	return nil
}

func (w *workspace) createTemp(dir string) (string, *os.File, error) {
	for i := 0; ; i++ {
		name := filepath.Join(dir, fmt.Sprintf(".metaharness-write-%s", randomHex(8)))
		f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil || !errors.Is(err, fs.ErrExist) || i == 8 {
			return name, f, err
		}
	}
}
