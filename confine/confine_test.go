//go:build linux

package confine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/confine/sandbox"

	"golang.org/x/sys/unix"

	"github.com/metaharness/metaharness/testkit/vendortest"
)

// TestMain lets the test binary be the init (internal-init) and the
// confined program (helper), the way metaharness is both.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "internal-init":
			if len(os.Args) > 2 && os.Args[2] == "--nested-probe" {
				os.Exit(NestedProbe())
			}
			os.Exit(Main())
		case "helper":
			os.Exit(helper(os.Args[2:]))
		case sandbox.Verb: // as internal/earlysandbox takes it
			if shell, rules, rest, ok := sandbox.Parse(os.Args[1:]); ok {
				err := sandbox.Exec(shell, rules, rest)
				fmt.Fprintln(os.Stderr, "sandbox:", err)
				os.Exit(126)
			}
		}
	}
	os.Exit(m.Run())
}

// helper is what runs inside (or, for "parent", "probe" and "forget",
// around) a confinement in these tests.
func helper(args []string) int {
	switch args[0] {
	case "check":
		// Each argument is OP:PATH; one line each, "ok OP PATH: detail" or
		// "no OP PATH: error".
		for _, a := range args[1:] {
			op, arg, _ := strings.Cut(a, ":")
			detail, err := check(op, arg)
			if err != nil {
				fmt.Printf("no %s %s: %v\n", op, arg, err)
			} else {
				fmt.Printf("ok %s %s: %s\n", op, arg, detail)
			}
		}
		return 0
	case "nproc":
		// Confine a vendor bounded to args[1] processes that tries to start
		// args[2] sleepers, and print how many it started.
		self, _ := os.Executable()
		s := testSpec(self)
		s.NprocMax, _ = strconv.Atoi(args[1])
		s.Fresh = []string{"/tmp"}
		// A shell gives up on a fork that fails; Python says so and goes
		// on. What is left ends with the vendor (the init kills it).
		i, err := New(s, Command{Program: "/usr/bin/python3", Args: []string{"python3", "-c", `import os, sys, time
n = 0
for _ in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print("started", n, flush=True)`, args[2]}, Dir: "/"})
		if err == nil {
			i.Cmd.Stdout, i.Cmd.Stderr = os.Stdout, os.Stdout
			if err = i.Start(); err == nil {
				_, err = i.Wait()
			}
		}
		if err != nil {
			fmt.Println("nproc:", err)
			return 1
		}
		return 0
	case "spawn":
		// Start args as a child with this process's stdio and wait for it:
		// the vendor starting a tool.
		cmd := exec.Command(args[1], args[2:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Println("spawn:", err)
		}
		return 0
	case "parent":
		// Start a confined sleeper and wait to be killed.
		self, _ := os.Executable()
		i, err := New(testSpec(self), Command{Program: "/bin/sh", Args: []string{"sh", "-c", "exec sleep " + args[1]}, Dir: "/"})
		if err == nil {
			err = i.Start()
		}
		if err != nil {
			fmt.Println("parent:", err)
			return 2
		}
		fmt.Println("started", i.Pid())
		select {}
	case "probe":
		self, _ := os.Executable()
		if _, err := Probe(self); err != nil {
			fmt.Println("unavailable:", err)
			return 1
		}
		fmt.Println("available")
		return 0
	case "forget":
		secret := os.Getenv(args[1])
		if err := ForgetEnv(args[1]); err != nil {
			fmt.Println("forget:", err)
			return 2
		}
		env, _ := os.ReadFile("/proc/self/environ")
		fmt.Printf("forgotten %v\n", secret != "" && !bytes.Contains(env, []byte(secret)) && os.Getenv(args[1]) == "")
		_, _ = io.ReadAll(os.Stdin) // hold still while the test looks from outside
		return 0
	}
	return 2
}

func check(op, arg string) (string, error) {
	// PPID stands for the checking process's parent: the vendor, to a tool.
	arg = strings.ReplaceAll(arg, "PPID", fmt.Sprint(os.Getppid()))
	pid, _ := strconv.Atoi(arg)
	switch op {
	case "ptrace":
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// Detached when this process exits.
		return "attached", unix.PtraceSeize(pid)
	case "vmread", "vmwrite":
		// An address nothing is mapped at: past the permission check the
		// kernel answers EFAULT, which means the call reached the process.
		buf := make([]byte, 8)
		local := []unix.Iovec{{Base: &buf[0], Len: 8}}
		remote := []unix.RemoteIovec{{Base: 0x1000, Len: 8}}
		var err error
		if op == "vmread" {
			_, err = unix.ProcessVMReadv(pid, local, remote, 0)
		} else {
			_, err = unix.ProcessVMWritev(pid, local, remote, 0)
		}
		if errors.Is(err, unix.EFAULT) {
			return "reached the process", nil
		}
		return "", err
	case "getfd":
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(pidfd)
		fd, err := unix.PidfdGetfd(pidfd, 1, 0)
		if err != nil {
			return "", err
		}
		return "took its stdout", unix.Close(fd)
	case "signal":
		return "", unix.Kill(pid, unix.SIGCONT)
	case "openw", "openr":
		flag := os.O_RDONLY
		if op == "openw" {
			flag = os.O_WRONLY
		}
		f, err := os.OpenFile(arg, flag, 0)
		if err != nil {
			return "", err
		}
		return "", f.Close()
	case "link":
		return os.Readlink(arg)
	case "readback":
		// Read from the descriptor this process writes its output to.
		n, err := unix.Read(1, make([]byte, 16))
		return fmt.Sprintf("%d bytes", n), err
	case "writein":
		_, err := unix.Write(0, []byte("x"))
		return "", err
	case "read":
		b, err := os.ReadFile(arg)
		return fmt.Sprintf("%q", b), err
	case "write":
		return "", os.WriteFile(arg, []byte("written inside\n"), 0o644)
	case "ls":
		es, err := os.ReadDir(arg)
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return strings.Join(names, ","), err
	case "umount":
		return "", unix.Unmount(arg, unix.MNT_DETACH)
	case "dial":
		c, err := net.DialTimeout("tcp", arg, 2*time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET / HTTP/1.0\r\n\r\n")
		b, err := io.ReadAll(c)
		return fmt.Sprintf("%q", b[bytes.Index(b, []byte("\r\n\r\n"))+4:]), err
	case "pids":
		es, err := os.ReadDir("/proc")
		n := 0
		for _, e := range es {
			if e.Name()[0] >= '0' && e.Name()[0] <= '9' {
				n++
			}
		}
		return fmt.Sprint(n), err
	}
	return "", errors.New("unknown check")
}

// testSpec confines without a network namespace and hides nothing of the
// caller's: a test adds what it looks at.
func testSpec(self string) *Spec {
	return &Spec{Init: self, Namespaces: []string{User, PID, Mount}, UID: os.Geteuid(), GID: os.Getegid(), ReadOnly: []string{self}}
}

// available skips a test on a host that cannot confine, unless CI must.
func available(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Probe(self); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("confinement is unavailable under CI: %v", err)
		}
		t.Skipf("confinement is unavailable here: %v", err)
	}
	return self
}

