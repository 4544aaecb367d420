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
func (*Init) Listeners() Listeners              { return Listeners{} }
func (*Init) Pid() int                          { return 0 }
func (*Init) Signal(syscall.Signal) error       { return errNotLinux }
func (*Init) SignalVendor(syscall.Signal) error { return errNotLinux }
func (*Init) Wait() (*Exit, error)              { return nil, errNotLinux }
func Probe(string) (Controls, error)            { return Controls{}, errNotLinux }
func NestedProbe() int                          { return 2 }
func DelegatedCgroup() (string, string)         { return "", errNotLinux.Error() }
func ThisHost() (Host, error)                   { return Host{}, errNotLinux }
func Main() int                                 { return 2 }
func NonDumpable() error                        { return nil }
func Dumpable() bool                            { return true }
func CloseOnExec()                              {}
func ForgetEnv(name string) error               { return os.Unsetenv(name) }

// OneWay is a pipe off Linux, where nothing is confined.
func OneWay(childWrites bool) (ours, theirs *os.File, err error) {
	r, w, err := os.Pipe()
	if childWrites {
		return r, w, err
	}
	return w, r, err
}

// Host is empty off Linux: there is no answer worth keeping.
type Host struct{}

func PeerIs(int, net.Addr, net.Addr) error { return errNotLinux }

func (*Init) VendorPid() int { return 0 }
