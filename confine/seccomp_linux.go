package confine

import (
	"fmt"
	"runtime"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// denySyscalls makes names fail with EPERM for this process, every thread
// of it, and everything it starts from now on, and sets no_new_privs, which
// a filter needs and the kernel then keeps across every exec: nothing
// started may gain privileges that would lift it.
//
// The filter is go-seccomp-bpf's: it checks the architecture and denies the
// x32 ABI whole, so a listed call cannot be reached by another number. The
// library lets other architectures through, so the host's compat ABI
// (i386 on amd64, arm on arm64, where the kernel has it) gets a second
// filter of its own for the same names.
func denySyscalls(names []string) error {
	if len(names) == 0 {
		return nil
	}
	// no_new_privs is set on the calling thread and the filter synced from
	// it to every other (TSYNC), which carries no_new_privs along; the
	// goroutine must not move between the two.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls:      []seccomp.SyscallGroup{{Action: seccomp.ActionErrno, Names: names}},
		},
	})
	if err != nil {
		return fmt.Errorf("installing the seccomp filter that denies %v: %w", names, err)
	}
	if err := denyCompat(names); err != nil {
		return fmt.Errorf("installing the seccomp filter that denies %v to the compat ABI: %w", names, err)
	}
	return nil
}

// compatArch is the second system call ABI this architecture's kernel may
// run a process in, nil when it has none the library knows.
func compatArch() *arch.Info {
	switch runtime.GOARCH {
	case "amd64":
		return arch.I386
	case "arm64":
		return arch.ARM
	}
	return nil
}

// denyCompat installs compatFilter for this architecture's compat ABI.
func denyCompat(names []string) error {
	a := compatArch()
	if a == nil {
		return nil
	}
	prog := compatFilter(a, names)
	if prog == nil {
		return nil
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	tid, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filter)
	switch {
	case errno != 0:
		return errno
	case tid != 0: // TSYNC names the thread it could not bring along
		return fmt.Errorf("thread %d could not take the filter", tid)
	}
	return nil
}

// compatFilter is a seccomp program under which, for a process in a's ABI,
// names fail with EPERM, and everything else (any call in any other ABI)
// passes on to the other filters; nil when a has none of names.
func compatFilter(a *arch.Info, names []string) []bpf.Instruction {
	var nrs []uint32
	for _, n := range names {
		if nr, ok := a.SyscallNames[n]; ok {
			nrs = append(nrs, uint32(nr))
		}
	}
	if len(nrs) == 0 {
		return nil
	}
	allow := bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW}
	deny := bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)}
	// struct seccomp_data: the call's number at 0, the ABI at 4.
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.ID), SkipFalse: uint8(2*len(nrs) + 1)},
		bpf.LoadAbsolute{Off: 0, Size: 4},
	}
	for _, nr := range nrs {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: nr, SkipTrue: 1}, deny)
	}
	return append(prog, allow)
}
