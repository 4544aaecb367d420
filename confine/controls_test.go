//go:build linux

package confine

import (
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/confine/sandbox"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestProbeControls: the probe says, for each control beyond the
// namespaces, that it holds or why not.
func TestProbeControls(t *testing.T) {
	self := available(t)
	c, err := Probe(self)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("controls here: %+v", c)
	if c.Seccomp == (c.SeccompWhy != "") || (c.LandlockABI > 0) == (c.LandlockWhy != "" && c.Scoped()) || (c.Cgroup != "") == (c.CgroupWhy != "") {
		t.Errorf("a control neither holds nor says why not: %+v", c)
	}
}

// attack is a confined vendor (the helper) that starts a tool (the
// helper again, through the command sandbox when sandboxed) which tries
// each of checks against the vendor.
func attack(t *testing.T, s *Spec, sandboxed bool, checks ...string) map[string]string {
	t.Helper()
	self := s.Init
	tool := []string{self, "helper"}
	if sandboxed {
		tool = append(append([]string{self}, sandbox.Args(self, sandbox.Rules{})...), "helper")
	}
	args := append(append([]string{"spawn"}, tool...), append([]string{"check"}, checks...)...)
	out, ex := run(t, s, helperCmd(self, args...))
	if ex.Code == nil || *ex.Code != 0 {
		t.Fatalf("the vendor ended %+v:\n%s", ex, out)
	}
	t.Logf("the tool said:\n%s", out)
	return lines(out)
}

// TestSyscallsDenied: under DenySyscalls a tool cannot ptrace the vendor,
// read or write its memory, or take its descriptors, each failing with
// EPERM; without the filter the same tool can do all four.
func TestSyscallsDenied(t *testing.T) {
	self := available(t)
	checks := []string{"ptrace:PPID", "vmread:PPID", "vmwrite:PPID", "getfd:PPID"}
	open := attack(t, testSpec(self), false, checks...)
	s := testSpec(self)
	s.DenySyscalls = DeniedSyscalls
	denied := attack(t, s, false, checks...)
	for _, c := range checks {
		op := strings.SplitN(c, ":", 2)[0]
		if !has(open, "ok "+op) {
			t.Errorf("without the filter, %s failed: the test shows nothing", op)
		}
		if why, ok := find(denied, "no "+op); !ok || !strings.HasSuffix(why, unix.EPERM.Error()) {
			t.Errorf("under the filter, %s: %q, want %q", op, why, unix.EPERM.Error())
		}
	}
}

// TestSyscallsDeniedRefusesToStart: a filter that cannot be installed
// stops the init before the vendor runs, saying why.
func TestSyscallsDeniedRefusesToStart(t *testing.T) {
	self := available(t)
	s := testSpec(self)
	s.DenySyscalls = []string{"no_such_call"}
	i, err := New(s, helperCmd(self, "check", "pids:"))
	if err != nil {
		t.Fatal(err)
	}
	if err := i.Start(); err == nil || !strings.Contains(err.Error(), "installing the seccomp filter") {
		t.Errorf("Start: %v, want the filter's failure", err)
	}
}

// TestCompatFilter: the compat ABI's filter denies exactly the listed
// calls of that ABI and lets every other call, and every other ABI, pass.
func TestCompatFilter(t *testing.T) {
	a := arch.I386
	vm, err := bpf.NewVM(compatFilter(a, DeniedSyscalls))
	if err != nil {
		t.Fatal(err)
	}
	data := func(nr int, id arch.AuditArch) []byte {
		// The VM loads big-endian where the kernel loads native: the same
		// numbers either way.
		b := make([]byte, 64)
		binary.BigEndian.PutUint32(b[0:], uint32(nr))
		binary.BigEndian.PutUint32(b[4:], uint32(id))
		return b
	}
	deny, allow := int(unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM)), int(unix.SECCOMP_RET_ALLOW)
	for _, c := range []struct {
		nr   int
		id   arch.AuditArch
		want int
	}{
		{a.SyscallNames["ptrace"], a.ID, deny},
		{a.SyscallNames["process_vm_readv"], a.ID, deny},
		{a.SyscallNames["process_vm_writev"], a.ID, deny},
		{a.SyscallNames["pidfd_getfd"], a.ID, deny},
		{a.SyscallNames["read"], a.ID, allow},
		{a.SyscallNames["ptrace"], arch.X86_64.ID, allow}, // the native filter's
	} {
		got, err := vm.Run(data(c.nr, c.id))
		if err != nil || got != c.want {
			t.Errorf("call %d in ABI %v: %#x (%v), want %#x", c.nr, c.id, got, err, c.want)
		}
	}
}