// run starts c confined by s and returns its stdout and how it ended.
func run(t *testing.T, s *Spec, c Command) (string, *Exit) {
	t.Helper()
	i, err := New(s, c)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	i.Cmd.Stdout, i.Cmd.Stderr = &out, os.Stderr
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	ex, err := i.Wait()
	if err != nil || ex == nil {
		t.Fatalf("the init did not report the vendor's end: %v", err)
	}
	return out.String(), ex
}

func helperCmd(self string, args ...string) Command {
	return Command{Program: self, Args: append([]string{self, "helper"}, args...), Dir: "/"}
}

// lines maps each "ok|no OP ARG" line to its detail.
func lines(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		m[k] = v
	}
	return m
}

// TestMountView: hidden directories are empty and read-only, a fresh one
// is writable and thrown away, bound-back paths read (and write) as they
// were, the links to a bound file are recreated, covered paths read empty
// even inside a writable bind, the rest of / is read-only, /proc holds the
// child's own processes only, /dev the harmless devices only, and nothing
// inside can unmount what hides a path.
func TestMountView(t *testing.T) {
	self := available(t)
	root := t.TempDir()
	mk := func(p, content string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("home/.claude.json", "LOGIN-SECRET")
	mk("home/.codex/auth.json", "CODEX-SECRET")
	token := mk("work/token", "TOKEN-SECRET")
	mk("work/notes", "notes")
	mk("ro/file", "read me")
	mk("other/file", "visible")
	mk("fresh/old", "old")
	home := filepath.Join(root, "home")
	link := filepath.Join(home, ".local/bin/helper")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	// A writable tree named through a link in a hidden one (a --cwd given
	// as a link) is entered by that name.
	workLink := filepath.Join(home, "work")
	if err := os.Symlink("../work", workLink); err != nil {
		t.Fatal(err)
	}
	s := testSpec(self)
	s.Hidden = []string{home}
	s.Fresh = []string{filepath.Join(root, "fresh")}
	s.ReadOnly = []string{link, filepath.Join(root, "ro")}
	s.Writable = []string{workLink}
	s.Covered = []string{token, filepath.Join(home, ".claude*"), filepath.Join(home, ".codex")}

	r := func(p string) string { return filepath.Join(root, p) }
	out, ex := run(t, s, Command{Program: link, Args: []string{link, "helper", "check",
		"read:" + r("home/.claude.json"), "ls:" + home, "ls:" + r("home/.local/bin"), "write:" + r("home/x"),
		"read:" + token, "read:" + r("work/notes"), "write:" + r("work/new"), "read:" + r("home/work/notes"),
		"read:" + r("ro/file"), "write:" + r("ro/x"), "read:" + r("other/file"), "write:" + r("other/x"),
		"ls:" + r("fresh"), "write:" + r("fresh/x"), "write:/etc/metaharness-confine-test",
		"pids:", "read:/proc/1/cmdline", "read:/proc/1/environ", "ls:/dev", "umount:" + home, "umount:" + r("work"),
	}, Dir: "/"})
	if ex.Code == nil || *ex.Code != 0 {
		t.Fatalf("helper ended %+v:\n%s", ex, out)
	}
	got := lines(out)
	t.Logf("inside:\n%s", out)
	for _, want := range []string{
		"no read " + r("home/.claude.json"), "ok ls " + home, "ok ls " + r("home/.local/bin"), "no write " + r("home/x"),
		"ok read " + token, "ok read " + r("work/notes"), "ok write " + r("work/new"), "ok read " + r("home/work/notes"),
		"ok read " + r("ro/file"), "no write " + r("ro/x"), "ok read " + r("other/file"), "no write " + r("other/x"),
		"ok ls " + r("fresh"), "ok write " + r("fresh/x"), "no write /etc/metaharness-confine-test",
		"ok pids ", "ok read /proc/1/cmdline", "no read /proc/1/environ", "ok ls /dev", "no umount " + home, "no umount " + r("work"),
	} {
		if _, ok := got[want]; !ok {
			t.Errorf("inside, %q did not happen", want)
		}
	}
	for k, want := range map[string]string{
		"ok ls " + home:                     ".local,work",
		"ok ls " + r("home/.local/bin"):     "helper",
		"ok read " + token:                  `""`,
		"ok read " + r("work/notes"):        `"notes"`,
		"ok ls " + r("fresh"):               "",
		"ok pids ":                          "2",
		"ok ls /dev":                        "fd,full,null,ptmx,pts,random,shm,stderr,stdin,stdout,tty,urandom,zero",
		"ok read /proc/1/cmdline":           `"` + self + `\x00internal-init\x00"`,
		"ok read " + r("other/file"):        `"visible"`,
		"ok read " + r("ro/file"):           `"read me"`,
		"no read " + r("home/.claude.json"): "open " + r("home/.claude.json") + ": no such file or directory",
	} {
		if got[k] != want && !(k == "ok ls /dev" && strings.Replace(got[k], "tty,", "", 1) == strings.Replace(want, "tty,", "", 1)) {
			t.Errorf("%s: got %q, want %q", k, got[k], want)
		}
	}
	if b, err := os.ReadFile(r("work/new")); err != nil || string(b) != "written inside\n" {
		t.Errorf("the write into the writable bind did not reach the caller's tree: %q %v", b, err)
	}
	if _, err := os.Stat(r("fresh/x")); err == nil {
		t.Error("a write into a fresh directory outlived the run")
	}
	if b, _ := os.ReadFile(token); string(b) != "TOKEN-SECRET" {
		t.Error("the covered file changed outside")
	}
}

// TestNetwork: inside, lo is up and the listeners the init opened (the
// model route's, the gate's and the decision endpoint's) are how the child
// reaches metaharness; a
// server in metaharness's namespace on any other loopback address is out
// of reach.
func TestNetwork(t *testing.T) {
	self := available(t)
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = http.Serve(outside, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OUTSIDE") }))
	}()
	defer outside.Close()
	// The same port number inside: the child's namespace is empty.
	port := outside.Addr().(*net.TCPAddr).Port
	s := testSpec(self)
	s.Namespaces = append(s.Namespaces, Net)
	s.Listen = fmt.Sprintf("127.0.0.1:%d", port)
	s.GateListen = fmt.Sprintf("127.0.0.1:%d", port+1)
	s.DecisionListen = fmt.Sprintf("127.0.0.1:%d", port+2)
	i, err := New(s, helperCmd(self, "check", "dial:"+s.Listen, "dial:"+s.GateListen, "dial:"+s.DecisionListen, "dial:127.9.9.9:80"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	i.Cmd.Stdout = &out
	if err := i.Start(); err != nil {
		t.Fatal(err)
	}
	ls := i.Listeners()
	if ls.Model == nil || ls.Gate == nil || ls.Decision == nil {
		t.Fatalf("listeners from inside: %+v", ls)
	}
	for l, says := range map[net.Listener]string{ls.Model: "PROXY", ls.Gate: "GATE", ls.Decision: "DECIDE"} {
		go func() {
			_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, says) }))
		}()
	}
	if _, err := i.Wait(); err != nil {
		t.Fatal(err)
	}
	_ = ls.Model.Close()
	_ = ls.Gate.Close()
	_ = ls.Decision.Close()
	got := lines(out.String())
	if got["ok dial "+s.Listen] != `"PROXY"` || got["ok dial "+s.GateListen] != `"GATE"` || got["ok dial "+s.DecisionListen] != `"DECIDE"` {
		t.Errorf("inside, %s, %s and %s did not reach the listeners served outside:\n%s", s.Listen, s.GateListen, s.DecisionListen, out.String())
	}
	if _, ok := got["no dial 127.9.9.9:80"]; !ok {
		t.Errorf("inside, another loopback address was reachable:\n%s", out.String())
	}
}

