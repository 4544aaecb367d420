package attest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/exit"
)

// The auditor tests run real small executables: shell scripts written into
// a temporary directory. They are not parallel, so that no fork elsewhere in
// this process holds a script open for writing while it is executed.

// fixture is a PATH directory holding an auditor script, and a spec file
// outside any writable tree.
type fixture struct {
	bin, spec, argsFile string
}

// script is the body of the fake auditor: it records its argv, one per
// line, then does what body says.
func newFixture(t *testing.T, body string) fixture {
	t.Helper()
	dir := t.TempDir()
	f := fixture{bin: filepath.Join(dir, "bin"), spec: filepath.Join(dir, "spec.yaml"), argsFile: filepath.Join(dir, "argv")}
	if err := os.Mkdir(f.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(f.bin, "aud"), f.argsFile, body)
	if err := os.WriteFile(f.spec, []byte("rules: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func writeScript(t *testing.T, path, argsFile, body string) {
	t.Helper()
	text := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > '" + argsFile + "'\n" + body + "\n"
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) pairing(auditor string) Pairing {
	return Pairing{Audit: true, Auditor: &auditor, Spec: &f.spec, PATH: "/nonexistent:" + f.bin}
}

func refusalName(t *testing.T, err error) exit.Name {
	t.Helper()
	var r *exit.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("error %v is not a refusal", err)
	}
	return r.Name
}

// TestPairingChecksInOrder triggers each of the eight checks of SPEC §9,
// and for every check after the first also breaks an earlier-numbered
// condition's neighbour to prove that the first match is reported.
func TestPairingChecksInOrder(t *testing.T) {
	f := newFixture(t, "echo ok")
	notExec := filepath.Join(filepath.Dir(f.bin), "notexec")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	str := func(s string) *string { return &s }
	writable := filepath.Dir(f.spec)
	fifo := filepath.Join(filepath.Dir(f.bin), "spec.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		p    Pairing
		want exit.Name
		says string
	}{
		{"1 auditor without an audit", Pairing{Auditor: str("aud"), Spec: &f.spec, PATH: f.bin}, RefuseAuditorWithoutAudit, "--auditor and --spec given but the run asks for no audit"},
		{"1 spec without an audit, before spec-without-auditor", Pairing{Spec: &f.spec}, RefuseAuditorWithoutAudit, "--spec given"},
		{"1 an empty auditor without an audit, before the empty prefix", Pairing{Auditor: str(" ")}, RefuseAuditorWithoutAudit, "--auditor given"},
		{"2 spec without auditor", Pairing{Audit: true, Spec: str("/no/such/spec")}, RefuseSpecWithoutAuditor, "--spec /no/such/spec given without --auditor"},
		{"3 auditor without spec, before the empty prefix", Pairing{Audit: true, Auditor: str("")}, RefuseAuditorWithoutSpec, "without --spec"},
		{"4 empty prefix, before an unreadable spec", Pairing{Audit: true, Auditor: str(" \t "), Spec: str("/no/such/spec")}, RefuseAuditorEmptyPrefix, "--auditor is empty"},
		{"5 not on PATH, before an unreadable spec", Pairing{Audit: true, Auditor: str("no-such-auditor"), Spec: str("/no/such/spec"), PATH: f.bin}, RefuseAuditorNotFound, "on no directory of the PATH run was started with (" + f.bin + ")"},
		{"5 a path that does not exist", Pairing{Audit: true, Auditor: str("/no/such/aud check"), Spec: &f.spec}, RefuseAuditorNotFound, "/no/such/aud does not exist"},
		{"5 the PATH run was started with, not this process's", Pairing{Audit: true, Auditor: str("sh"), Spec: &f.spec, PATH: f.bin}, RefuseAuditorNotFound, ""},
		{"6 not executable", Pairing{Audit: true, Auditor: str(notExec), Spec: str("/no/such/spec")}, RefuseAuditorNotExecutable, "not an executable regular file"},
		{"6 a directory", Pairing{Audit: true, Auditor: str(f.bin), Spec: &f.spec}, RefuseAuditorNotExecutable, "not an executable regular file"},
		{"6 a bare name found only as a non-executable file", Pairing{Audit: true, Auditor: str("notexec"), Spec: &f.spec, PATH: filepath.Dir(f.bin)}, RefuseAuditorNotExecutable, notExec},
		{"7 spec missing, before the writable tree", Pairing{Audit: true, Auditor: str("aud"), Spec: str(filepath.Join(writable, "missing")), PATH: f.bin, WritableTree: writable}, RefuseSpecUnreadable, "missing cannot be opened (no such file or directory)"},
		{"7 spec a directory", Pairing{Audit: true, Auditor: str("aud"), Spec: &writable, PATH: f.bin}, RefuseSpecUnreadable, "is a directory, not a regular file"},
		{"7 spec a named pipe, refused and never waited on", Pairing{Audit: true, Auditor: str("aud"), Spec: &fifo, PATH: f.bin}, RefuseSpecUnreadable, "is a named pipe, not a regular file"},
		{"8 spec inside --cwd", Pairing{Audit: true, Auditor: str("aud"), Spec: &f.spec, PATH: f.bin, WritableTree: writable}, RefuseSpecInsideWritableTree, "lies inside --cwd " + writable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := CheckPairing(c.p)
			if err == nil {
				t.Fatalf("no refusal, got auditor %+v", a)
			}
			if got := refusalName(t, err); got != c.want {
				t.Errorf("refusal %s (%v), want %s", got, err, c.want)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("message %q lacks %q", err, c.says)
			}
		})
	}
}