// TestStdioOneWay: a vendor's stdout and stdin made by OneWay cannot be
// reopened through /proc by a tool (ENXIO, where a pipe's can), and carry
// data one way only.
func TestStdioOneWay(t *testing.T) {
	self := available(t)
	s := testSpec(self)
	piped := attack(t, s, false, "openw:/proc/PPID/fd/1")
	if !has(piped, "ok openw") {
		t.Fatalf("a tool could not reopen a pipe: the test shows nothing")
	}
	i, err := New(s, helperCmd(self, "spawn", self, "helper", "check", "openw:/proc/PPID/fd/1", "readback:", "writein:"))
	if err != nil {
		t.Fatal(err)
	}
	out, childOut, err := OneWay(true)
	if err != nil {
		t.Fatal(err)
	}
	in, childIn, err := OneWay(false)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	i.Cmd.Stdout, i.Cmd.Stdin, i.Cmd.Stderr = childOut, childIn, os.Stderr
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	_ = childOut.Close()
	_ = childIn.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := out.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	_ = out.Close()
	if _, err := i.Wait(); err != nil {
		t.Fatal(err)
	}
	t.Logf("the tool said:\n%s", b.String())
	got := lines(b.String())
	if why, ok := find(got, "no openw"); !ok || !strings.HasSuffix(why, unix.ENXIO.Error()) {
		t.Errorf("reopening the vendor's stdout: %q, want %q", why, unix.ENXIO.Error())
	}
	if why, ok := find(got, "ok readback"); !ok || why != "0 bytes" {
		t.Errorf("reading back its own output: %q, want an end of file", why)
	}
	if why, ok := find(got, "no writein"); !ok || !strings.HasSuffix(why, unix.EPIPE.Error()) {
		t.Errorf("writing into its own stdin: %q, want %q", why, unix.EPIPE.Error())
	}
}

// TestCommandSandbox: a tool started through the command sandbox cannot
// signal the vendor, ptrace it, or open its environ, mem or descriptors
// (the Landlock domain alone: no seccomp filter here), which the same tool
// outside the sandbox can all do; ordinary shell work (pipes,
// redirections, background jobs, signalling its own children, git) goes
// on inside.
func TestCommandSandbox(t *testing.T) {
	self := available(t)
	if abi, why := sandbox.ABI(); abi < ScopedABI {
		t.Skipf("no Landlock scopes here: %s", why)
	}
	s := testSpec(self)
	checks := []string{"signal:PPID", "ptrace:PPID", "read:/proc/PPID/environ", "openr:/proc/PPID/mem", "openw:/proc/PPID/fd/1", "link:/proc/PPID/fd/1"}
	outside := attack(t, s, false, checks...)
	got := attack(t, s, true, checks...)
	for _, c := range checks {
		op := strings.SplitN(c, ":", 2)[0]
		if !has(outside, "ok "+op) {
			t.Errorf("outside the sandbox, %s failed: the test shows nothing", op)
		}
		want := "permission denied" // the /proc entries, by Landlock's ptrace rule
		if op == "signal" || op == "ptrace" {
			want = unix.EPERM.Error()
		}
		if why, ok := find(got, "no "+op); !ok || !strings.HasSuffix(why, want) {
			t.Errorf("inside the sandbox, %s: %q, want …%q", op, why, want)
		}
	}

	work := t.TempDir()
	s.Writable = []string{work}
	script := `cd "$1" || exit 1
ls / | grep -q proc && echo piped | cat > out
(sleep 0.1; echo background >> out) & wait
sleep 5 & kill $!; wait $!; echo "own child: $?" >> out
git --version >/dev/null && echo git >> out
cat out`
	sh := append(append([]string{"spawn", self}, sandbox.Args("/bin/sh", sandbox.Rules{})...), "-c", script, "sh", work)
	out, ex := run(t, s, helperCmd(self, sh...))
	if ex.Code == nil || *ex.Code != 0 || out != "piped\nbackground\nown child: 143\ngit\n" {
		t.Errorf("ordinary work in the sandbox ended %+v with:\n%s", ex, out)
	}
}

