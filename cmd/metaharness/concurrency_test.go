package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/vendortest"
)

// concurrentRuns is how many runs TestConcurrentRuns starts at once.
const concurrentRuns = 32

// TestConcurrentRuns: 32 governed runs of the stand-in claude started at
// once, each on a scripted model of its own through its loopback proxy,
// with one caller's HOME, a cold per-user cache and one runtime directory,
// as a busy fleet host starts them: every run ends with its own complete
// stream (its own run id, seq contiguous from 1, stream.closed last and
// completed, the model's answer), the cache ends holding one whole entry
// per answer and nothing half-written, and nothing is left behind: no
// scratch tree or socket in the runtime directory, no process. Half the
// runs call a catalogue tool (mcp-serve over the decision socket), half a
// native tool (the PreToolUse hook), so both seams run side by side.
func TestConcurrentRuns(t *testing.T) {
	bin, err := exec.LookPath("metaharness")
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("mh-concurrent-%d", os.Getpid())
	root := filepath.Join(t.TempDir(), marker)
	home, cache, runtime := filepath.Join(root, "home"), filepath.Join(root, "cache"), filepath.Join(root, "runtime")
	if err := placeSelf(filepath.Join(home, ".local", "bin"), "claude"); err != nil {
		t.Fatal(err)
	}

	type result struct {
		tree   string
		stdout []byte
		stderr string
		err    error
	}
	results := make([]result, concurrentRuns)
	cmds := make([]*exec.Cmd, concurrentRuns)
	var bufs [concurrentRuns][2]bytes.Buffer
	for i := range concurrentRuns {
		tree := filepath.Join(root, fmt.Sprintf("tree-%02d", i))
		catalogue := i%2 == 1
		up, args := standInSession(t, tree, catalogue)
		cmd := exec.Command(bin, append([]string{"run", "claude", "--credentials", "loopback", "--model-endpoint", up.URL(),
			"--token-env", "MH_TOKEN", "--decisions", "observe", "--cwd", tree, "--scratch-cwd"}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "TMPDIR=" + root, "MH_TOKEN=not-a-real-token",
			"METAHARNESS_CACHE=" + cache, "METAHARNESS_RUNTIME_DIR=" + runtime}
		cmd.Stdout, cmd.Stderr = &bufs[i][0], &bufs[i][1]
		cmds[i], results[i].tree = cmd, tree
	}
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].err = cmd.Wait()
		}()
	}
	wg.Wait()

	runIDs := map[string]int{}
	for i, r := range results {
		r.stdout, r.stderr = bufs[i][0].Bytes(), bufs[i][1].String()
		if r.err != nil {
			t.Errorf("run %d: %v\n%s", i, r.err, r.stderr)
			continue
		}
		id, err := wholeStream(r.stdout, "It is on Friday.")
		if err != nil {
			t.Errorf("run %d (%s): %v\n%s", i, r.tree, err, r.stdout)
			continue
		}
		if j, seen := runIDs[id]; seen {
			t.Errorf("runs %d and %d both have the run id %s", j, i, id)
		}
		runIDs[id] = i
	}

	entries := cacheEntries(t, cache)
	if len(entries) != 2 || entries["versions"] != 1 || entries["confinement"] != 1 {
		t.Errorf("the cache holds %v, want one entry in versions and one in confinement", entries)
	}
	var left []string
	_ = filepath.WalkDir(runtime, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != runtime {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("left behind in the runtime directory: %v", left)
	}
	if procs := vendortest.WaitGone(marker); len(procs) > 0 {
		t.Errorf("processes outlived their runs: %v", procs)
	}
}

// standInSession is a tree whose stand-in session asks the scripted
// model, which calls a tool that reads notes.md (a catalogue tool, or
// Read), then answers; it returns the model and the run's arguments.
func standInSession(t *testing.T, tree string, catalogue bool) (*scripted.Server, []string) {
	t.Helper()
	files := map[string]string{
		"notes.md":       "the release is on Friday\n",
		"session.script": "init\nmodel read the notes\nresult\n",
		"tools.yaml":     "format: metaharness.tool-contract/1\nentries:\n  - {name: fs.read, summary: Read a file., input: {type: object, properties: {path: {type: string}}, required: [path]}, renderings: {mcp: read_file}}\n",
	}
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(tree, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	call := &scripted.ToolCall{Name: "Read", Input: json.RawMessage(`{"file_path":"notes.md"}`)}
	var args []string
	if catalogue {
		call = &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"notes.md"}`)}
		args = []string{"--catalogue", filepath.Join(tree, "tools.yaml")}
	}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{{ToolCall: call}, {Text: "It is on Friday."}}})
	t.Cleanup(up.Close)
	return up, append(args, "-p", filepath.Join(tree, "session.script"))
}

// wholeStream checks a run's stdout is one whole stream: every line an
// event of one run, seq from 1 without a gap, the tool's result and the
// final answer in it, stream.closed last, completed, counting the rest. It
// returns the run id.
func wholeStream(stdout []byte, answer string) (string, error) {
	lines := bytes.Split(bytes.TrimSuffix(stdout, []byte("\n")), []byte("\n"))
	var run string
	var read, final bool
	for i, line := range lines {
		l, err := record.ParseEvent(line)
		if err != nil {
			return "", fmt.Errorf("line %d: %v", i+1, err)
		}
		if i == 0 {
			run = l.Run
		}
		switch {
		case l.Run != run:
			return "", fmt.Errorf("line %d is of run %s, the stream's first of %s", i+1, l.Run, run)
		case l.Seq != uint64(i+1):
			return "", fmt.Errorf("line %d has seq %d", i+1, l.Seq)
		}
		switch ev := l.Event.(type) {
		case *record.ToolResult:
			read = read || strings.Contains(string(ev.Content), "the release is on Friday")
		case *record.SessionEnded:
			final = ev.FinalAnswer != nil && ev.FinalAnswer.Text == answer
		case *record.StreamClosed:
			if i != len(lines)-1 {
				return "", fmt.Errorf("stream.closed is line %d of %d", i+1, len(lines))
			}
			if ev.Reason != record.ReasonCompleted || ev.Events != uint64(i) || ev.RunID != run {
				return "", fmt.Errorf("stream.closed %+v after %d events", ev, i)
			}
			if !read || !final {
				return "", fmt.Errorf("the tool's result (%t) or the final answer (%t) is missing", read, final)
			}
			return run, nil
		}
	}
	return "", fmt.Errorf("no stream.closed at the end")
}

// cacheEntries counts the whole entries in each directory of the cache,
// failing on anything else: a torn or foreign file, a temporary one left.
func cacheEntries(t *testing.T, cache string) map[string]int {
	t.Helper()
	n := map[string]int{}
	err := filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var e struct {
			Key   json.RawMessage `json:"key"`
			Value string          `json:"value"`
		}
		if !strings.HasSuffix(p, ".json") || json.Unmarshal(b, &e) != nil || len(e.Key) == 0 || e.Value == "" {
			t.Errorf("the cache holds %s, not a whole entry: %q", p, b)
			return nil
		}
		n[filepath.Base(filepath.Dir(p))]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
