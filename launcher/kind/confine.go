package kind

import (
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/confine/sandbox"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/internal/treepath"
)

// callerSecrets are the caller's credential files and directories, relative
// to their HOME, for every vendor and the usual tools. HOME is hidden from
// the child whole; these are covered besides, for when a directory the child
// is given (--cwd) holds HOME or part of it.
var callerSecrets = []string{
	".claude*", ".config/claude", ".codex", ".config/openai",
	".ssh", ".gnupg", ".netrc", ".git-credentials", ".config/gh", ".config/git/credentials",
	".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".npmrc", ".pypirc", ".local/share/keyrings",
}

// hiddenRoots are replaced by empty directories besides the caller's HOME:
// other users' homes, and /run, where agent and daemon sockets live (a
// network namespace does not cut a path-named unix socket).
var hiddenRoots = []string{"/home", "/root", "/run"}

// freshRoots are the shared scratch directories, which the child gets fresh.
var freshRoots = []string{"/tmp", "/var/tmp"}

// Confinement plans the child's namespaces and mount view for spec in w:
// user, PID and mount namespaces always, a network namespace under
// --credentials loopback (the proxy, served inside it, is then the child's
// only way out; under api-key and none it needs the real network); the
// caller's HOME, other homes and /run hidden, /tmp fresh, the rest of /
// read-only; the vendor binary, this one, the scratch tree and readOnly (a
// kind's install directories) bound back read-only, so that the launch's
// own files (settings, the catalogue copy, the transcript) cannot be
// changed under the run; writable only the child's scratch HOME and TMPDIR,
// its cwd (--cwd, or the scratch work directory) and dirs (the kind's own,
// such as a config home), and where --cwd is a linked git worktree what git
// writes to commit there (w.Git, bindGit); the --token-file and the caller's credential
// files covered; the fresh tmpfs mounts sized (confine.DefaultFreshBytes,
// DefaultShmBytes); and, each where the host holds it (w.Controls), the
// seccomp filter on the child's tree and its own cgroup with memory and
// task bounds. It is nil under --unconfined or where the host cannot
// confine (w.Unconfinable).
func Confinement(spec *Spec, w *World, dirs []string, readOnly ...string) *confine.Spec {
	if spec.Unconfined || w.Unconfinable != "" {
		return nil
	}
	cwd := filepath.Join(w.Scratch, "work")
	if spec.Cwd != "" {
		cwd = spec.Cwd
	}
	c := &confine.Spec{
		Init:       w.Self,
		Namespaces: []string{confine.User, confine.PID, confine.Mount},
		UID:        w.UID, GID: w.GID,
		Fresh:    slices.Clone(freshRoots),
		ReadOnly: append([]string{w.Binary, w.Self, w.Scratch}, readOnly...),
		Writable: []string{},
		Covered:  []string{},

		FreshBytes: confine.DefaultFreshBytes,
		ShmBytes:   confine.DefaultShmBytes,
	}
	if w.Controls.Seccomp {
		c.DenySyscalls = slices.Clone(confine.DeniedSyscalls)
	}
	// What the child may write: the launch's own scratch directories on
	// one bounded tmpfs (seeded with what the launch put there), anything
	// else (the operator's --cwd, a kind's cgroup root) bound back as it is.
	for _, d := range append([]string{filepath.Join(w.Scratch, "home"), filepath.Join(w.Scratch, "tmp"), cwd}, dirs...) {
		if w.Scratch != "" && strings.HasPrefix(d, strings.TrimSuffix(w.Scratch, "/")+"/") {
			c.Seeded = append(c.Seeded, d)
		} else {
			c.Writable = append(c.Writable, d)
		}
	}
	if w.Controls.Cgroup != "" {
		c.Cgroup = &confine.Cgroup{Parent: w.Controls.Cgroup, MemoryMax: confine.DefaultMemoryMax, PidsMax: confine.DefaultPidsMax}
	} else {
		c.NprocMax = confine.DefaultPidsMax // it binds every caller but the host's root (Controls.Nproc)
	}
	home := w.Env["HOME"]
	if home != "" && filepath.IsAbs(home) && filepath.Clean(home) != "/" {
		c.Hidden = append(c.Hidden, filepath.Clean(home))
		for _, s := range callerSecrets {
			c.Covered = append(c.Covered, filepath.Join(home, s))
		}
	}
	for _, r := range hiddenRoots {
		if !slices.Contains(c.Hidden, r) {
			c.Hidden = append(c.Hidden, r)
		}
	}
	// Every run's records (--records-dir): the child neither reads another
	// session's nor writes any; metaharness writes them from outside.
	if d := spec.RecordsDir; filepath.IsAbs(d) && filepath.Clean(d) != "/" {
		c.Hidden = append(c.Hidden, filepath.Clean(d))
	}
	// Other runs' trees: the run's own is bound back (ReadOnly, Writable).
	if w.RuntimeDir != "" && !slices.Contains(c.Hidden, w.RuntimeDir) {
		c.Hidden = append(c.Hidden, w.RuntimeDir)
	}
	if spec.TokenFile != "" {
		c.Covered = append([]string{spec.TokenFile}, c.Covered...)
	}
	if spec.SignKey != "" {
		c.Covered = append(c.Covered, filepath.Clean(spec.SignKey))
	}
	for _, p := range spec.Hide {
		c.Covered = append(c.Covered, filepath.Clean(p))
	}
	// What the user's other live runs keep (their token files, signing
	// keys, records): no child reads another run's custody.
	c.Covered = append(c.Covered, w.OthersCustody...)
	bindGit(c, w)
	if w.ProxyAddr != "" {
		c.Namespaces = append(c.Namespaces, confine.Net)
		c.Listen, c.GateListen, c.DecisionListen = w.ProxyAddr, w.GateAddr, w.DecisionAddr
	} else {
		// The child resolves names itself here; /etc/resolv.conf may point
		// into /run.
		c.ReadOnly = append(c.ReadOnly, "/run/systemd/resolve")
	}
	return c
}