func TestPairingThatPasses(t *testing.T) {
	f := newFixture(t, "echo ok")
	for _, c := range []struct {
		name string
		p    Pairing
		none bool
	}{
		{"no auditor, no audit", Pairing{}, true},
		{"an audit with no auditor: the floor alone", Pairing{Audit: true}, true},
		{"a bare name on PATH", f.pairing("aud"), false},
		{"a path with a subcommand word", f.pairing(filepath.Join(f.bin, "aud") + " trace check"), false},
		{"the spec outside --cwd", func() Pairing { p := f.pairing("aud"); p.WritableTree = t.TempDir(); return p }(), false},
		{"the spec beside --cwd with a shared prefix", func() Pairing {
			p := f.pairing("aud")
			p.WritableTree = f.spec[:len(f.spec)-len(".yaml")] // ".../spec", a sibling spelling
			return p
		}(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := CheckPairing(c.p)
			if err != nil {
				t.Fatal(err)
			}
			if (a == nil) != c.none {
				t.Errorf("auditor %+v, want none: %v", a, c.none)
			}
		})
	}
}

// TestSpecInsideWritableTreeThroughASymlink: the spec's spelling avoids the
// tree, its resolved path does not.
func TestSpecInsideWritableTreeThroughASymlink(t *testing.T) {
	f := newFixture(t, "echo ok")
	tree := t.TempDir()
	inTree := filepath.Join(tree, "spec.yaml")
	if err := os.WriteFile(inTree, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "spec-link.yaml")
	if err := os.Symlink(inTree, link); err != nil {
		t.Fatal(err)
	}
	p := f.pairing("aud")
	p.Spec, p.WritableTree = &link, tree
	if _, err := CheckPairing(p); err == nil || refusalName(t, err) != RefuseSpecInsideWritableTree {
		t.Errorf("got %v, want %s", err, RefuseSpecInsideWritableTree)
	}
}

func TestAuditorArgvAndVerdictRows(t *testing.T) {
	f := newFixture(t, "printf 'row one\\n\\n   \\nrow two\\nrow three'\nexit 0")
	p := f.pairing("aud trace check")
	p.Args = []string{"--strict", "two words"}
	a, err := CheckPairing(p)
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "/retained/t.jsonl", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"aud", "trace", "check", "--spec", f.spec, "--transcript", "/retained/t.jsonl", "--strict", "two words"}
	if d := cmp.Diff(want, res.Argv); d != "" {
		t.Errorf("argv (-want +got):\n%s", d)
	}
	got, err := os.ReadFile(f.argsFile)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(strings.Join(want[1:], "\n")+"\n", string(got)); d != "" {
		t.Errorf("the auditor received (-want +got):\n%s", d)
	}
	if res.VerdictRows != 3 || res.Exit == nil || *res.Exit != 0 {
		t.Errorf("rows %d exit %v, want 3 rows, exit 0", res.VerdictRows, res.Exit)
	}
	if d := cmp.Diff([]string{"row one", "row two", "row three"}, res.Rows); d != "" {
		t.Errorf("rows (-want +got):\n%s", d)
	}
	line := res.Line()
	if !strings.HasPrefix(line, `auditor ["aud" "trace" "check" "--spec" `) || !strings.HasSuffix(line, ": exit 0, 3 verdict rows") {
		t.Errorf("auditor line %q", line)
	}
}