// TestLifetime: the vendor's own end is reported (a code, a signal), and
// what it left behind ends with it.
func TestLifetime(t *testing.T) {
	self := available(t)
	marker := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000)
	_, ex := run(t, testSpec(self), Command{Program: "/bin/sh", Args: []string{"sh", "-c", "nohup sh -c 'exec sleep " + marker + "' >/dev/null 2>&1 & exit 3"}, Dir: "/"})
	if ex.Code == nil || *ex.Code != 3 {
		t.Errorf("exit %+v, want code 3", ex)
	}
	if left := vendortest.WaitGone("sleep " + marker); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	_, ex = run(t, testSpec(self), Command{Program: "/bin/sh", Args: []string{"sh", "-c", "kill -9 $$"}, Dir: "/"})
	if ex.Signal == nil || *ex.Signal != int(syscall.SIGKILL) {
		t.Errorf("exit %+v, want signal 9", ex)
	}
}

// TestSignalPassedOn: SIGTERM to the init reaches the vendor's process
// group, and so does SIGTERM straight to that group (SignalVendor, by the
// pid the init's pidfd names here); the vendor may end as it likes.
func TestSignalPassedOn(t *testing.T) {
	self := available(t)
	for name, send := range map[string]func(*Init) error{
		"through the init": func(i *Init) error { return i.Signal(syscall.SIGTERM) },
		"to the group":     func(i *Init) error { return i.SignalVendor(syscall.SIGTERM) },
	} {
		t.Run(name, func(t *testing.T) {
			i, err := New(testSpec(self), Command{Program: "/bin/sh", Args: []string{"sh", "-c", `trap 'exit 42' TERM; echo ready; while :; do sleep 0.1; done`}, Dir: "/"})
			if err != nil {
				t.Fatal(err)
			}
			out, err := i.Cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := i.Start(); err != nil {
				t.Fatal(err)
			}
			if i.vendor <= 0 || i.vendor == i.Pid() {
				t.Errorf("the vendor's pid here is %d (the init's %d)", i.vendor, i.Pid())
			}
			if l, _ := bufio.NewReader(out).ReadString('\n'); l != "ready\n" {
				t.Fatalf("read %q", l)
			}
			if err := send(i); err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, out)
			ex, err := i.Wait()
			if err != nil || ex == nil || ex.Code == nil || *ex.Code != 42 {
				t.Errorf("exit %+v (%v), want code 42 from the vendor's trap", ex, err)
			}
		})
	}
}

