package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/conformance/vendortest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/record"
)

// operator is a caller's world for a real run: a HOME whose ~/.local/bin
// holds the pinned vendor binary (the child's PATH is built from it), a
// working tree, and the environment metaharness is started with.
type operator struct {
	t    *testing.T
	home string
	tree string
	env  []string
}

func newOperator(t *testing.T, token string) *operator {
	claude := vendortest.Binary(t, "claude")
	root := t.TempDir()
	o := &operator{t: t, home: filepath.Join(root, "operator"), tree: filepath.Join(root, "tree")}
	for _, d := range []string{filepath.Join(o.home, ".local", "bin"), o.tree} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(claude, filepath.Join(o.home, ".local", "bin", "claude")); err != nil {
		t.Fatal(err)
	}
	o.env = []string{"HOME=" + o.home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "MH_TEST_TOKEN=" + token}
	return o
}

func (o *operator) write(name, content string) string {
	p := filepath.Join(o.tree, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		o.t.Fatal(err)
	}
	return p
}

// sealFrame writes a sealed frame admitting ops.
func (o *operator) sealFrame(ops ...string) string {
	doc := frame.Document{
		Workflow: frame.Workflow{ID: "demo", Version: "1"}, Node: frame.NodeRef{ID: "read"},
		Step:  record.StepRef{Workflow: "demo", State: "read", Index: 1, Attempt: 1},
		Prior: []frame.Fact{}, Obligations: []frame.Requirement{}, Reaching: []frame.Requirement{},
		Next: []frame.NodeRef{}, Handoff: frame.Handoff{Handoff: "none"}, Subjects: frame.SubjectScope{},
	}
	for _, op := range ops {
		doc.Operations = append(doc.Operations, frame.Operation{Op: op})
	}
	f, err := frame.Seal(doc)
	if err != nil {
		o.t.Fatal(err)
	}
	b := f.Encode()
	p := filepath.Join(o.home, "frame.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		o.t.Fatal(err)
	}
	return p
}

// runResult is one `metaharness run` as a process saw it.
type runResult struct {
	code   int
	events []*record.EventLine
	stdout []byte
	stderr []byte
}

func (r *runResult) find(name string) []record.Event {
	var out []record.Event
	for _, l := range r.events {
		if l.Name() == name {
			out = append(out, l.Event)
		}
	}
	return out
}

// runMetaharness runs `metaharness run claude ARGS` as the operator, with
// stdin fed by answer (nil: nothing), and reads its event stream.
func (o *operator) run(answer func(ev *record.EventLine, stdin func(string)), args ...string) *runResult {
	o.t.Helper()
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		o.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"run", "claude"}, args...)...)
	cmd.Env = o.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		o.t.Fatal(err)
	}
	res := &runResult{}
	var raw bytes.Buffer
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		raw.Write(sc.Bytes())
		raw.WriteByte('\n')
		ev, err := record.ParseEvent(sc.Bytes())
		if err != nil {
			continue // --output final prints the answer, not events
		}
		res.events = append(res.events, ev)
		if answer != nil {
			answer(ev, func(line string) { _, _ = in.Write([]byte(line + "\n")) })
		}
	}
	_ = in.Close()
	err = cmd.Wait()
	res.code = cmd.ProcessState.ExitCode()
	res.stdout, res.stderr = raw.Bytes(), stderr.Bytes()
	o.t.Logf("metaharness run: exit %d (%v)\nstderr:\n%s", res.code, err, res.stderr)
	return res
}

const readCatalogue = `format: metaharness.tool-contract/1
entries:
  - name: fs.read
    summary: Read a text file in the workspace.
    input:
      type: object
      properties:
        path: {type: string}
        max_bytes: {type: integer}
      required: [path]
    renderings:
      mcp: read_file
  - name: fs.write
    summary: Write a text file in the workspace.
    input:
      type: object
      properties:
        path: {type: string}
        text: {type: string}
      required: [path, text]
`

// TestRunClaudeCatalogueUnderAFrame: (a) a catalogue tool the frame admits
// runs and its result reaches the model; (b) a tool outside the frame is
// denied as UNCOVERED_TOOL / by the frame and the model is told why; (d)
// through loopback, the scripted server saw only the real test token.
func TestRunClaudeCatalogueUnderAFrame(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	o.write("hello.txt", "hello from the operator's tree\n")
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"hello.txt"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__fs_write", Input: json.RawMessage(`{"path":"out.txt","text":"x"}`)}},
		{Text: "DONE"},
	}})
	defer up.Close()

	res := o.run(nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--frame", o.sealFrame("file.read"), "--cwd", o.tree, "--scratch-cwd", "--audit",
		"-p", "read hello.txt")
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	reqs := up.Requests()
	var results []string
	for _, r := range reqs {
		if r.Credential() != token {
			t.Errorf("request %d carried %q, not the real token", r.Seq, r.Credential())
		}
		for _, tr := range r.ToolResults {
			results = append(results, tr.Content)
		}
	}
	if len(results) < 2 || !strings.Contains(results[0], "hello from the operator's tree") {
		t.Errorf("the read's result did not reach the model: %q", results)
	}
	if len(results) < 2 || !strings.Contains(results[1], "denied") {
		t.Errorf("the write's denial did not reach the model: %q", results)
	}
	if _, err := os.Stat(filepath.Join(o.tree, "out.txt")); err == nil {
		t.Error("the denied write happened")
	}
	t.Logf("events:\n%s", res.stdout)
}