// TestAuditorExitCodes: 1 and 3 reach the run's exit, others do not; zero
// verdict rows is a refusal whatever the exit.
func TestAuditorExitCodes(t *testing.T) {
	e := Evaluate(stream(cleanStarted(), ended()), cleanLaunch())
	for _, c := range []struct {
		body    string
		refusal exit.Name
		runExit exit.Code
	}{
		{"echo fine; exit 0", "", exit.OK},
		{"echo 'H: the run wrote outside the tree'; exit 1", "", exit.Gap},
		{"echo 'cannot tell'; exit 3", "", exit.Unknown},
		{"echo 'usage problem'; exit 2", "", exit.OK},
		{"echo 'odd'; exit 7", "", exit.OK},
		{"echo row; kill -9 $$", "", exit.OK},
		{"exit 0", RefuseAuditorNoVerdictRows, 0},
		{"printf '\\n  \\n'; exit 1", RefuseAuditorNoVerdictRows, 0},
		{"echo 'only stderr' >&2; exit 3", RefuseAuditorNoVerdictRows, 0},
	} {
		t.Run(c.body, func(t *testing.T) {
			f := newFixture(t, c.body)
			a, err := CheckPairing(f.pairing("aud"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := a.Run(context.Background(), "/t", nil)
			if c.refusal != "" {
				if err == nil || refusalName(t, err) != c.refusal {
					t.Fatalf("got %v, want refusal %s", err, c.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Exit(true, res); got != c.runExit {
				t.Errorf("run exit %d, want %d (auditor %s)", got, c.runExit, res.Line())
			}
		})
	}
}

func TestAuditorKilledBySignalIsNamed(t *testing.T) {
	f := newFixture(t, "echo row; kill -TERM $$")
	a, err := CheckPairing(f.pairing("aud"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), "/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != nil || res.Signal != "SIGTERM" || !strings.HasSuffix(res.Line(), "exit none (signal SIGTERM), 1 verdict rows") {
		t.Errorf("result %+v, line %q", res, res.Line())
	}
}

// TestRecheckAfterTheSession: anything removed or changed between the start
// and the audit is a refusal after the run.
func TestRecheckAfterTheSession(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, f fixture, early string)
		want   exit.Name
		says   string
	}{
		{"program edited", func(t *testing.T, f fixture, _ string) {
			writeScript(t, filepath.Join(f.bin, "aud"), f.argsFile, "echo other")
		}, RefuseAuditorChanged, "changed during the session"},
		{"program removed", func(t *testing.T, f fixture, _ string) { rm(t, filepath.Join(f.bin, "aud")) }, RefuseAuditorNotFound, "after the session: "},
		{"program no longer executable", func(t *testing.T, f fixture, _ string) { chmod(t, filepath.Join(f.bin, "aud"), 0o644) }, RefuseAuditorNotExecutable, "after the session: "},
		{"another program now first on PATH", func(t *testing.T, f fixture, early string) {
			writeScript(t, filepath.Join(early, "aud"), f.argsFile, "echo row")
		}, RefuseAuditorChanged, "resolves to"},
		{"spec edited", func(t *testing.T, f fixture, _ string) {
			if err := os.WriteFile(f.spec, []byte("rules: [changed]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, RefuseSpecChanged, "changed during the session"},
		{"spec removed", func(t *testing.T, f fixture, _ string) { rm(t, f.spec) }, RefuseSpecUnreadable, "after the session: --spec"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, "echo row")
			p := f.pairing("aud")
			early := filepath.Join(t.TempDir(), "early")
			if err := os.Mkdir(early, 0o755); err != nil {
				t.Fatal(err)
			}
			p.PATH = early + ":" + f.bin
			a, err := CheckPairing(p)
			if err != nil {
				t.Fatal(err)
			}
			c.change(t, f, early)
			res, err := a.Run(context.Background(), "/t", nil)
			if err == nil {
				t.Fatalf("no refusal after the change; the auditor ran: %s", res.Line())
			}
			if got := refusalName(t, err); got != c.want || !strings.Contains(err.Error(), c.says) {
				t.Errorf("got %v, want %s saying %q", err, c.want, c.says)
			}
			if _, statErr := os.Stat(f.argsFile); statErr == nil {
				t.Error("the auditor ran although the re-check refused")
			}
		})
	}
}

func TestAuditorThatCannotStart(t *testing.T) {
	f := newFixture(t, "echo row")
	prog := filepath.Join(f.bin, "aud")
	if err := os.WriteFile(prog, []byte("#!/no/such/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := CheckPairing(f.pairing("aud"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "/t", nil); err == nil || refusalName(t, err) != RefuseAuditorNotInvokable {
		t.Errorf("got %v, want %s", err, RefuseAuditorNotInvokable)
	}
}

func TestAuditorCutShort(t *testing.T) {
	f := newFixture(t, "echo row")
	a, err := CheckPairing(f.pairing("aud"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Run(ctx, "/t", nil); err == nil || refusalName(t, err) != RefuseAuditorInterrupted {
		t.Errorf("got %v, want %s", err, RefuseAuditorInterrupted)
	}
}

func TestRowCounterAcrossWrites(t *testing.T) {
	var c rowCounter
	for _, chunk := range []string{"fir", "st\n", "\n  \n", "sec", strings.Repeat("x", maxRowBytes+10), "\nthird"} {
		if _, err := c.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	c.flush()
	if c.count != 3 || c.kept[0] != "first" || len(c.kept[1]) != maxRowBytes || c.kept[2] != "third" {
		t.Errorf("count %d kept %d rows (%q…)", c.count, len(c.kept), c.kept[0])
	}
}

func rm(t *testing.T, p string) {
	t.Helper()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
