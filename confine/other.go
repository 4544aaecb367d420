//go:build !linux

package confine

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"syscall"
)

// errNotLinux is why nothing confines here: the namespaces are Linux's.
var errNotLinux = errors.New("confinement needs Linux namespaces, and this is not Linux")

// Init is never started off Linux.
type Init struct{ Cmd *exec.Cmd }

func New(*Spec, Command) (*Init, error)         { return nil, errNotLinux }
func (*Init) Start() error                      { return errNotLinux }
func (*Init) Listener() net.Listener            { return nil }
func (*Init) Pid() int                          { return 0 }
func (*Init) Signal(syscall.Signal) error       { return errNotLinux }
func (*Init) SignalVendor(syscall.Signal) error { return errNotLinux }
func (*Init) Wait() (*Exit, error)              { return nil, errNotLinux }
func Probe(string) error                        { return errNotLinux }
func ThisHost() (Host, error)                   { return Host{}, errNotLinux }
func Main() int                                 { return 2 }
func NonDumpable() error                        { return nil }
func Dumpable() bool                            { return true }
func CloseOnExec()                              {}
func ForgetEnv(name string) error               { return os.Unsetenv(name) }

// Host is empty off Linux: there is no answer worth keeping.
type Host struct{}