// TestDiesWithMetaharness: SIGKILL of the process that started the init
// leaves nothing of the confinement running.
func TestDiesWithMetaharness(t *testing.T) {
	self := available(t)
	marker := fmt.Sprintf("1000.%d", time.Now().UnixNano()%1000000)
	cmd := exec.Command(self, "helper", "parent", marker)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(l, "started ") {
		_ = cmd.Process.Kill()
		t.Fatalf("the parent said %q", l)
	}
	// Seen once is enough: looking twice can fall into the instant the
	// shell execs sleep, when its command line reads empty.
	seen := false
	for deadline := time.Now().Add(5 * time.Second); !seen && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		seen = len(vendortest.Lingering("sleep "+marker)) > 0
	}
	if !seen {
		t.Fatal("the sleeper never ran")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if left := vendortest.WaitGone("sleep " + marker); len(left) > 0 {
		t.Errorf("left behind after SIGKILL of the parent: %v", left)
	}
}

// TestUnavailable: where the caller cannot make a user namespace (here: an
// unmapped uid in a user namespace of its own), Probe says so and why.
func TestUnavailable(t *testing.T) {
	self := available(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1)")
	}
	out, err := exec.Command(unshare, "--user", self, "helper", "probe").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unavailable: cloning the child's namespaces") {
		t.Errorf("probe in an unmapped user namespace: %v\n%s", err, out)
	}
}

