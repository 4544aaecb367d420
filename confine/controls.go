package confine

import "github.com/metaharness/metaharness/confine/sandbox"

// ScopedABI is the first Landlock ABI that scopes signals and abstract unix
// sockets, which the command sandbox needs.
const ScopedABI = sandbox.ScopedABI

// Controls are what this host lets a confinement apply besides its
// namespaces, as Probe found them: each either holds, or says why not in
// words an operator can act on. A plan asks only for what holds here, and
// the init refuses to start the vendor when something it was asked for
// cannot be applied after all.
type Controls struct {
	// Seccomp: a seccomp filter installs in the vendor's position (a
	// nested user namespace, no_new_privs), so Spec.DenySyscalls may be
	// asked for. SeccompWhy says why not otherwise.
	Seccomp    bool   `json:"seccomp,omitempty"`
	SeccompWhy string `json:"seccomp_why,omitempty"`
	// LandlockABI is the Landlock ABI a process in the vendor's position
	// can restrict itself with, 0 none; from ScopedABI on, the command
	// sandbox (Spec.CommandSandbox) can run. LandlockWhy says why it
	// cannot otherwise.
	LandlockABI int    `json:"landlock_abi,omitempty"`
	LandlockWhy string `json:"landlock_why,omitempty"`
	// Cgroup is the cgroup v2 directory delegated to metaharness, below
	// which a child's tree can be bounded (Spec.Cgroup); CgroupWhy says why
	// there is none. Unlike the rest, it is read afresh for every run
	// (DelegatedCgroup): a process's cgroup is not the host's.
	Cgroup    string `json:"cgroup,omitempty"`
	CgroupWhy string `json:"cgroup_why,omitempty"`
	// Nproc: RLIMIT_NPROC binds the vendor's tree (Spec.NprocMax), which
	// it does for every caller but the host's root, whom the kernel
	// exempts; NprocWhy says so otherwise.
	Nproc    bool   `json:"nproc,omitempty"`
	NprocWhy string `json:"nproc_why,omitempty"`
}

// nproc is whether RLIMIT_NPROC binds a child of the caller uid, and why
// not.
func nproc(uid int) (bool, string) {
	if uid == 0 {
		return false, "the caller is the host's root (uid 0), whom RLIMIT_NPROC does not bind, and no delegated cgroup v2 is there to bound the tree's processes instead"
	}
	return true, ""
}

// Scoped reports whether the command sandbox can run here.
func (c Controls) Scoped() bool { return c.LandlockABI >= ScopedABI }
