package actions

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/autoharness"
)

// githubFiles is a GITHUB_OUTPUT and a GITHUB_STEP_SUMMARY that already
// hold a line of an earlier step, which must stay.
func githubFiles(t *testing.T) (env map[string]string, out, summary string) {
	dir := t.TempDir()
	out, summary = filepath.Join(dir, "output"), filepath.Join(dir, "summary")
	os.WriteFile(out, []byte("earlier=1\n"), 0o644)
	os.WriteFile(summary, []byte("# Earlier\n"), 0o644)
	return map[string]string{"GITHUB_OUTPUT": out, "GITHUB_STEP_SUMMARY": summary}, out, summary
}

func read(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteOutputs(t *testing.T) {
	env, out, summary := githubFiles(t)
	env["GITHUB_ACTIONS"] = "true"
	env["HARNESS_CONCURRENCY_ID"] = "  github-7 "
	var stdout bytes.Buffer
	s := &autoharness.Session{ID: "s1", URL: "https://ui/sessions/s1", Created: true}
	route := []autoharness.TargetRef{{CommandName: "mh-claude"}, {ProviderID: "p1", ProviderName: "ignored"}, {CommandID: "c2"}, {ProviderName: "codex"}}
	if err := WriteOutputs(env, &stdout, s, route); err != nil {
		t.Fatal(err)
	}
	if got := read(t, out); got != "earlier=1\nsession-id=s1\nsession-url=https://ui/sessions/s1\ncreated=true\n" {
		t.Errorf("GITHUB_OUTPUT:\n%s", got)
	}
	want := "# Earlier\n## Auto Harness dispatch\n\n- Session: [s1](https://ui/sessions/s1)\n- Created: yes\n- Concurrency: `github-7`\n- Provider route: `mh-claude` → `p1` → `c2` → `codex`\n"
	if got := read(t, summary); got != want {
		t.Errorf("GITHUB_STEP_SUMMARY:\n%q\nwant\n%q", got, want)
	}
	if stdout.String() != "::notice title=Auto Harness session::s1 created https://ui/sessions/s1\n" {
		t.Errorf("stdout %q", stdout.String())
	}

	// Reused, no concurrency identity, the route kept from the session; not
	// under Actions: no notice.
	env, out, summary = githubFiles(t)
	stdout.Reset()
	if err := WriteOutputs(env, &stdout, &autoharness.Session{ID: "s2", URL: "u"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := read(t, out); got != "earlier=1\nsession-id=s2\nsession-url=u\ncreated=false\n" {
		t.Errorf("GITHUB_OUTPUT:\n%s", got)
	}
	if got := read(t, summary); got != "# Earlier\n## Auto Harness dispatch\n\n- Session: [s2](u)\n- Created: no\n- Provider route: retained from the existing session\n" {
		t.Errorf("GITHUB_STEP_SUMMARY:\n%q", got)
	}
	if stdout.Len() != 0 {
		t.Errorf("a notice outside Actions: %q", stdout.String())
	}

	// Nothing asked for, nothing written.
	if err := WriteOutputs(map[string]string{"GITHUB_ACTIONS": "false"}, &stdout, s, route); err != nil || stdout.Len() != 0 {
		t.Errorf("%v %q", err, stdout.String())
	}
}

// TestOutputsCannotBeForged: a server's value with a line break is written
// in the delimited form, and the notice's message escaped, so it cannot
// set an output or start a workflow command of its own.
func TestOutputsCannotBeForged(t *testing.T) {
	env, out, _ := githubFiles(t)
	env["GITHUB_ACTIONS"] = "true"
	var stdout bytes.Buffer
	s := &autoharness.Session{ID: "s1\ncreated=forged", URL: "https://ui/%0A\r\n::error::x"}
	if err := WriteOutputs(env, &stdout, s, nil); err != nil {
		t.Fatal(err)
	}
	got := read(t, out)
	re := regexp.MustCompile(`^earlier=1\nsession-id<<(ghadelimiter_[0-9a-f]{32})\ns1\ncreated=forged\n(ghadelimiter_[0-9a-f]{32})\nsession-url<<(ghadelimiter_[0-9a-f]{32})\nhttps://ui/%0A\r\n::error::x\n(ghadelimiter_[0-9a-f]{32})\ncreated=false\n$`)
	m := re.FindStringSubmatch(got)
	if m == nil || m[1] != m[2] || m[3] != m[4] || m[1] == m[3] {
		t.Errorf("GITHUB_OUTPUT:\n%q", got)
	}
	if want := "::notice title=Auto Harness session::s1%0Acreated=forged reused https://ui/%250A%0D%0A::error::x\n"; stdout.String() != want {
		t.Errorf("stdout %q\nwant %q", stdout.String(), want)
	}
}

func TestWriteDrainOutputs(t *testing.T) {
	env, out, summary := githubFiles(t)
	d := &autoharness.SessionDrain{OperationID: "d1", Status: "failed", QueuedCount: 2, RunningCount: 1, CancelledCount: 3, FailureCode: "CANCEL_FAILED"}
	if err := WriteDrainOutputs(env, d); err != nil {
		t.Fatal(err)
	}
	if got := read(t, out); got != "earlier=1\noperation-id=d1\nstatus=failed\nqueued-count=2\nrunning-count=1\ncancelled-count=3\nfailure-code=CANCEL_FAILED\n" {
		t.Errorf("GITHUB_OUTPUT:\n%s", got)
	}
	if got := read(t, summary); got != "# Earlier\n" {
		t.Errorf("the summary was written: %q", got)
	}
	d.FailureCode, d.Status = "", "succeeded"
	env, out, _ = githubFiles(t)
	if err := WriteDrainOutputs(env, d); err != nil {
		t.Fatal(err)
	}
	if got := read(t, out); !strings.HasSuffix(got, "status=succeeded\nqueued-count=2\nrunning-count=1\ncancelled-count=3\nfailure-code=\n") {
		t.Errorf("GITHUB_OUTPUT:\n%s", got)
	}
	if err := WriteDrainOutputs(map[string]string{}, d); err != nil {
		t.Error(err)
	}
}

func TestWritesNameTheFile(t *testing.T) {
	env := map[string]string{"GITHUB_OUTPUT": filepath.Join(t.TempDir(), "missing", "output")}
	err := WriteDrainOutputs(env, &autoharness.SessionDrain{})
	if err == nil || !strings.HasPrefix(err.Error(), "appending to GITHUB_OUTPUT ("+env["GITHUB_OUTPUT"]+"): ") {
		t.Errorf("error %v", err)
	}
}