// SandboxShell is the shell the command sandbox starts for a vendor that
// hands it a command line: the one Claude Code is told to use too.
const SandboxShell = "/bin/bash"

// CommandSandbox is the script, in the scratch tree under name, through
// which c's vendor runs each command of the agent's inside the command
// sandbox (confine/sandbox: a Landlock domain of the command's own, which
// cannot signal, ptrace or open the /proc entries of the vendor): it starts
// shell with lead and then the arguments the vendor gives it, without the
// variables vendorOnly names (the vendor's credential for the proxy, its
// base URL, a channel of its own), and, where the child has a network
// namespace, with TCP connections to the egress gate's port alone, so that
// the model route beside it is out of the commands' reach. It records the
// script in c (CommandSandbox), so that the init refuses to start the
// vendor where the domain cannot be made. It is nil, and c unchanged, when
// there is no confinement (the script would be the child's to rewrite) or
// the host's Landlock has no scopes.
func CommandSandbox(c *confine.Spec, w *World, name, shell string, vendorOnly []string, lead ...string) *File {
	if c == nil || !w.Controls.Scoped() {
		return nil
	}
	rules := sandbox.Rules{Unset: slices.Compact(slices.Sorted(slices.Values(vendorOnly)))}
	if c.Has(confine.Net) {
		rules.Connect = []uint16{}
		if _, port, err := net.SplitHostPort(c.GateListen); err == nil {
			if p, err := strconv.ParseUint(port, 10, 16); err == nil {
				rules.Connect = append(rules.Connect, uint16(p))
			}
		}
	}
	line := "exec " + ShellQuote(w.Self)
	for _, a := range append(sandbox.Args(shell, rules), lead...) {
		line += " " + ShellQuote(a)
	}
	f := &File{Path: filepath.Join(w.Scratch, name), Mode: 0o755,
		Content: "#!/bin/sh\n# metaharness: the command runs in a Landlock domain of its own (confine/sandbox)\n" + line + ` "$@"` + "\n"}
	c.CommandSandbox, c.CommandRules = f.Path, &rules
	return f
}

