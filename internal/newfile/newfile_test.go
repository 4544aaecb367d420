package newfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteCreatesOnlyANewFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := Write(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("two"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second write: %v, want it refused as existing", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Errorf("the first file now holds %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
}

// TestAFailedWriteLeavesNoFile: with the file-size limit at one byte the
// write fails part-way (EFBIG; Go ignores SIGXFSZ), and the file that was
// created for it is gone again.
func TestAFailedWriteLeavesNoFile(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	err := Write(p, []byte("more than one byte"), 0o600)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err == nil {
		t.Fatal("the write past the size limit succeeded")
	}
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a half-written file was left at %s: %v", p, err)
	}
}

func TestAFailedCreateLeavesNoFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "f")
	if err := Write(p, []byte("x"), 0o600); err == nil {
		t.Fatal("a file was written under a directory that does not exist")
	}
}

// TestAStreamThatFailsLeavesNoFile: an error of the writer's own comes back
// as it is, and the file it had begun is gone.
func TestAStreamThatFailsLeavesNoFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	mine := errors.New("the input changed")
	err := Stream(p, 0o600, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return mine
	})
	if err != mine {
		t.Errorf("got %v, want the writer's own error", err)
	}
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a half-written file was left at %s: %v", p, err)
	}
}
