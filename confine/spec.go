package confine

import (
	"fmt"
	"path/filepath"
)

// Namespace names, as a Spec lists them.
const (
	User  = "user"
	PID   = "pid"
	Mount = "mount"
	Net   = "net"
)

// InitArgs are the init's arguments after its program's name, and
// NestedProbeArgs those of the probe's nested child: the invocations
// internal/earlyentry takes before the binary's heavier initialisers.
func InitArgs() []string        { return []string{"internal-init"} }
func NestedProbeArgs() []string { return []string{"internal-init", "--nested-probe"} }

// Spec is one child's confinement as data: the launch plan carries it, so
// C1 vectors pin exactly what is hidden, bound and cut off.
type Spec struct {
	// Init is the program run as PID 1: this binary, whose hidden verb
	// internal-init is the init.
	Init string `json:"init"`
	// Namespaces are those the init is cloned into: user, pid and mount
	// always, net when the loopback proxy is the child's only way out.
	Namespaces []string `json:"namespaces"`
	// UID and GID are the caller's, which uid and gid 0 inside the user
	// namespace map to: files the child creates are the caller's.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Hidden directories are replaced by an empty read-only directory (the
	// caller's HOME, other homes, /run).
	Hidden []string `json:"hidden"`
	// Fresh directories are replaced by an empty writable tmpfs that ends
	// with the run (/tmp, /var/tmp).
	Fresh []string `json:"fresh"`
	// ReadOnly paths are bound back read-only at their own paths, over
	// whatever hides them. A symbolic link on the way to one is recreated,
	// so a looked-up name still leads to its file by the same hops.
	ReadOnly []string `json:"read_only"`
	// Writable directories are bound back writable at their own paths.
	Writable []string `json:"writable"`
	// Covered paths (glob patterns allowed) are made unreadable last, even
	// inside a bound directory: a file by an empty one, a directory by an
	// empty read-only one. A path that does not exist is left alone.
	Covered []string `json:"covered"`
	// Listen is the loopback address the init opens inside the child's
	// network namespace and hands to metaharness, which serves the loopback
	// proxy on it ("" without a network namespace).
	Listen string `json:"listen,omitempty"`
}

// Has reports whether s makes namespace ns.
func (s *Spec) Has(ns string) bool {
	for _, n := range s.Namespaces {
		if n == ns {
			return true
		}
	}
	return false
}

// Check refuses a spec the init could not apply as written: relative
// paths, or a user namespace missing (without one the child would hold
// metaharness's own capabilities over the mounts that hide things).
func (s *Spec) Check() error {
	if !filepath.IsAbs(s.Init) {
		return fmt.Errorf("confinement: the init %q is not an absolute path", s.Init)
	}
	for _, ns := range []string{User, PID, Mount} {
		if !s.Has(ns) {
			return fmt.Errorf("confinement without a %s namespace is not one", ns)
		}
	}
	for _, l := range [][]string{s.Hidden, s.Fresh, s.ReadOnly, s.Writable, s.Covered} {
		for _, p := range l {
			if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
				return fmt.Errorf("confinement: %q is not an absolute path below /", p)
			}
		}
	}
	if s.Listen != "" && !s.Has(Net) {
		return fmt.Errorf("confinement: a listener inside the child's network namespace (%s) needs that namespace", s.Listen)
	}
	return nil
}

// Command is what the init starts inside the namespaces.
type Command struct {
	Program string   `json:"program"`
	Args    []string `json:"args"` // Args[0] included
	Env     []string `json:"env"`
	Dir     string   `json:"dir"`
}

// Exit is how the vendor ended, as its init saw it: a code, or the signal
// that killed it.
type Exit struct {
	Code   *int `json:"code,omitempty"`
	Signal *int `json:"signal,omitempty"`
}