// LoginShellSandbox puts c's vendor's commands in the command sandbox for
// a vendor that runs each command with its user's login shell, the shell
// getpwuid names, as Codex does (`SHELL -lc COMMAND`, inside its own
// sandbox or, once approved outside it, straight from the vendor): the
// view's /etc/passwd is replaced by one whose uid 0, the vendor's own, has
// home and the sandbox script, named bash so that the vendor takes it for
// bash. The other users of the host are not in it, and the child sees none
// of them anyway (their ids are unmapped). It returns the files to write,
// none where CommandSandbox gives no script.
func LoginShellSandbox(c *confine.Spec, w *World, home string, vendorOnly []string) []File {
	f := CommandSandbox(c, w, "bash", SandboxShell, vendorOnly)
	if f == nil {
		return nil
	}
	passwd := File{Path: filepath.Join(w.Scratch, "passwd"), Mode: 0o644,
		Content: "root:x:0:0:root:" + home + ":" + f.Path + "\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"}
	c.Replaced = append(c.Replaced, confine.Replacement{Path: "/etc/passwd", Source: passwd.Path})
	return []File{*f, passwd}
}

// AttestConfinement completes a kind's claim with what c enforces: on
// H4, that the child cannot read the real token; on H6, what its mount
// view hides; on H12, under --credentials loopback, that a direct
// connection fails in the kernel. With c nil, the rows the kind imposed on
// H4, H6 and H12 are withdrawn, naming why (--unconfined, or what the host
// lacks): the kind's words then claim what nothing enforces.
func AttestConfinement(claim *attest.Claim, c *confine.Spec, spec *Spec, w *World) {
	if c == nil {
		why := "--unconfined: the caller chose to run the child without namespaces"
		if !spec.Unconfined {
			why = "confinement is unavailable here (" + w.Unconfinable + ")"
		}
		claim.Withdraw(attest.H4, why+"; the child shares metaharness's view of processes and files, so it could read the token where metaharness and the caller keep it (a --token-file, metaharness's own /proc entries to a child that can ptrace, the caller's credential files)")
		claim.Withdraw(attest.H6, why+"; the caller's credential files are not hidden from the child")
		claim.Withdraw(attest.H12, why+"; egress is steered (the proxy variables point at the gate), not enforced: a client that ignores them connects directly")
		claim.Enforce(attest.H13, "unconfined ("+why+"), so nothing in the kernel keeps the agent's tools from the vendor's memory, signals or descriptors; the vendor's stdio are still unix sockets, which /proc cannot reopen, and the wire check holds whatever a line says")
		return
	}
	h4 := "enforced: the child runs in namespaces of its own (" + strings.Join(c.Namespaces, ", ") + ") under metaharness's own init, with a /proc that shows only its own processes, so metaharness's environment and argv are out of its sight, and the caller's credential files are hidden from it (h6)"
	if w.NonDumpable {
		h4 += "; metaharness is non-dumpable, so no process of its uid outside may read its memory or environment either"
	}
	if spec.Credentials == CredentialsLoopback {
		h4 += tokenWords(spec, w)
	}
	claimGit(claim, w)
	claim.Enforce(attest.H4, h4)
	claim.Enforce(attest.H6, "enforced in the child's mount view: hidden (empty, read-only) "+strings.Join(c.Hidden, ", ")+
		"; fresh "+strings.Join(c.Fresh, ", ")+"; covered (read as empty, even inside a bound tree) "+coveredWords(c.Covered, w.Env["HOME"])+
		"; writable only "+writableWords(c)+"; the rest of / read-only; "+boundWords(c, w))
	if len(w.OthersCustody) > 0 {
		claim.Add(attest.H6, fmt.Sprintf("; what the user's %d other live run(s) keep (token files, signing keys, records) is covered too (the registry of live runs in the runtime directory)", len(w.OthersCustody)))
	}
	if why, credential := exposed(spec, w); why != "" {
		if credential {
			claim.Withdraw(attest.H4, why)
		}
		claim.Withdraw(attest.H6, why)
	} else if why := unbounded(c, w); why != "" {
		// A bound that does not hold is a gap, not a sentence under ok.
		claim.Withdraw(attest.H6, why)
	}
	claim.Enforce(attest.H13, kernelWords(c, w))
	if c.Has(confine.Net) {
		claim.Enforce(attest.H12, "enforced: the child's network namespace has only lo, where the loopback proxy listens at "+c.Listen+" as its one way out, so a direct connection to any other address fails in the kernel")
	} else {
		claim.Add(attest.H12, " (the child shares metaharness's network: without the proxy it needs the real one)")
	}
}

