package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rhysd/actionlint"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// examplesDir holds the examples docs/embedding.md shows.
var examplesDir = filepath.Join("..", "..", "examples")

// examplesRunBy names, for each file under examples/, the test that runs
// it, so that make test runs every example and none rots unseen.
var examplesRunBy = map[string]string{
	"auto-harness/mh-claude.command.json": "TestHostDaemonCommand/claude, TestHostDaemonCancel/claude, TestHostDaemonQuota/claude, TestHostDaemonThrottle, TestHostDaemonPhraseInAnswer, TestHostDaemonCommit/claude, TestHostDaemonSessionOutputs",
	"auto-harness/mh-codex.command.json":  "TestHostDaemonCommand/codex, TestHostDaemonCancel/codex, TestHostDaemonQuota/codex, TestHostDaemonCommit/codex",
	"auto-harness/worktree.frame.json":    "TestHostDaemonCommand, TestHostDaemonCommit (the frame both Commands name)",
	"auto-harness/dispatch-mh-claude.yml": "TestExampleDispatchWorkflow (cmd/auto-harness: the dispatch Action run as Actions runs it, against a stand-in control plane)",
	"sidecars/claude-with-sidecars.sh":    "TestExampleSidecars",
	"first-run/hello.json":                "TestReadmeKeylessFirstRun",
	"ask/allow-reads.sh":                  "TestDocsAskExample",
	"ask/model.json":                      "TestDocsAskExample",
	"ci/governed-session.yml":             "TestExampleCIWorkflow",
}

