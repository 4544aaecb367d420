package confine

import (
	"os"
	"syscall"
)

// What metaharness and its init say to each other. The init inherits two
// descriptors: ConfigFD, a pipe it reads one launch from to its end, and
// ControlFD, a SOCK_SEQPACKET socket it answers on, one report a packet.
const (
	ConfigFD  = 3
	ControlFD = 4
)

// maxConfig bounds the launch the init reads: arguments are each held to
// MAX_ARG_STRLEN already, and a launch is a few of them.
const maxConfig = 16 << 20

// launch is what metaharness sends the init.
type launch struct {
	Spec    Spec    `json:"spec"`
	Command Command `json:"command"`
}

// report is one packet from the init. A Listening report carries the
// listener's descriptor (SCM_RIGHTS) and the Role it was opened for.
type report struct {
	Listening string `json:"listening,omitempty"`
	Role      string `json:"role,omitempty"`
	Started   bool   `json:"started,omitempty"`
	Failed    string `json:"failed,omitempty"`
	// Syscall and Errno are the failed system call under Failed, when
	// one was (os.SyscallError), so that metaharness can tell a limit
	// reached inside (processes, namespaces) from a host that cannot.
	Syscall string `json:"syscall,omitempty"`
	Errno   int    `json:"errno,omitempty"`
	Exited  *Exit  `json:"exited,omitempty"`
}

// initFailure is the init's Failed report as an error: its words, and
// the system call's failure under them for errors.Is and errors.As.
type initFailure struct {
	msg   string
	cause *os.SyscallError
}

// The roles of the listeners the init opens (Spec.Listen, GateListen,
// DecisionListen).
const (
	roleModel    = "model"
	roleGate     = "gate"
	roleDecision = "decision"
)

func (f *initFailure) Error() string { return f.msg }

func (f *initFailure) Unwrap() error {
	if f.cause == nil {
		return nil
	}
	return f.cause
}

func (r report) failure() error {
	f := &initFailure{msg: r.Failed}
	if r.Errno != 0 {
		f.cause = os.NewSyscallError(r.Syscall, syscall.Errno(r.Errno)).(*os.SyscallError)
	}
	return f
}
