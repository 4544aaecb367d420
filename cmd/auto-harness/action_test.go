package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"

	"github.com/metaharness/metaharness/autoharness/actions"
	"github.com/metaharness/metaharness/testkit/fakeplane"
)

// repoRoot is the clone's root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

var actionPath = filepath.Join(repoRoot, "actions", "dispatch", "action.yml")

// actionFile is what the tests read of actions/dispatch/action.yml; the
// mappings stay nodes, so their order is seen.
type actionFile struct {
	Inputs  yaml.Node `yaml:"inputs"`
	Outputs yaml.Node `yaml:"outputs"`
	Runs    struct {
		Using string      `yaml:"using"`
		Steps []yaml.Node `yaml:"steps"`
	} `yaml:"runs"`
}

// step is one step of the composite action.
type step struct {
	ID   string    `yaml:"id"`
	Name string    `yaml:"name"`
	Uses string    `yaml:"uses"`
	Run  string    `yaml:"run"`
	Env  yaml.Node `yaml:"env"`
}

func readAction(t *testing.T) (actionFile, []byte) {
	t.Helper()
	b, err := os.ReadFile(actionPath)
	if err != nil {
		t.Fatal(err)
	}
	var a actionFile
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// pairs are a mapping node's keys and values, in order.
func pairs(n yaml.Node) (keys, values []string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
		values = append(values, n.Content[i+1].Value)
	}
	return keys, values
}