// TestCommandSandboxRules: a command in the sandbox gets the vendor's
// environment less the variables meant for the vendor alone, and may open
// TCP connections to the listed ports only: the egress gate's port answers,
// the model route's beside it is refused by the kernel (EACCES), the same
// as any other port. Without Connect, TCP is left alone.
func TestCommandSandboxRules(t *testing.T) {
	self := available(t)
	if c, _ := Probe(self); !c.Scoped() {
		t.Skipf("no scoped Landlock here: %s", c.LandlockWhy)
	}
	gate, model := listen(t), listen(t)
	script := `echo "key=${PLACEHOLDER:-unset} base=${BASE:-unset} path=$PATH"
for p in "$@"; do (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && echo "$p open" || echo "$p refused"; done`
	sandboxed := func(r sandbox.Rules) string {
		sh := append(append([]string{"spawn", self}, sandbox.Args("/bin/bash", r)...), "-c", script, "bash", gate, model)
		c := helperCmd(self, sh...)
		c.Env = []string{"PATH=/usr/bin:/bin", "PLACEHOLDER=mh-run-x", "BASE=http://127.0.0.1:" + model}
		out, ex := run(t, testSpec(self), c)
		if ex.Code == nil || *ex.Code != 0 {
			t.Fatalf("the sandboxed shell ended %+v:\n%s", ex, out)
		}
		return out
	}
	g, _ := strconv.ParseUint(gate, 10, 16)
	if got, want := sandboxed(sandbox.Rules{Unset: []string{"PLACEHOLDER", "BASE"}, Connect: []uint16{uint16(g)}}),
		"key=unset base=unset path=/usr/bin:/bin\n"+gate+" open\n"+model+" refused\n"; got != want {
		t.Errorf("with rules:\n%s\nwant:\n%s", got, want)
	}
	if got, want := sandboxed(sandbox.Rules{}), "key=mh-run-x base=http://127.0.0.1:"+model+" path=/usr/bin:/bin\n"+gate+" open\n"+model+" open\n"; got != want {
		t.Errorf("without rules:\n%s\nwant:\n%s", got, want)
	}
}

// listen is a TCP listener on loopback that accepts and closes, for the
// test's life; it returns its port.
func listen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestTmpfsBounds: a fresh directory and /dev/shm hold no more than their
// bounds.
func TestTmpfsBounds(t *testing.T) {
	self := available(t)
	fresh := t.TempDir()
	s := testSpec(self)
	s.Fresh, s.FreshBytes, s.ShmBytes = []string{fresh}, 1<<20, 1<<20
	out, ex := run(t, s, Command{Program: "/bin/sh", Args: []string{"sh", "-c",
		`for d in "$1" /dev/shm; do head -c 2097152 /dev/zero > "$d/big" 2>/dev/null && echo "$d: unbounded" || echo "$d: $(wc -c < "$d/big")"; done`, "sh", fresh}, Dir: "/"})
	if ex.Code == nil || *ex.Code != 0 || out != fresh+": 1048576\n/dev/shm: 1048576\n" {
		t.Errorf("ended %+v with:\n%s", ex, out)
	}
}

// TestSeededBounds: a seeded directory holds a copy of what it held at
// the start (a file, a subdirectory, a link, their modes), takes writes up
// to the shared bound and no more (two seeded directories together), and
// the original on disk never changes.
func TestSeededBounds(t *testing.T) {
	self := available(t)
	home, tmp := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "conf", "settings.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("conf/settings.json", filepath.Join(home, "link")); err != nil {
		t.Fatal(err)
	}
	s := testSpec(self)
	s.Seeded, s.FreshBytes = []string{home, tmp}, 1<<20
	out, ex := run(t, s, Command{Program: "/bin/sh", Args: []string{"sh", "-c", `
cat "$1/link"; stat -c '%a' "$1/conf" "$1/conf/settings.json"
head -c 700000 /dev/zero > "$1/big" && echo "first fits"
head -c 700000 /dev/zero > "$2/big" 2>/dev/null && echo "second fits" || echo "second: $(wc -c < "$2/big")"`, "sh", home, tmp}, Dir: "/"})
	head, second, _ := strings.Cut(out, "second: ")
	n, err := strconv.Atoi(strings.TrimSpace(second))
	if ex.Code == nil || *ex.Code != 0 || head != "{}\n700\n600\nfirst fits\n" || err != nil || n >= 700000 || n < 200000 {
		t.Errorf("ended %+v with:\n%s\nwant the copy, then the first write whole and the second cut at the shared bound", ex, out)
	}
	if _, err := os.Stat(filepath.Join(home, "big")); err == nil {
		t.Error("a write inside reached the original on disk")
	}
}

// TestNprocBound: a caller that is not the host's root gets its vendor's
// processes bounded by RLIMIT_NPROC (Spec.NprocMax): starting 2000 fails
// early, nothing in the tree can raise the bound; for the host's root the
// probe says the bound does not hold.
func TestNprocBound(t *testing.T) {
	self := available(t)
	if ok, why := nproc(0); ok || why == "" {
		t.Errorf("root: %v %q, want the bound said not to hold", ok, why)
	}
	if ok, _ := nproc(1000); !ok {
		t.Error("a user: the bound said not to hold")
	}
	if os.Geteuid() != 0 {
		t.Skip("this test starts the init as another user, which needs root")
	}
	// The test binary, where another user can run it.
	dir, err := os.MkdirTemp("", "nproc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "confine.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "helper", "nproc", "300", "2000")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	n, err := strconv.Atoi(strings.TrimPrefix(got, "started "))
	if err != nil || n >= 300 || n < 100 {
		t.Errorf("under a bound of 300, the vendor's tree said %q, want fewer than 300 started", got)
	}
}

