package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/conformance/vendortest"
	"github.com/metaharness/metaharness/record"
)

// newCodexOperator is an operator whose ~/.local/bin/codex is the pinned
// Codex's native binary.
func newCodexOperator(t *testing.T, token string) *operator {
	return newOperatorFor(t, token, "codex", vendortest.CodexNative(t))
}

// TestRunCodexCatalogueUnderAFrame: (a) on the real Codex through
// app-server, a catalogue tool the frame admits runs and its result
// reaches the model; one outside the frame is denied, an entry with no
// operation as UNCOVERED_TOOL, and the model is told why; (i) through
// loopback the scripted server saw only the real token, which no child
// process, scratch file, stream line or stderr line held; the audited exit
// code is the audit verdict.
func TestRunCodexCatalogueUnderAFrame(t *testing.T) {
	token := randomToken("sk-test-REAL-")
	o := newCodexOperator(t, token)
	watch := &secretWatch{t: t, token: token, pid: make(chan int, 1), placeholderVar: "METAHARNESS_LOOPBACK_KEY", homeVar: "CODEX_HOME"}
	o.write("hello.txt", "hello from the operator's tree\n")
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "read_file", Input: json.RawMessage(`{"path":"hello.txt","max_bytes":null}`)}},
		{ToolCall: &scripted.ToolCall{Name: "fs_write", Input: json.RawMessage(`{"path":"out.txt","text":"x"}`)}},
		{ToolCall: &scripted.ToolCall{Name: "fetch_url", Input: json.RawMessage(`{"url":"https://example.com"}`)}},
		{Text: "DONE"},
	}}, scripted.OnRequest(watch.look))
	defer up.Close()

	retain := t.TempDir()
	defer captureCodexC2(t, retain, "catalogue-under-a-frame")
	res := o.runWatched(watch.started, nil, "--retain-dir", retain, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--frame", o.sealFrame("file.read"), "--cwd", o.tree, "--scratch-cwd", "--audit",
		"-p", "read hello.txt")
	t.Logf("events:\n%s", res.stdout)
	if res.code != 0 {
		t.Errorf("exit %d, want 0", res.code)
	}
	if !strings.Contains(string(res.stderr), "audit verdict: ok (exit 0)") {
		t.Errorf("the audit verdict is not ok:\n%s", res.stderr)
	}
	var results []string
	for _, r := range up.Requests() {
		if r.Credential() != token {
			t.Errorf("request %d carried %q, not the real token", r.Seq, r.Credential())
		}
		for _, tr := range r.ToolResults {
			results = append(results, tr.Content)
		}
	}
	if len(results) < 1 || !strings.Contains(results[0], "hello from the operator's tree") {
		t.Errorf("the read's result did not reach the model: %q", results)
	}
	if len(results) < 2 || !strings.Contains(results[1], "denied") {
		t.Errorf("the write's denial did not reach the model: %q", results)
	}
	if len(results) < 3 || !strings.Contains(results[2], "no operation") {
		t.Errorf("the uncovered tool's denial did not reach the model: %q", results)
	}
	var uncovered bool
	for _, ev := range res.find("warning") {
		uncovered = uncovered || ev.(*record.Warning).Code == "UNCOVERED_TOOL"
	}
	if !uncovered {
		t.Error("no UNCOVERED_TOOL warning in the stream")
	}
	ended := res.find("session.ended")
	if len(ended) != 1 {
		t.Fatalf("%d session.ended events, want 1", len(ended))
	}
	end := ended[0].(*record.SessionEnded)
	if end.Census == nil || end.Census.Allowed != 1 || end.Census.Denied != 2 {
		t.Errorf("census %+v, want 1 allowed and 2 denied", end.Census)
	}
	if end.FinalAnswer == nil || end.FinalAnswer.Text != "DONE" {
		t.Errorf("final answer %+v, want DONE", end.FinalAnswer)
	}
	lastIsStreamClosed(t, res)
	watch.check()
	for _, secret := range []string{token, watch.placeholder} {
		if secret == "" || strings.Contains(string(res.stdout), secret) || strings.Contains(string(res.stderr), secret) {
			t.Errorf("the real token or the placeholder (%d bytes) reached metaharness's output", len(secret))
		}
	}
	if _, err := os.Stat(filepath.Join(o.tree, "out.txt")); err == nil {
		t.Error("the denied write happened")
	}
}

// captureCodexC2 copies a codex run's retained transcript into the C2
// vectors under METAHARNESS_CAPTURE_C2 (see captureC2).
func captureCodexC2(t *testing.T, retain, name string) {
	if os.Getenv("METAHARNESS_CAPTURE_C2") == "" || t.Failed() {
		return
	}
	b, err := os.ReadFile(filepath.Join(retain, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "conformance", "testdata", "c2", "codex")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".in.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
