package inputfile

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRefusesWhatIsNotARegularFile: a named pipe with no writer (which a
// blocking open would wait on for good), a directory, a socket, a device
// and a link to one are refused at once, each named the same way Kind
// names it.
func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	zero := filepath.Join(dir, "index")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo: "is a named pipe, not a regular file",
		dir:  "is a directory, not a regular file",
		sock: "is a socket, not a regular file",
		zero: "is a character device, not a regular file",
	} {
		_, err := Read(path, 1<<30)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrNotRegular) || err.Error() != path+" "+want {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}

// TestSizeBound: a file at the bound is read whole; one byte past it is
// refused by its size before anything is read.
func TestSizeBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("a"), 64), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(p, 64); err != nil || len(b) != 64 {
		t.Fatalf("at the bound: %d bytes, %v", len(b), err)
	}
	_, err := Read(p, 63)
	if !errors.Is(err, ErrTooLarge) || !strings.HasSuffix(err.Error(), "is 64 bytes, past its limit of 63") {
		t.Fatalf("past the bound: %v", err)
	}
}

// TestReadFromRefusesADescriptorThatIsNotRegular: the check is on the
// descriptor itself, whatever its name said.
func TestReadFromRefusesADescriptorThatIsNotRegular(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := ReadFrom(r, "the pipe", 10); !errors.Is(err, ErrNotRegular) || err.Error() != "the pipe is a named pipe, not a regular file" {
		t.Fatalf("%v", err)
	}
}

// TestMissing names the path and the system's reason, once.
func TestMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "absent")
	_, err := Read(p, 10)
	if !errors.Is(err, os.ErrNotExist) || err.Error() != p+" cannot be opened (no such file or directory)" {
		t.Fatalf("%v", err)
	}
}

// FuzzRead: whatever a regular file holds and whatever the bound, Read
// returns exactly the content when it fits and ErrTooLarge when it does not.
func FuzzRead(f *testing.F) {
	f.Add([]byte(""), int64(0))
	f.Add([]byte("token\n"), int64(6))
	f.Add([]byte("token\n"), int64(5))
	f.Add(bytes.Repeat([]byte{0}, 4097), int64(4096))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, max int64) {
		if max < 0 {
			max = -max
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p, max)
		switch {
		case int64(len(data)) <= max && (err != nil || !bytes.Equal(got, data)):
			t.Fatalf("%d bytes under a bound of %d: %v, %d bytes back", len(data), max, err, len(got))
		case int64(len(data)) > max && !errors.Is(err, ErrTooLarge):
			t.Fatalf("%d bytes past a bound of %d: %v", len(data), max, err)
		}
	})
}