// kernelWords say, for H13, which of the kernel's controls between the
// agent's tools and the vendor hold in c, and why each missing one does
// not: the wire check is the ground truth, these keep the record from
// being written at all.
func kernelWords(c *confine.Spec, w *World) string {
	parts := []string{"the vendor's stdio are one-way unix sockets, which no process can reopen through /proc to write into the record"}
	if len(c.DenySyscalls) > 0 {
		parts = append(parts, "seccomp makes "+strings.Join(c.DenySyscalls, ", ")+" fail in the child's whole tree")
	} else {
		parts = append(parts, "no seccomp filter ("+orUnprobed(w.Controls.SeccompWhy)+")")
	}
	if c.CommandSandbox != "" {
		parts = append(parts, fmt.Sprintf("each command of the agent's runs in a Landlock domain of its own (ABI %d, signals and abstract sockets scoped), which cannot signal, ptrace or open /proc/<pid>/mem, environ or fd/* of the vendor", w.Controls.LandlockABI)+commandRuleWords(c))
	} else {
		why := w.Controls.LandlockWhy
		if why == "" && w.Controls.Scoped() {
			why = "this kind's commands have no seam to put it on"
		}
		why = orUnprobed(why)
		parts = append(parts, "no command sandbox ("+why+"), so the agent's commands may signal the vendor or reach its memory")
	}
	return "in the kernel: " + strings.Join(parts, "; ")
}

// commandRuleWords say what the command sandbox takes from each command
// beyond its scopes (c.CommandRules).
func commandRuleWords(c *confine.Spec) string {
	var out string
	r := c.CommandRules
	if r == nil {
		return out
	}
	endpoint := ""
	if c.DecisionListen != "" {
		endpoint = " or the run's decision endpoint"
	}
	switch {
	case r.Connect == nil:
	case len(r.Connect) == 0:
		out += ", may open no TCP connection (the loopback proxy's model route" + endpoint + " included)"
	default:
		ports := make([]string, len(r.Connect))
		for i, p := range r.Connect {
			ports[i] = strconv.Itoa(int(p))
		}
		out += ", may open TCP connections to the egress gate's port (" + strings.Join(ports, ", ") + ") alone, never to the loopback proxy's model route" + endpoint + ","
	}
	if len(r.Unset) > 0 {
		out += " and inherits none of the vendor's own variables (" + strings.Join(r.Unset, ", ") + ")"
	}
	return out
}

// exposed says what this run keeps that the child of a run started
// before it can read (w.CustodyExposed), "" when every live run's view
// hides it all (a child already running cannot be given more to hide),
// and whether the real token or the signing key is among it.
func exposed(spec *Spec, w *World) (why string, credential bool) {
	if len(w.CustodyExposed) == 0 {
		return "", false
	}
	for _, p := range []string{spec.TokenFile, spec.SignKey} {
		credential = credential || p != "" && slices.Contains(w.CustodyExposed, treepath.Real(p))
	}
	return "the child of another live run of this user, started before this one, can read " + strings.Join(w.CustodyExposed, ", ") +
		" (its view does not hide it, and a run covers only what the runs registered before it keep): keep a --token-file, --sign-key and records where every view hides them (under HOME, or the runtime directory), or pass the token on --token-fd", credential
}

// writableWords lists what the child may write: the seeded directories
// with their shared bound, then the rest.
func writableWords(c *confine.Spec) string {
	var parts []string
	if len(c.Seeded) > 0 {
		parts = append(parts, strings.Join(c.Seeded, ", ")+fmt.Sprintf(" (on one fresh tmpfs of %d MiB they share, seeded with what the launch put there; the disk's copies are never written)", c.FreshBytes>>20))
	}
	if len(c.Writable) > 0 {
		parts = append(parts, strings.Join(c.Writable, ", "))
	}
	return strings.Join(parts, ", and ")
}

