// Package inputfile reads a file that comes from outside the run (a token
// file, a frame, a tool contract, an auditor's spec, a context file, git's
// index, a recorded stream) the one way every such file is read: opened
// without blocking, so that a named pipe cannot hang the run; held to be a
// regular file on the descriptor that was opened, so that nothing can be
// swapped in between a check and the read; and read through a limit, so
// that a file past its bound (or one that grows) costs no more than the
// bound. Kind names every other file type in one wording, for refusals.
//
// The errors name the path and what was wrong with it, never the content;
// callers put their flag and their remedy around them.
package inputfile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// ErrNotRegular and ErrTooLarge classify an *Error (errors.Is).
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("larger than allowed")
)

// Error is why a file was not read. Its text is the path followed by what
// was wrong ("x is a named pipe, not a regular file").
type Error struct {
	Path   string
	Detail string
	Err    error // ErrNotRegular, ErrTooLarge, or the system's error
}

func (e *Error) Error() string { return e.Path + " " + e.Detail }

func (e *Error) Unwrap() error { return e.Err }

// openFlags never block (a FIFO without a writer, a device) and never make
// a terminal ours.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// Open opens path for reading and returns it only when the opened
// descriptor is a regular file. A path that is plainly something else is
// refused before it is opened, since opening some devices does something.
func Open(path string) (*os.File, fs.FileInfo, error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path, fi.Mode())
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, &Error{Path: path, Detail: "cannot be opened (" + reason(err) + ")", Err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, &Error{Path: path, Detail: "cannot be examined (" + reason(err) + ")", Err: err}
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, fi.Mode())
	}
	return f, fi, nil
}

// Read is Open, then ReadFrom with at most max bytes.
func Read(path string, max int64) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadFrom(f, path, max)
}

// ReadFrom reads the whole of f, a descriptor its caller opened (beneath a
// directory, say), named path in errors. It refuses anything but a regular
// file, and a file past max bytes: by its size before reading, and by what
// the read finds (a file that grows), never reading more than max+1 bytes.
func ReadFrom(f *os.File, path string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, &Error{Path: path, Detail: "cannot be examined (" + reason(err) + ")", Err: err}
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode())
	}
	if fi.Size() > max {
		return nil, tooLarge(path, fi.Size(), max)
	}
	// Room for the whole file as it was stated, read in one go.
	var b bytes.Buffer
	b.Grow(int(fi.Size()) + bytes.MinRead)
	if _, err := b.ReadFrom(io.LimitReader(f, max+1)); err != nil {
		return nil, &Error{Path: path, Detail: "cannot be read (" + reason(err) + ")", Err: err}
	}
	data := b.Bytes()
	if int64(len(data)) > max {
		return nil, tooLarge(path, -1, max)
	}
	return data, nil
}

// Digest is the lowercase hex SHA-256 of the regular file at path, read
// as Read reads it (never waited on, at most max bytes) but streamed, for a
// file that is digested and not kept.
func Digest(path string, max int64) (string, error) {
	f, fi, err := Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi.Size() > max {
		return "", tooLarge(path, fi.Size(), max)
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, max+1))
	if err != nil {
		return "", &Error{Path: path, Detail: "cannot be read (" + reason(err) + ")", Err: err}
	}
	if n > max {
		return "", tooLarge(path, -1, max)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Kind names a file type the way every refusal does: "a directory", "a
// named pipe", "a socket", "a character device", "a block device", "a
// symbolic link", "a regular file", or "an irregular file".
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "an irregular file"
}

func notRegular(path string, m fs.FileMode) error {
	return &Error{Path: path, Detail: "is " + Kind(m) + ", not a regular file", Err: ErrNotRegular}
}

func tooLarge(path string, size, max int64) error {
	d := "is past its limit of " + strconv.FormatInt(max, 10) + " bytes" + inUnits(max)
	if size >= 0 {
		d = fmt.Sprintf("is %d bytes, past its limit of %d%s", size, max, inUnits(max))
	}
	return &Error{Path: path, Detail: d, Err: ErrTooLarge}
}

// inUnits says a limit the way people state it, " (4 MiB)", when it is a
// whole number of KiB, MiB or GiB; "" otherwise.
func inUnits(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf(" (%d %s)", n/u.size, u.name)
		}
	}
	return ""
}

// reason is a system error without the path it repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