// TestExamplesAreRun: every file under examples/ is run by a test, and
// every file examplesRunBy names is there.
func TestExamplesAreRun(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir(examplesDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(examplesDir, path)
		seen[rel] = true
		if examplesRunBy[rel] == "" {
			t.Errorf("examples/%s is run by no test: add one, and name it in examplesRunBy", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range examplesRunBy {
		if !seen[rel] {
			t.Errorf("examplesRunBy names examples/%s, which is not there", rel)
		}
	}
}

// TestExampleSidecars runs examples/sidecars/claude-with-sidecars.sh as
// an embedder would, with the real Claude Code against the scripted
// model: the agent, holding only the proxy's placeholder, calls a tool of
// mcp-serve --http and answers; the answer is the script's stdout, the
// proxy's lines (start, counters) and mcp-serve's decision record are in
// the records directory, the upstream saw only the real token, both
// sidecars are gone when the script ends, and the caller's home holds no
// ~/.claude or ~/.claude.json (nor its TMPDIR the agent's home).
func TestExampleSidecars(t *testing.T) {
	claude := vendortest.Binary(t, "claude")
	tools := vendortest.Tools(t)
	self, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	token := randomToken("sk-ant-test-REAL-")
	marker := randomToken("SIDECARS-OK-")
	home := vendortest.NewHome(t)
	if err := os.WriteFile(filepath.Join(home.Work, "notes.txt"), []byte("the release is on Friday\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(home.ClaudeConfig); err != nil { // the caller's ~/.claude: absent, and it must stay so
		t.Fatal(err)
	}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__tool_invoke", Input: json.RawMessage(`{"name":"fs.read","arguments":{"path":"notes.txt"}}`)}},
	}, Final: marker})
	defer up.Close()
	records := filepath.Join(t.TempDir(), "records")
	script, _ := filepath.Abs(filepath.Join(examplesDir, "sidecars", "claude-with-sidecars.sh"))
	cmd := exec.Command("sh", script, up.URL(), home.Work, records, "What does notes.txt say?")
	// The real Claude Code first: metaharness's directory holds the test's
	// stand-in claude too.
	// The caller's environment, telemetry off, without the CLAUDE_CONFIG_DIR
	// the other tests give Claude Code: the script must keep the agent's
	// files out of the caller's HOME itself.
	for _, kv := range home.ClaudeEnv(tools, map[string]string{"ANTHROPIC_API_KEY": token}) {
		if !strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(claude)+":"+filepath.Dir(self)+":/usr/local/bin:/usr/bin:/bin")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		err = <-done
	}
	if err != nil || stdout.String() != marker+"\n" {
		t.Fatalf("the script: %v; stdout %q, want the answer %q\nstderr:\n%s", err, stdout.String(), marker+"\n", stderr.String())
	}
	checkUpstream(t, up, token, "mh-run-")
	reqs := up.Requests()
	if len(reqs) < 2 || !strings.Contains(string(reqs[len(reqs)-1].Body), "the release is on Friday") {
		t.Errorf("the tool's result did not reach the model (%d requests)", len(reqs))
	}

	lines := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(records, "loopback.jsonl")), "\n"), "\n")
	var start struct {
		Placeholder string                       `json:"placeholder"`
		Env         map[string]map[string]string `json:"env"`
	}
	var end struct {
		Counters *loopback.Counters `json:"counters"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &start) != nil || json.Unmarshal([]byte(lines[1]), &end) != nil || end.Counters == nil {
		t.Fatalf("loopback.jsonl is not a start line and a counters line:\n%s", strings.Join(lines, "\n"))
	}
	if c := end.Counters; c.Forwarded != uint64(len(reqs)) || c.RefusedAuth != 0 || c.RefusedEgress != 0 || c.UpstreamQuota != 0 {
		t.Errorf("counters %+v, want %d forwarded and nothing refused", c, len(reqs))
	}
	for _, r := range reqs {
		if strings.Contains(string(r.Body), start.Placeholder) || strings.Contains(string(r.Body), token) {
			t.Error("a request body carried the placeholder or the token")
		}
	}
	decisions := readFile(t, filepath.Join(records, "decisions.jsonl"))
	if !regexp.MustCompile(`(?m)^\{"decided":"allow".*"tool":"tool_invoke"`).MatchString(decisions) || !strings.Contains(decisions, "fs.read") {
		t.Errorf("decisions.jsonl holds no record of the fs.read call:\n%s", decisions)
	}
	for _, f := range []string{"loopback.jsonl", "loopback.log", "decisions.jsonl", "mcp.json", "mcp-config.json"} {
		if strings.Contains(readFile(t, filepath.Join(records, f)), token) {
			t.Errorf("%s holds the real token", f)
		}
	}
	if left := append(vendortest.Lingering(records), append(vendortest.Lingering(home.Work), vendortest.Lingering(up.URL())...)...); len(left) > 0 {
		t.Errorf("sidecars outlived the script: %v", left)
	}
	for _, p := range []string{filepath.Join(home.Home, ".claude"), filepath.Join(home.Home, ".claude.json")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the script left %s in the caller's home", p)
		}
	}
	if left, _ := os.ReadDir(home.Tmp); len(left) > 0 {
		t.Errorf("the script left %d entries in TMPDIR (the agent's home is removed at the end): %v", len(left), left)
	}
}

// TestExampleCIWorkflow: examples/ci/governed-session.yml passes
// actionlint (the Go tool in go.mod), and its session step's command lines,
// run as Actions runs a bash step, with the real Claude Code against the
// scripted model in place of the secret's API, leave exactly the records
// the upload step collects, outside the checkout the agent may write: the answer, the event stream ending in
// stream.closed, and the attestation.
func TestExampleCIWorkflow(t *testing.T) {
	path := filepath.Join(examplesDir, "ci", "governed-session.yml")
	lint := exec.Command("go", "tool", "actionlint", "-no-color", path)
	if out, err := lint.CombinedOutput(); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wf, errs := actionlint.Parse(b)
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	job := wf.Jobs["session"]
	if job == nil {
		t.Fatal("no job session")
	}
	step := func(id string) *actionlint.Step {
		for _, s := range job.Steps {
			if s.ID != nil && s.ID.Value == id || s.Name != nil && s.Name.Value == id {
				return s
			}
		}
		t.Fatalf("no step %q", id)
		return nil
	}
	o := newOperator(t, "")
	marker := randomToken("CI-OK-")
	up := scripted.NewAnthropicServer(scripted.Texts(marker))
	defer up.Close()
	token := randomToken("sk-ant-test-REAL-")
	values := map[string]string{"${{ secrets.ANTHROPIC_API_KEY }}": token, "${{ inputs.task }}": "Reply with exactly: " + marker}

	// The install step's lines but the installs themselves, which this
	// host has done already, without a network.
	install := step("Install metaharness and the pinned Claude Code").Exec.(*actionlint.ExecRun).Run.Value
	var offline []string
	for _, l := range strings.Split(install, "\n") {
		if !strings.HasPrefix(l, "go install ") && !strings.HasPrefix(l, "npm install ") {
			offline = append(offline, l)
		}
	}
	runStep(t, o, strings.Join(offline, "\n"), nil)

	run := step("run")
	env := map[string]string{}
	for _, v := range run.Env.Vars {
		val := v.Value.Value
		if r, ok := values[val]; ok {
			val = r
		} else if strings.Contains(val, "${{") {
			t.Fatalf("the step's %s is an expression the test does not stand in for: %s", v.Name.Value, val)
		}
		env[v.Name.Value] = val
	}
	if env["MODEL_ENDPOINT"] != "https://api.anthropic.com" {
		t.Fatalf("MODEL_ENDPOINT %q", env["MODEL_ENDPOINT"])
	}
	env["MODEL_ENDPOINT"] = up.URL() // the one value this host changes
	runnerTemp := t.TempDir()        // Actions sets RUNNER_TEMP, outside the checkout
	env["RUNNER_TEMP"] = runnerTemp
	script := run.Exec.(*actionlint.ExecRun).Run.Value
	runStep(t, o, script, env)

	upload := step("Upload the records").Exec.(*actionlint.ExecAction)
	dir := strings.Replace(strings.TrimSpace(upload.Inputs["path"].Value.Value), "${{ runner.temp }}", runnerTemp, 1)
	if !filepath.IsAbs(dir) {
		t.Fatalf("the upload path %s is not in the runner's temporary directory, where the run keeps its records", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"answer.txt", "attestation.json", "events.jsonl"}; !slices.Equal(names, want) {
		t.Errorf("the uploaded directory holds %v, want %v", names, want)
	}
	if got := readFile(t, filepath.Join(dir, "answer.txt")); got != marker+"\n" {
		t.Errorf("answer.txt %q, want %q", got, marker+"\n")
	}
	if !strings.Contains(lastLine(readFile(t, filepath.Join(dir, "events.jsonl"))), `"event":"stream.closed"`) {
		t.Error("events.jsonl does not end with stream.closed")
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "attestation.json")), `"exit_code": 0,`) {
		t.Error("the attestation does not say exit 0")
	}
	checkUpstream(t, up, token, "mh-run-")

	// The failing path the workflow claims: the same step without
	// --scratch-cwd runs the agent in the checkout itself, not declared
	// disposable, so the audit finds gating gaps, the step exits 1 and the
	// job fails; the records are still there to upload.
	gapScript := strings.Replace(script, " --scratch-cwd", "", 1)
	if gapScript == script {
		t.Fatal("the run step has no --scratch-cwd to leave out")
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	gapUp := scripted.NewAnthropicServer(scripted.Texts(marker))
	defer gapUp.Close()
	env["MODEL_ENDPOINT"] = gapUp.URL()
	code, out := stepExit(t, o, gapScript, env)
	t.Logf("the step without --scratch-cwd:\n%s", out)
	if code != 1 {
		t.Fatalf("the step without --scratch-cwd exited %d, want 1 (a gap fails the job)", code)
	}
	for _, row := range []string{"H7", "H11"} {
		if !regexp.MustCompile(`(?m)^ +` + row + ` +gap +gating `).MatchString(out) {
			t.Errorf("the audit report does not name %s a gating gap", row)
		}
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "attestation.json")), `"exit_code": 1,`) {
		t.Error("the attestation of the failed step does not say exit 1")
	}
}

// runStep runs a workflow step's run script in the operator's tree as
// Actions runs a bash step on Linux (bash -e -o pipefail), with env added,
// and fails the test unless the step succeeds.
func runStep(t *testing.T, o *operator, script string, env map[string]string) {
	t.Helper()
	code, out := stepExit(t, o, script, env)
	if code != 0 {
		t.Fatalf("the step\n%s\nexited %d\n%s", script, code, out)
	}
	t.Logf("step output:\n%s", out)
}

// stepExit runs a step as runStep does and returns its exit status (what
// fails the job) and its output.
func stepExit(t *testing.T, o *operator, script string, env map[string]string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = o.tree, slices.Clone(o.env)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("the step\n%s\ndid not run: %v", script, err)
	}
	return 0, string(out)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndexByte(s, '\n')+1:]
}