// steps are the action's steps, each decoded as a T.
func steps[T any](t *testing.T, a actionFile) []T {
	var out []T
	for _, n := range a.Runs.Steps {
		var s T
		if err := n.Decode(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestActionMetadata: the composite action takes exactly the dispatch
// Action's inputs (actions.Inputs, in order), hands each to the tool as its
// HARNESS_* variable and nothing else, gives the outputs the Action
// promises, and the key appears nowhere but in the dispatch step's
// environment.
func TestActionMetadata(t *testing.T) {
	a, raw := readAction(t)
	if a.Runs.Using != "composite" {
		t.Errorf("runs.using %q, want composite", a.Runs.Using)
	}
	inputs, _ := pairs(a.Inputs)
	var want []string
	for _, in := range actions.Inputs {
		want = append(want, in.Name)
	}
	if !slices.Equal(inputs, want) {
		t.Errorf("inputs %v, want %v", inputs, want)
	}
	outputs, _ := pairs(a.Outputs)
	if !slices.Equal(outputs, actionOutputs) {
		t.Errorf("outputs %v, want %v", outputs, actionOutputs)
	}
	// Each is the dispatch step's output of its name (status and terminal
	// for the drain's, which auto-harness writes as WriteDrainOutputs
	// names them).
	for i := 0; i+1 < len(a.Outputs.Content); i += 2 {
		var o struct{ Value string }
		if err := a.Outputs.Content[i+1].Decode(&o); err != nil {
			t.Fatal(err)
		}
		name := a.Outputs.Content[i].Value
		from := map[string]string{"drain-status": "status", "drain-terminal": "terminal"}[name]
		if want := "${{ steps.dispatch.outputs." + orName(from, name) + " }}"; o.Value != want {
			t.Errorf("output %s is %q, want %q", name, o.Value, want)
		}
	}
	var dispatch *step
	for _, s := range steps[step](t, a) {
		if s.ID == "dispatch" {
			dispatch = &s
		}
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q puts an expression in its script; pass it through env", s.Name)
		}
	}
	if dispatch == nil {
		t.Fatal("no step with id dispatch")
	}
	names, exprs := pairs(dispatch.Env)
	var wantEnv, wantExprs []string
	for _, in := range actions.Inputs {
		wantEnv = append(wantEnv, in.Env)
		wantExprs = append(wantExprs, "${{ inputs."+in.Name+" }}")
	}
	if !slices.Equal(names, wantEnv) || !slices.Equal(exprs, wantExprs) {
		t.Errorf("the dispatch step's env\n%v\n%v\nwant\n%v\n%v", names, exprs, wantEnv, wantExprs)
	}
	if n := strings.Count(string(raw), "inputs.api-key"); n != 1 {
		t.Errorf("inputs.api-key appears %d times in action.yml, want once (the dispatch step's env)", n)
	}
	if !regexp.MustCompile(`(?m)^      run: '"\$RUNNER_TEMP/auto-harness-bin/auto-harness" dispatch'$`).Match(raw) {
		t.Error(`the dispatch step does not run exactly "$RUNNER_TEMP/auto-harness-bin/auto-harness" dispatch`)
	}
}

// actionOutputs are the outputs the dispatch Action gives, in order.
var actionOutputs = []string{"session-id", "session-url", "created", "operation-id", "status-url", "drain-status", "drain-terminal", "queued-count", "running-count", "cancelled-count", "failure-code"}

func orName(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// lint runs actionlint (the Go module this repository pins) on a workflow;
// with the repository as the project, so a local action's metadata
// (./actions/dispatch) is read and the workflow held to it.
func lint(t *testing.T, name string, workflow []byte) []string {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.Abs(repoRoot)
	proj, err := actionlint.NewProject(root)
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(name, workflow, proj)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// usesAction is a workflow using the local action with inputs and reading
// every one of its outputs.
func usesAction(with map[string]string) []byte {
	var b strings.Builder
	b.WriteString("on: push\njobs:\n  use:\n    runs-on: ubuntu-latest\n    steps:\n      - id: d\n        uses: ./actions/dispatch\n        with:\n")
	for _, in := range actions.Inputs {
		if v, ok := with[in.Name]; ok {
			fmt.Fprintf(&b, "          %s: %s\n", in.Name, v)
		}
	}
	for k, v := range with {
		if !slices.ContainsFunc(actions.Inputs, func(in actions.Input) bool { return in.Name == k }) {
			fmt.Fprintf(&b, "          %s: %s\n", k, v)
		}
	}
	b.WriteString("      - run: echo \"$OUT\"\n        env:\n          OUT: >-\n")
	for _, o := range actionOutputs {
		fmt.Fprintf(&b, "            ${{ steps.d.outputs.%s }}\n", o)
	}
	return []byte(b.String())
}

// TestActionLints: actionlint holds a workflow using the action to its
// metadata (every input accepted, every output typed; an unknown input and
// a missing required one refused, which shows the metadata is read), and
// lints the action's own steps as a job of a workflow_call taking the same
// inputs.
func TestActionLints(t *testing.T) {
	all := map[string]string{}
	for _, in := range actions.Inputs {
		all[in.Name] = "x"
	}
	if errs := lint(t, "uses.yml", usesAction(all)); len(errs) > 0 {
		t.Errorf("a workflow using every input and output:\n%s", strings.Join(errs, "\n"))
	}
	bad := map[string]string{"server-url": "x", "repository-id": "x", "api-token": "x"}
	errs := strings.Join(lint(t, "bad.yml", usesAction(bad)), "\n")
	if !strings.Contains(errs, `input "api-token" is not defined in action "Auto Harness dispatch"`) || !strings.Contains(errs, `missing input "api-key"`) {
		t.Errorf("actionlint did not hold a workflow to the action's inputs:\n%s", errs)
	}

	a, _ := readAction(t)
	inputs, _ := pairs(a.Inputs)
	call := map[string]any{}
	for _, name := range inputs {
		call[name] = map[string]any{"type": "string", "required": false}
	}
	wf, err := yaml.Marshal(map[string]any{
		"on":   map[string]any{"workflow_call": map[string]any{"inputs": call}},
		"jobs": map[string]any{"action": map[string]any{"runs-on": "ubuntu-latest", "steps": steps[any](t, a)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if errs := lint(t, "action-steps.yml", wf); len(errs) > 0 {
		t.Errorf("the action's steps:\n%s\n%s", strings.Join(errs, "\n"), wf)
	}
}

// runAction runs the composite action's run steps as Actions runs a bash
// step (bash -e -o pipefail), its inputs given: the build from this
// checkout, then the dispatch, against the stand-in control plane p, with
// GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and GITHUB_ACTIONS set. It returns
// the dispatch step's exit code and its stdout and stderr, and the files.
func runAction(t *testing.T, p *fakeplane.Server, inputs map[string]string) (code int, out string, output, summary string) {
	t.Helper()
	a, _ := readAction(t)
	tmp := t.TempDir()
	ca := filepath.Join(tmp, "ca.pem")
	if err := p.WriteCA(ca); err != nil {
		t.Fatal(err)
	}
	actionDir, _ := filepath.Abs(filepath.Dir(actionPath))
	base := []string{"GITHUB_ACTION_PATH=" + actionDir, "RUNNER_TEMP=" + tmp, "GITHUB_ACTIONS=true",
		"GITHUB_OUTPUT=" + filepath.Join(tmp, "output"), "GITHUB_STEP_SUMMARY=" + filepath.Join(tmp, "summary"), "SSL_CERT_FILE=" + ca}
	for _, kv := range os.Environ() { // Go's own settings for the build, nothing of the caller's HARNESS_* or GITHUB_*
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "HOME" || strings.HasPrefix(k, "GO") {
			base = append(base, kv)
		}
	}
	code = -1
	for _, s := range steps[step](t, a) {
		if s.Run == "" {
			continue // actions/setup-go: this host has Go
		}
		env := slices.Clone(base)
		names, exprs := pairs(s.Env)
		for i, name := range names {
			in, ok := strings.CutPrefix(exprs[i], "${{ inputs.")
			if !ok {
				t.Fatalf("step %q: %s=%s is an expression the test does not stand in for", s.Name, name, exprs[i])
			}
			env = append(env, name+"="+inputs[strings.TrimSuffix(in, " }}")])
		}
		cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", "-c", s.Run)
		cmd.Env = env
		b, err := cmd.CombinedOutput()
		if s.ID != "dispatch" {
			if err != nil {
				t.Fatalf("step %q: %v\n%s", s.Name, err, b)
			}
			continue
		}
		code, out = cmd.ProcessState.ExitCode(), string(b)
	}
	if code < 0 {
		t.Fatal("the action has no dispatch step")
	}
	output, _ = readMaybe(filepath.Join(tmp, "output"))
	summary, _ = readMaybe(filepath.Join(tmp, "summary"))
	return code, out, output, summary
}

func readMaybe(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// TestActionRuns: the action built and run as Actions would, for a
// session and for a drain, and a refusal that fails the step.
func TestActionRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds auto-harness")
	}
	p := fakeplane.New()
	defer p.Close()
	p.Handle("POST /api/v1/sessions", fakeplane.Reply{Status: 201, Body: `{"id":"s-1","url":"https://ui.example/sessions/s-1","created":true}`})
	p.Handle("GET /api/v1/repositories/repo-1/session-drains/d-1", fakeplane.Reply{Status: 200,
		Body: `{"operationId":"d-1","repositoryId":"repo-1","status":"succeeded","statusUrl":"/api/v1/repositories/repo-1/session-drains/d-1","queuedCount":0,"runningCount":0,"cancelledCount":2}`})

	code, out, output, summary := runAction(t, p, map[string]string{"server-url": p.URL, "api-key": "hk_action", "repository-id": "repo-1",
		"prompt": "Review", "target": `{"providerId":"prov-1"}`, "timeout": "600"})
	if code != 0 || out != "::notice title=Auto Harness session::s-1 created https://ui.example/sessions/s-1\n" {
		t.Fatalf("dispatch exited %d:\n%s", code, out)
	}
	if output != "session-id=s-1\nsession-url=https://ui.example/sessions/s-1\ncreated=true\n" || !strings.Contains(summary, "- Session: [s-1](https://ui.example/sessions/s-1)\n") {
		t.Errorf("GITHUB_OUTPUT %q\nGITHUB_STEP_SUMMARY %q", output, summary)
	}
	if r := p.Requests(); len(r) != 1 || r[0].Header.Get("Authorization") != "Bearer hk_action" ||
		r[0].Body != `{"repositoryId":"repo-1","prompt":"Review","target":{"providerId":"prov-1"},"timeout":600}` {
		t.Errorf("requests %+v", r)
	}

	code, out, output, _ = runAction(t, p, map[string]string{"operation": "wait-for-drain", "server-url": p.URL + "/api/v1", "api-key": "hk_action",
		"repository-id": "repo-1", "session-drain-id": "d-1", "poll-interval-seconds": "1", "poll-timeout-seconds": "30"})
	if code != 0 || !strings.Contains(output, "status=succeeded\n") || !strings.Contains(output, "terminal=true\n") {
		t.Errorf("wait-for-drain exited %d:\n%s\nGITHUB_OUTPUT %q", code, out, output)
	}

	before := len(p.Requests())
	code, out, output, _ = runAction(t, p, map[string]string{"server-url": p.URL, "api-key": "hk_action", "repository-id": "repo-1",
		"prompt": "Review", "target": `{"providerId":"prov-1"}`, "timeout": "600", "poll-timeout-seconds": "30"})
	if code != 2 || out != "error: HARNESS_POLL_TIMEOUT_SECONDS is not used by operation dispatch; leave it empty, or set HARNESS_OPERATION to the operation it is for (UNUSED_INPUT)\n" || output != "" {
		t.Errorf("a refused input: exit %d\n%s", code, out)
	}
	if len(p.Requests()) != before {
		t.Error("a refused input reached the control plane")
	}
}

// TestExampleDispatchWorkflow: examples/auto-harness/dispatch-mh-claude.yml
// passes actionlint, gives the action only inputs it has (every required
// one among them) and reads only outputs it has, targets the shipped
// mh-claude Command by its name, and, run as Actions would run it with its
// expressions stood in for, creates that governed session on the control
// plane and reports it.
func TestExampleDispatchWorkflow(t *testing.T) {
	path := filepath.Join(repoRoot, "examples", "auto-harness", "dispatch-mh-claude.yml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if errs := lint(t, path, raw); len(errs) > 0 {
		t.Fatalf("actionlint:\n%s", strings.Join(errs, "\n"))
	}
	wf, errs := actionlint.Parse(raw)
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	job := wf.Jobs["dispatch"]
	if job == nil || len(job.Steps) != 2 {
		t.Fatal("no job dispatch of two steps")
	}
	use, ok := job.Steps[0].Exec.(*actionlint.ExecAction)
	if !ok || !strings.HasPrefix(use.Uses.Value, "metaharness/metaharness/actions/dispatch@") {
		t.Fatalf("the first step does not use metaharness/metaharness/actions/dispatch")
	}
	a, _ := readAction(t)
	declared, _ := pairs(a.Inputs)
	with := map[string]string{}
	for name, in := range use.Inputs {
		if !slices.Contains(declared, name) {
			t.Errorf("the example passes %s, which the action does not take", name)
		}
		with[name] = in.Value.Value
	}
	for _, required := range []string{"server-url", "api-key", "repository-id", "prompt", "target", "timeout"} {
		if with[required] == "" {
			t.Errorf("the example does not pass %s", required)
		}
	}
	outputs, _ := pairs(a.Outputs)
	for _, m := range regexp.MustCompile(`steps\.dispatch\.outputs\.([a-z-]+)`).FindAllStringSubmatch(string(raw), -1) {
		if !slices.Contains(outputs, m[1]) {
			t.Errorf("the example reads output %s, which the action does not give", m[1])
		}
	}

	// The target is the shipped Command, by its name.
	target, err := actions.ParseHarnessTarget(with["target"], "target")
	if err != nil {
		t.Fatal(err)
	}
	var command struct{ Name string }
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "auto-harness", "mh-claude.command.json"))
	if err != nil || json.Unmarshal(b, &command) != nil || target.CommandName == "" || target.CommandName != command.Name {
		t.Fatalf("the example targets %+v, not the shipped Command %q (%v)", target, command.Name, err)
	}
	if testing.Short() {
		return
	}

	p := fakeplane.New()
	defer p.Close()
	p.Handle("GET /api/v1/commands?limit=100", fakeplane.Reply{Status: 200, Body: `{"items":[{"id":"cmd-7","name":"mh-claude"},{"id":"cmd-8","name":"mh-codex"}]}`})
	p.Handle("POST /api/v1/sessions", fakeplane.Reply{Status: 201, Body: `{"id":"s-9","url":"https://ui.example/sessions/s-9","created":true}`})
	stand := map[string]string{
		"${{ vars.AUTO_HARNESS_URL }}": p.URL, "${{ secrets.AUTO_HARNESS_API_KEY }}": "hk_example",
		"${{ vars.AUTO_HARNESS_REPOSITORY_ID }}": "repo-1", "${{ inputs.task }}": "Fix the flaky test", "${{ github.run_id }}": "4711",
	}
	for name, v := range with {
		for expr, value := range stand {
			v = strings.ReplaceAll(v, expr, value)
		}
		if strings.Contains(v, "${{") {
			t.Fatalf("input %s is an expression the test does not stand in for: %s", name, v)
		}
		with[name] = v
	}
	code, out, output, summary := runAction(t, p, with)
	if code != 0 {
		t.Fatalf("the dispatch step exited %d:\n%s", code, out)
	}
	reqs := p.Requests()
	if len(reqs) != 2 || reqs[1].Body != `{"repositoryId":"repo-1","prompt":"Fix the flaky test","target":{"commandId":"cmd-7"},"timeout":1800,"concurrencyId":"github-4711","metadata":{"githubRunId":"4711"}}` ||
		reqs[1].Header.Get("Authorization") != "Bearer hk_example" {
		t.Errorf("requests %+v", reqs)
	}
	if !strings.Contains(output, "session-url=https://ui.example/sessions/s-9\n") || !strings.Contains(summary, "- Provider route: `mh-claude`\n") {
		t.Errorf("GITHUB_OUTPUT %q\nGITHUB_STEP_SUMMARY %q", output, summary)
	}
}
