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
// C1 vectors pin it.
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
