// Package newfile writes a file that must not exist yet. It is created
// exclusively, so an earlier record is never overwritten, and removed again
// when the write fails, so nothing half-written is left where a reader
// would take it for a whole one.
package newfile

import (
	"errors"
	"fmt"
	"os"
)

// Write creates path with perm and writes data to it.
func Write(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Close()); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
