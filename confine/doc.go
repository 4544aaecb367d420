// Package confine runs a vendor child inside Linux namespaces that
// metaharness makes itself, so that what the launch promises holds whatever
// the child does: it cannot read the real token, it cannot reach the
// network except through the loopback proxy, and it cannot outlive the run.
//
// # How
//
// Start clones this binary's hidden verb internal-init (Main) into new user,
// PID and mount namespaces, and a network namespace when the proxy is the
// child's only way out. uid and gid 0 inside map to the caller's, so the
// init keeps its capabilities over those namespaces across exec and files
// the child writes are the caller's. The init is PID 1 there. It makes mount
// propagation private and builds the mount view the Spec describes (below),
// mounts a /proc of its own PID namespace and a /dev holding only null, zero,
// full, random, urandom, tty, a private devpts and a fresh shm; it brings lo
// up and, when asked, listens on the proxy's address inside and passes the
// listener back over its control socket (SCM_RIGHTS), so the proxy serves
// the child's connections while dialling its upstream from metaharness's own
// namespace. Then it starts the vendor in its own process group and in a
// user namespace nested in the init's, where the vendor holds no capability
// over anything the init made: it cannot unmount what hides a path or
// configure the network, and any mount namespace it makes for a sandbox of
// its own (Codex's bubblewrap) gets our mounts locked. The init passes
// SIGTERM, SIGINT and SIGHUP to the vendor's group, reaps every orphan, and
// when the vendor ends reports its real status (a code or a signal) and
// exits, upon which the kernel kills whatever else is left in the PID
// namespace (the nohup'd process a shell tool leaves behind). It is
// non-dumpable, so nothing inside can ptrace it or read its memory.
//
// # What the agent's tools cannot do to the vendor
//
// The vendor is root in its user namespace, and so, without more, is every
// tool it starts: they could ptrace it, read or write its memory, open its
// descriptors or signal it, and write stream lines into what metaharness
// records. Where the host allows (Controls, found by Probe), the plan asks
// for three controls, and the init refuses to start the vendor without one
// it was asked for:
//
//   - DenySyscalls: before it starts the vendor the init installs, with
//     no_new_privs and on all its threads, a seccomp filter under which
//     ptrace, process_vm_readv, process_vm_writev and pidfd_getfd fail with
//     EPERM for the vendor and everything it starts, in the native ABI and
//     the compat one (i386 on amd64); the x32 ABI is denied whole.
//   - The vendor's stdio are unix sockets (OneWay), not pipes: a socket in
//     /proc/<pid>/fd cannot be opened, so no tool can open the vendor's
//     stdout anew; and the way back is shut down.
//   - CommandSandbox: the kind's plan routes each command of the agent's
//     through a script of its scratch tree that starts the shell in Sandbox,
//     a Landlock domain of the command's own (ABI 6 scopes: signals and
//     abstract unix sockets). By Landlock's ptrace rule nothing in it may
//     ptrace a process outside it or open that process's /proc mem, environ
//     or fd entries; nor may it signal one (kill -9 of the vendor fails).
//     Claude Code is told the script by CLAUDE_CODE_SHELL_PREFIX, Codex by
//     the login shell of the view's /etc/passwd (Replaced).
//
// # Bounds
//
// Each fresh tmpfs (/tmp, /var/tmp) holds at most DefaultFreshBytes (1 GiB)
// and /dev/shm DefaultShmBytes (256 MiB), each with one inode per 4 KiB, so
// that empty files cannot stand in for data: room for a build's temporary
// files and a browser's shared memory, while three tmpfs mounts, whose
// pages are the host's memory, stay far below a shared host's, where the
// kernel's default gives each half of it. Where the caller's cgroup is a
// delegated cgroup v2 (DelegatedCgroup), the whole tree runs in a cgroup of
// its own below it, cloned straight into it, with memory.max
// DefaultMemoryMax (8 GiB, tmpfs pages included, swap 0) and pids.max
// DefaultPidsMax (4096, threads included: a parallel build's and a Node
// vendor's with room), killed and removed when the child ends. metaharness
// neither enables controllers nor moves processes: without delegation
// (cgroup v1, or a hybrid hierarchy with memory and pids on v1) the bounds
// are unavailable, and Controls says why.
//
// The init dies with metaharness twice over: its parent-death signal is
// SIGKILL, set on a thread that never exits (Go's Pdeathsig fires when the
// spawning thread ends, so Start spawns from one locked goroutine that lives
// as long as the process), and the init kills everything when its control
// socket reaches EOF. SIGKILL of metaharness therefore leaves nothing.
//
// # The mount view
//
// It is a whitelist of what the child may write and a short list of what
// it may not read: / is read-only, recursively (mount_setattr); Hidden
// directories (the caller's HOME, /home, /root, /run) are replaced by empty
// read-only ones and Fresh ones (/tmp, /var/tmp) by empty writable tmpfs;
// ReadOnly and Writable paths are bound back at their own paths (the vendor
// binary and this one read-only, the scratch tree and --cwd writable), each
// cloned with open_tree before anything is mounted over its parents, and a
// symbolic link on the way to a read-only file is recreated, so that a
// binary found through links still finds its siblings; last, Covered paths
// (the --token-file, the caller's credential files) read as empty even
// inside a bound directory. Everything is data in the launch plan, so the
// C1 vectors pin it. Replaced files are bound over their paths last, from
// the launch's own (the scratch tree's /etc/passwd for Codex).
//
// # Why namespaces by hand, not bubblewrap or a container runtime
//
// Go's SysProcAttr makes the namespaces and the id maps in one clone, and
// the new mount API (open_tree, move_mount, mount_setattr) does in a few
// calls what bubblewrap does with many, so the child needs nothing installed
// beside metaharness: bubblewrap is not on every host (not on this one), a
// setuid copy of it is a risk of its own, and a container runtime is a
// daemon to trust. The price is Linux only: elsewhere Probe says so and the
// run attests the controls as gaps.
//
// # Custody
//
// metaharness itself keeps the token from same-uid processes outside the
// namespaces: NonDumpable (as ssh-agent does), and ForgetEnv, which clears
// the token variable from the environment block the kernel shows.
package confine
