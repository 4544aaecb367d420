package confine

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// NonDumpable makes this process non-dumpable, as ssh-agent does: no process
// of the same uid may ptrace it or read its /proc/<pid>/environ, mem or fd,
// and it leaves no core. Only a holder of CAP_SYS_PTRACE over it still can,
// which is why a confined child never holds one.
func NonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making metaharness non-dumpable: %w", err)
	}
	return nil
}

// ForgetEnv removes name from this process's environment: from Go's copy
// (os.Unsetenv) and from the block the kernel shows as
// /proc/<pid>/environ, whose bytes it overwrites with NULs through
// /proc/self/mem at the range /proc/self/stat gives. Go copies each
// environment string out of that block when it starts (only os.Args point
// into the block, and they lie before env_start), so nothing of Go's reads
// the bytes it clears. Read the value first: after ForgetEnv it is gone.
func ForgetEnv(name string) error {
	if _, ok := os.LookupEnv(name); !ok {
		return nil
	}
	if err := os.Unsetenv(name); err != nil {
		return err
	}
	start, end, err := envRange()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("clearing %s from the environment block: %w", name, err)
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return fmt.Errorf("clearing %s from the environment block: %w", name, err)
	}
	prefix := []byte(name + "=")
	off := 0
	for _, kv := range bytes.SplitAfter(block, []byte{0}) {
		if bytes.HasPrefix(kv, prefix) {
			// Keep "NAME=", clear the value: the entry then reads as empty.
			value := len(kv) - len(prefix)
			if _, err := mem.WriteAt(make([]byte, value), int64(start+uint64(off+len(prefix)))); err != nil {
				return fmt.Errorf("clearing %s from the environment block: %w", name, err)
			}
		}
		off += len(kv)
	}
	return nil
}

// envRange is env_start and env_end from /proc/self/stat (fields 50, 51).
func envRange() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	// pid (comm) state …: comm may hold spaces, so count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/self/stat has no command field")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 51-3+1 {
		return 0, 0, fmt.Errorf("/proc/self/stat is short: no env_start/env_end")
	}
	if start, err = strconv.ParseUint(f[50-3], 10, 64); err == nil {
		end, err = strconv.ParseUint(f[51-3], 10, 64)
	}
	if err != nil || end < start {
		return 0, 0, fmt.Errorf("/proc/self/stat: unreadable env_start/env_end")
	}
	return start, end, nil
}

// Dumpable reports whether this process is dumpable (NonDumpable undoes it).
func Dumpable() bool {
	d, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return err != nil || d != 0
}

// CloseOnExec marks every descriptor from 3 up close-on-exec, so that
// nothing the caller handed this process (a --token-fd pipe not yet read,
// anything else left open) reaches a program it starts: those get only
// what is passed to them by name.
func CloseOnExec() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd") // kernels before 5.11
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
