package confine

import (
	"fmt"
	"net"
	"path/filepath"

	"github.com/metaharness/metaharness/confine/sandbox"
)

// Namespace names, as a Spec lists them.
const (
	User  = "user"
	PID   = "pid"
	Mount = "mount"
	Net   = "net"
)

// InitArgs are the init's arguments after its program's name and
// NestedProbeArgs those of the probe's nested child: the invocations
// internal/earlyentry takes before the binary's heavier initialisers (the
// command sandbox's are confine/sandbox's, taken earlier still).
func InitArgs() []string        { return []string{"internal-init"} }
func NestedProbeArgs() []string { return []string{"internal-init", "--nested-probe"} }

// DeniedSyscalls are the system calls a confinement denies the vendor's
// whole tree where the host can filter them (Controls.Seccomp): with them
// a process reads or writes another's memory, or takes its descriptors.
var DeniedSyscalls = []string{"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}

// The bounds a launch gives a confined child unless it says otherwise
// (confine/doc.go says why these).
const (
	DefaultFreshBytes = 1 << 30   // each of /tmp and /var/tmp
	DefaultShmBytes   = 256 << 20 // /dev/shm
	DefaultMemoryMax  = 8 << 30   // the whole tree's memory.max
	DefaultPidsMax    = 1024      // the whole tree's pids.max, or RLIMIT_NPROC without a cgroup
)

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
	// Seeded directories are writable too, but on one fresh tmpfs of
	// FreshBytes they share (the launch's own scratch directories: the
	// vendor's HOME, TMPDIR, config home), seeded with a copy of what each
	// held at the start; what the child writes there is bounded and ends
	// with the run, and the originals on disk are never written.
	Seeded []string `json:"seeded,omitempty"`
	// Covered paths (glob patterns allowed) are made unreadable last, even
	// inside a bound directory: a file by an empty one, a directory by an
	// empty read-only one. A path that does not exist is left alone.
	Covered []string `json:"covered"`
	// Replaced files are bound read-only over the path they name, from a
	// file of the launch's own (the scratch tree's): the view's /etc/passwd,
	// say. A target that does not exist is left alone.
	Replaced []Replacement `json:"replaced,omitempty"`
	// Listen, GateListen and DecisionListen are the loopback addresses the
	// init opens inside the child's network namespace and hands to
	// metaharness, which serves the loopback proxy's model route on the
	// first, its egress gate on the second and the run's decision endpoint
	// (a vendor's HTTP hook) on the third, each on a port of its own so
	// that the command sandbox can let the agent's commands reach the gate
	// alone ("" without a network namespace; GateListen "" for a proxy
	// without a gate, DecisionListen "" for a vendor that posts no hook).
	Listen         string `json:"listen,omitempty"`
	GateListen     string `json:"gate_listen,omitempty"`
	DecisionListen string `json:"decision_listen,omitempty"`
	// FreshBytes bounds each Fresh tmpfs and ShmBytes the child's /dev/shm
	// (tmpfs size=, and one inode per 4 KiB of it); 0 leaves the kernel's
	// default, half the host's memory each.
	FreshBytes int64 `json:"fresh_bytes,omitempty"`
	ShmBytes   int64 `json:"shm_bytes,omitempty"`
	// DenySyscalls fail with EPERM for the vendor and everything it starts:
	// a seccomp filter (with no_new_privs) the init installs before it
	// starts the vendor, and refuses to start without. Empty: no filter.
	DenySyscalls []string `json:"deny_syscalls,omitempty"`
	// CommandSandbox is the program, inside the view, through which the
	// vendor runs every command of the agent's (a script the kind's plan
	// writes, starting a shell in Sandbox's Landlock domain); the init
	// refuses to start the vendor where that domain cannot be made. ""
	// none.
	CommandSandbox string `json:"command_sandbox,omitempty"`
	// CommandRules are what that script's sandbox takes from each command
	// (sandbox.Rules): the vendor's own variables, and every TCP port but
	// the egress gate's.
	CommandRules *sandbox.Rules `json:"command_rules,omitempty"`
	// Cgroup, when set, puts the child's whole tree in a cgroup v2 of its
	// own below a delegated one, with memory and task bounds; the run
	// refuses to start when it cannot.
	Cgroup *Cgroup `json:"cgroup,omitempty"`
	// NprocMax, when not 0, is the RLIMIT_NPROC the init gives the
	// vendor's tree: at most that many processes and threads in the
	// vendor's user namespace, which nothing in it can raise. For where no
	// cgroup bounds the tree; it binds no child of the host's root
	// (Controls.Nproc).
	NprocMax int `json:"nproc_max,omitempty"`
}

// Replacement is one Spec.Replaced entry: Source bound over Path.
type Replacement struct {
	Path   string `json:"path"`
	Source string `json:"source"`
}

// Cgroup is the child's own cgroup: made below Parent (a cgroup v2
// directory delegated to metaharness, Controls.Cgroup) when the child
// starts, the init cloned into it, and removed, with anything left in it
// killed, when the child ends.
type Cgroup struct {
	Parent string `json:"parent"`
	// MemoryMax is memory.max in bytes (and memory.swap.max is 0 where the
	// host has swap accounting: the bound is not stretched by swap).
	MemoryMax int64 `json:"memory_max"`
	// PidsMax is pids.max: processes and threads alike.
	PidsMax int `json:"pids_max"`
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
	more := make([]string, 0, 2*len(s.Replaced)+1)
	for _, r := range s.Replaced {
		more = append(more, r.Path, r.Source)
	}
	if s.CommandSandbox != "" {
		more = append(more, s.CommandSandbox)
	}
	for _, l := range [][]string{s.Hidden, s.Fresh, s.ReadOnly, s.Writable, s.Seeded, s.Covered, more} {
		for _, p := range l {
			if !filepath.IsAbs(p) || filepath.Clean(p) == "/" {
				return fmt.Errorf("confinement: %q is not an absolute path below /", p)
			}
		}
	}
	if l := s.listeners(); len(l) > 0 && !s.Has(Net) {
		return fmt.Errorf("confinement: a listener inside the child's network namespace (%s) needs that namespace", l[0].Listening)
	}
	if s.GateListen != "" && s.Listen == "" {
		return fmt.Errorf("confinement: an egress gate (%s) without the model route it stands beside", s.GateListen)
	}
	if s.FreshBytes < 0 || s.ShmBytes < 0 || s.NprocMax < 0 {
		return fmt.Errorf("confinement: a bound is negative (tmpfs %d, %d; processes %d)", s.FreshBytes, s.ShmBytes, s.NprocMax)
	}
	if c := s.Cgroup; c != nil && (!filepath.IsAbs(c.Parent) || c.MemoryMax <= 0 || c.PidsMax <= 0) {
		return fmt.Errorf("confinement: the cgroup bounds need an absolute parent and positive limits (%+v)", *c)
	}
	return nil
}

// listeners are the listeners the init opens inside the child's network
// namespace, as the reports it hands them over with.
func (s *Spec) listeners() []report {
	var out []report
	for _, r := range []report{{Listening: s.Listen, Role: roleModel}, {Listening: s.GateListen, Role: roleGate}, {Listening: s.DecisionListen, Role: roleDecision}} {
		if r.Listening != "" {
			out = append(out, r)
		}
	}
	return out
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

// Listeners are the listeners an init opened inside its child's network
// namespace (Spec.Listen, GateListen, DecisionListen), each nil without
// one.
type Listeners struct {
	Model, Gate, Decision net.Listener
}