// TestUnprivileged: a caller that is not root confines too (mapped to uid
// 0 inside, through the dumpable window of withDumpable).
func TestUnprivileged(t *testing.T) {
	self := available(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to become another user")
	}
	dir, err := os.MkdirTemp("", "confine-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "helper")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	const nobody = 65534
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "helper", "probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "available") {
		t.Fatalf("as uid %d the probe said: %v\n%s", nobody, err, out)
	}
}

// TestForgetEnv: once forgotten, a variable is gone from the block the
// kernel shows anyone who may read /proc/<pid>/environ.
func TestForgetEnv(t *testing.T) {
	secret := fmt.Sprintf("SECRET-%d", time.Now().UnixNano())
	self, _ := os.Executable()
	cmd := exec.Command(self, "helper", "forget", "MH_FORGET")
	cmd.Env = []string{"BEFORE=1", "MH_FORGET=" + secret, "AFTER=2"}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l, _ := bufio.NewReader(out).ReadString('\n')
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
	_ = in.Close()
	_ = cmd.Wait()
	if l != "forgotten true\n" {
		t.Errorf("inside: %q", l)
	}
	if err != nil || bytes.Contains(env, []byte(secret)) || !bytes.Contains(env, []byte("BEFORE=1\x00MH_FORGET=")) || !bytes.Contains(env, []byte("AFTER=2")) {
		t.Errorf("from outside, the environment block reads %q (%v)", env, err)
	}
}

// TestListenersNeedTheNetworkNamespace: a spec that asks the init for a
// listener (the model route's, the gate's, the decision endpoint's)
// without a network namespace to open it in, or for the gate without the
// model route, is refused before anything starts.
func TestListenersNeedTheNetworkNamespace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Spec)
		wants string
	}{
		{"decision endpoint", func(s *Spec) { s.DecisionListen = "127.0.0.1:40003" }, "127.0.0.1:40003) needs that namespace"},
		{"model route", func(s *Spec) { s.Listen = "127.0.0.1:40001" }, "127.0.0.1:40001) needs that namespace"},
		{"gate alone", func(s *Spec) { s.Namespaces = append(s.Namespaces, Net); s.GateListen = "127.0.0.1:40002" }, "without the model route"},
	} {
		s := testSpec("/usr/local/bin/metaharness")
		tc.edit(s)
		if err := s.Check(); err == nil || !strings.Contains(err.Error(), tc.wants) {
			t.Errorf("%s: %v, want an error saying %q", tc.name, err, tc.wants)
		}
	}
	s := testSpec("/usr/local/bin/metaharness")
	s.Namespaces = append(s.Namespaces, Net)
	s.Listen, s.GateListen, s.DecisionListen = "127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"
	if err := s.Check(); err != nil {
		t.Errorf("all three listeners in the network namespace: %v", err)
	}
}