// TestDelegation: a cgroup is delegated only on cgroup v2, writable, with
// memory and pids enabled for its subtree; otherwise the reason says which.
func TestDelegation(t *testing.T) {
	root := t.TempDir()
	mk := func(dir, subtree string) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, dir, "cgroup.subtree_control"), []byte(subtree), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("v2/user.slice/run", "cpu memory pids\n")
	mk("v2/user.slice/plain", "cpu\n")
	mk("ns", "memory pids\n")
	mount := func(at, hroot, opts string) string {
		return "22 1 0:21 / /proc rw - proc proc rw\n" +
			"30 24 0:26 " + hroot + " " + filepath.Join(root, at) + " " + opts + " shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	}
	v1 := "24 1 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	for _, c := range []struct {
		name, self, mounts, dir, why string
	}{
		{"v1", "4:memory:/x\n8:pids:/\n0::/\n", v1, "", "no cgroup v2 hierarchy is mounted here (the memory and pids controllers are on cgroup v1)"},
		{"hybrid", "4:memory:/x\n0::/user.slice/run\n", v1 + mount("v2", "/", "rw"), "", "the memory controllers are bound to cgroup v1"},
		{"delegated", "0::/user.slice/run\n", mount("v2", "/", "rw,nosuid"), "v2/user.slice/run", ""},
		{"not delegated", "0::/user.slice/plain\n", mount("v2", "/", "rw"), "", "does not delegate the memory and pids controller(s)"},
		{"read-only", "0::/user.slice/run\n", mount("v2", "/", "ro,nosuid"), "", "mounted read-only"},
		{"namespaced", "0::/\n", mount("ns", "/", "rw"), "ns", ""},
		{"mount below", "0::/user.slice/run\n", mount("v2/user.slice", "/user.slice", "rw"), "v2/user.slice/run", ""},
		{"outside the mount", "0::/system.slice/x\n", mount("v2/user.slice", "/user.slice", "rw"), "", "outside the cgroup2 mount"},
	} {
		dir, why := delegation([]byte(c.self), []byte(c.mounts))
		if c.dir != "" {
			if dir != filepath.Join(root, c.dir) || why != "" {
				t.Errorf("%s: %q (%s), want %s", c.name, dir, why, c.dir)
			}
			continue
		}
		if dir != "" || !strings.Contains(why, c.why) {
			t.Errorf("%s: %q, why %q; want none, because %q", c.name, dir, why, c.why)
		}
	}
}

// find is the detail of the line that begins with prefix.
func find(got map[string]string, prefix string) (string, bool) {
	for k, v := range got {
		if strings.HasPrefix(k, prefix) {
			return v, true
		}
	}
	return "", false
}

func has(got map[string]string, prefix string) bool {
	_, ok := find(got, prefix)
	return ok
}

// TestCgroupRefusesToStart: a cgroup whose bounds cannot be set (here: a
// cgroup v2 directory without the memory controller, on a hybrid host)
// stops the start before anything runs, and leaves no cgroup behind.
func TestCgroupRefusesToStart(t *testing.T) {
	self := available(t)
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	cg, _ := os.ReadFile("/proc/self/cgroup")
	mount, _, ro := cgroup2Mount(mounts)
	var own string
	for _, l := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			own = filepath.Join(mount, p)
		}
	}
	if mount == "" || ro || unix.Access(own, unix.W_OK) != nil {
		t.Skip("no writable cgroup v2 directory here")
	}
	if b, _ := os.ReadFile(filepath.Join(own, "cgroup.subtree_control")); strings.Contains(string(b), "memory") {
		t.Skip("this cgroup delegates memory: the bounds would apply")
	}
	before, _ := filepath.Glob(filepath.Join(own, "metaharness-*"))
	s := testSpec(self)
	s.Cgroup = &Cgroup{Parent: own, MemoryMax: 1 << 30, PidsMax: 64}
	i, err := New(s, helperCmd(self, "check", "pids:"))
	if err != nil {
		t.Fatal(err)
	}
	if err := i.Start(); err == nil || !strings.Contains(err.Error(), "bounding the child's cgroup") {
		t.Errorf("Start: %v, want the bound's failure", err)
	}
	if after, _ := filepath.Glob(filepath.Join(own, "metaharness-*")); len(after) != len(before) {
		t.Errorf("cgroups left behind: %v", after)
	}
}