// boundWords say, for H6, how much the child may hold: the fresh tmpfs
// sizes, and memory and processes where the host lets them be bounded.
func boundWords(c *confine.Spec, w *World) string {
	out := fmt.Sprintf("each fresh tmpfs holds at most %d MiB, /dev/shm %d MiB", c.FreshBytes>>20, c.ShmBytes>>20)
	switch {
	case c.Cgroup != nil:
		return out + fmt.Sprintf("; the child's tree is bounded by cgroup v2 below %s: memory.max %d MiB, pids.max %d", c.Cgroup.Parent, c.Cgroup.MemoryMax>>20, c.Cgroup.PidsMax)
	case w.Controls.Nproc:
		return out + fmt.Sprintf("; the vendor's tree is bounded to %d processes and threads (RLIMIT_NPROC, which nothing in it can raise)", c.NprocMax)
	}
	return out
}

// unbounded says why the child's tree is not bounded in memory or in
// processes, "" when both hold: without a delegated cgroup v2 nothing
// bounds its memory, and RLIMIT_NPROC binds no child of the host's root.
func unbounded(c *confine.Spec, w *World) string {
	if c.Cgroup != nil {
		return ""
	}
	why := "no memory bound holds (" + orUnprobed(w.Controls.CgroupWhy) + ")"
	if !w.Controls.Nproc {
		why += ", and no process bound either (" + orUnprobed(w.Controls.NprocWhy) + ")"
	}
	return why + ": the child's tree can take as much of the host's memory" + map[bool]string{true: "", false: " and as many processes"}[w.Controls.Nproc] + " as the host gives the caller"
}

// orUnprobed is why a control does not hold, or that the probe did not say.
func orUnprobed(why string) string {
	if why == "" {
		return "the confinement probe found no way to apply it here"
	}
	return why
}

// ClaimWire claims H13 for a kind whose model traffic can pass the proxy:
// imposed when the proxy reads its answers (w.Wire), else unavailable,
// naming why.
func ClaimWire(c *attest.Claim, w *World, vendor string) {
	if w.Wire == "" {
		c.Unavailable(attest.H13, "the wire is not seen: no loopback proxy reads this run's model traffic (under --credentials loopback it does)")
		return
	}
	c.Impose(attest.H13, "the loopback proxy reads every model response ("+w.Wire+") outside the child's reach, and the run holds "+vendor+"'s decision requests and its lines claiming model output to it: a request for a call the model did not make is denied, and a line the wire does not hold is never recorded as the model's; the proxy forwards a model request only on a connection "+vendor+"'s own process holds (by the kernel's table of its sockets), so that one its commands make with whatever credential they find is refused and recorded, never answered, and no call of theirs reaches the wire")
}

func tokenWords(spec *Spec, w *World) string {
	switch {
	case w.TokenCleared != "":
		return "; " + w.TokenCleared + " is cleared from metaharness's own environment block since it was read"
	case spec.TokenFile != "":
		return "; --token-file " + spec.TokenFile + " reads as empty inside"
	case spec.TokenFD != nil:
		return fmt.Sprintf("; the token came on descriptor %d, read once and closed", *spec.TokenFD)
	}
	return ""
}

// coveredWords lists covered paths, those under home by their names there.
func coveredWords(covered []string, home string) string {
	var out, under []string
	for _, p := range covered {
		if rel, ok := strings.CutPrefix(p, filepath.Clean(home)+"/"); ok && home != "" {
			under = append(under, rel)
		} else {
			out = append(out, p)
		}
	}
	if len(under) > 0 {
		out = append(out, "in "+filepath.Clean(home)+": "+strings.Join(under, " "))
	}
	return strings.Join(out, ", ")
}

// EnvRow is the h3 row's words for a constructed environment: the caller's
// variables copied (those of copied that are in env) and every other
// variable metaharness set, by name.
func EnvRow(env map[string]string, copied []string) string {
	var from, set []string
	for k := range env {
		if slices.Contains(copied, k) {
			from = append(from, k)
		} else {
			set = append(set, k)
		}
	}
	sort.Strings(from)
	sort.Strings(set)
	none := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	if len(copied) == 0 {
		return "the environment is constructed: set by metaharness: " + none(set) + "; nothing of the caller's is inherited"
	}
	return "the environment is constructed: copied from the caller's (of " + strings.Join(copied, ", ") + "): " + none(from) + "; set by metaharness: " + none(set) + "; nothing else inherited"
}
