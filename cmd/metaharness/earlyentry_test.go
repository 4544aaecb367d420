package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/confine/sandbox"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	b10xhook "github.com/metaharness/metaharness/launcher/b10x/hook"
)

// TestEarlyEntrySkipsTheHeavyInits: the processes metaharness starts of
// itself on the vendor's path (the confined child's init, the command
// sandbox, the b10x loop's hook)
// end in internal/earlyentry's initialiser, before mcp-go's schema library
// compiles its meta-schemas; every other invocation initialises everything.
// The test binary links what metaharness links, so, reached by the name
// metaharness (TestMain's testscript.Main then runs main), it stands in for
// it; GODEBUG=inittrace=1 prints a line per package initialiser that ran.
func TestEarlyEntrySkipsTheHeavyInits(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mh := filepath.Join(t.TempDir(), "metaharness")
	if err := os.Symlink(self, mh); err != nil {
		t.Fatal(err)
	}
	const heavy = "github.com/santhosh-tekuri/jsonschema"
	inits := func(stdin string, args ...string) (stdout, stderr string) {
		t.Helper()
		cmd := exec.Command(mh, args...)
		cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		return out.String(), errb.String()
	}
	// The control: any other verb initialises the library, so its absence
	// below is the early entry's doing, not a change in Go's tracing.
	if _, stderr := inits("", "--version"); !strings.Contains(stderr, "init "+heavy) {
		t.Fatalf("the control run shows no init of %s:\n%s", heavy, stderr)
	}
	if _, stderr := inits("", confine.NestedProbeArgs()...); strings.Contains(stderr, heavy) {
		t.Errorf("internal-init initialised %s:\n%s", heavy, stderr)
	}
	// The command sandbox runs its shell from internal/earlysandbox, which
	// starts once per command of the agent's: before any library linked
	// here initialises, the ones ahead of earlyentry included (OTLP,
	// protobuf, gRPC, x/sys, confine's own).
	stdout, stderr := inits("", append(sandbox.Args("/bin/sh", sandbox.Rules{}), "-c", "echo sandboxed")...)
	for _, lib := range []string{heavy, "go.opentelemetry.io/", "google.golang.org/protobuf/", "google.golang.org/grpc ",
		"golang.org/x/", "github.com/mark3labs/", "github.com/elastic/", "github.com/metaharness/", "net "} {
		if strings.Contains(stderr, "init "+lib) {
			t.Errorf("internal-sandbox initialised %s…:\n%s", lib, stderr)
		}
	}
	if stdout != "sandboxed\n" {
		t.Errorf("internal-sandbox's shell said %q", stdout)
	}
	// The b10x loop's hook, with no run behind it, answers with its exit
	// status: a block, 2.
	cmd := exec.Command(mh, b10xhook.Args(t.TempDir()+"/gone.sock")...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	cmd.Stdin = strings.NewReader(`{"hook":"before-call","call":{"call_id":"c1","name":"file_read","arguments":{}},"entry":"file_read","workspace":"/w"}` + "\n")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	var ee *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &ee) || ee.ExitCode() != b10xhook.Block {
		t.Errorf("internal-b10x-hook exited %v, want %d", err, b10xhook.Block)
	}
	if strings.Contains(errb.String(), heavy) {
		t.Errorf("internal-b10x-hook initialised %s:\n%s", heavy, errb.String())
	}
	if !strings.HasPrefix(out.String(), `{"reason":"metaharness's decision channel did not answer`) {
		t.Errorf("internal-b10x-hook answered %q, want a block", out.String())
	}
}

// TestSandboxPassesDescriptors: the command sandbox hands its shell every
// descriptor its vendor gave it (the others close theirs on exec), and a
// malformed invocation never runs the command.
func TestSandboxPassesDescriptors(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// By the name metaharness, so that what the early entry leaves falls to
	// main (testscript.Main), as in the release binary.
	mh := filepath.Join(t.TempDir(), "metaharness")
	if err := os.Symlink(self, mh); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mh, append(sandbox.Args("/bin/sh", sandbox.Rules{}), "-c", "echo kept >&3")...)
	cmd.ExtraFiles = []*os.File{w}
	out, err := cmd.CombinedOutput()
	_ = w.Close()
	b := make([]byte, 64)
	n, _ := r.Read(b)
	if err != nil || string(b[:n]) != "kept\n" {
		t.Errorf("descriptor 3 read %q (%v: %s)", b[:n], err, out)
	}
	cmd = exec.Command(mh, "internal-sandbox", "--shell", "/bin/sh", "-c", "echo RAN")
	if out, err := cmd.CombinedOutput(); err == nil || strings.Contains(string(out), "RAN") {
		t.Errorf("a malformed sandbox invocation: %v\n%s", err, out)
	}
}

// TestHookVerbsFindTheirHook: an invocation the early entry does not take
// (here a relative socket) reaches main's hook verbs, which find their
// program in launcher/kinds/hooks by the verb's name: a name the table
// does not hold would answer "no hook program" instead of the hook's deny.
func TestHookVerbsFindTheirHook(t *testing.T) {
	for _, c := range []struct {
		args  []string
		stdin string
		code  exit.Code
		want  string
	}{
		{b10xhook.Args("gone.sock"), `{"hook":"before-call","call":{"call_id":"c1","name":"file_read","arguments":{}},"entry":"file_read","workspace":"/w"}` + "\n", b10xhook.Block, `{"reason":"metaharness's decision channel did not answer`},
	} {
		var out, errb strings.Builder
		code := Main(c.args, strings.NewReader(c.stdin), &out, &errb, nil)
		if code != c.code || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %s", c.args, code, out.String(), errb.String(), c.code, c.want)
		}
	}
}
