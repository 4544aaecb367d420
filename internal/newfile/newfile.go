// Package newfile writes a file that must not exist yet. It is created
// exclusively, so an earlier record is never overwritten, and removed again
// when the write fails, so nothing half-written is left where a reader
// would take it for a whole one.
package newfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Write creates path with perm and writes data to it.
func Write(path string, data []byte, perm os.FileMode) error {
	return Stream(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Stream creates path with perm and lets write fill it, for what is written
// as it is made rather than held whole. An error of write's own comes back
// as it is; the file's own errors are wrapped with its path.
func Stream(path string, perm os.FileMode, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	fw := &fileWriter{f: f}
	werr := write(fw)
	cerr := f.Close()
	if werr == nil && cerr == nil {
		return nil
	}
	_ = os.Remove(path)
	if werr != nil && fw.err == nil {
		return werr
	}
	return fmt.Errorf("writing %s: %w", path, errors.Join(fw.err, cerr))
}

// fileWriter remembers the file's own write error, so that Stream tells it
// from an error of the caller's.
type fileWriter struct {
	f   *os.File
	err error
}

func (w *fileWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil && w.err == nil {
		w.err = err
	}
	return n, err
}
