package fakevendor

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// TestClaudeModelSession: started bare (no --settings, so no hook), the
// fake's model directive sends its key as Claude Code does, performs the
// Read the model asks for as --allowedTools admits it, hands the result
// back, and prints each answer under the wire's message id, ending with
// the model's last text as the result.
func TestClaudeModelSession(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.md")
	script := filepath.Join(dir, "session.script")
	write(t, notes, "the release is on Friday\n")
	write(t, script, "init\nmodel read the notes\nresult\n")
	in, _ := json.Marshal(map[string]string{"file_path": notes})
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Read", Input: in}},
		{Text: "It is on Friday."},
	}}, scripted.RequireKey("sk-test"))
	defer up.Close()
	t.Setenv("ANTHROPIC_BASE_URL", up.URL())
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_UNIX_SOCKET", "")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Run: r1")

	var stdout, stderr bytes.Buffer
	if code := Claude([]string{"-p", "--output-format", "stream-json", "--verbose", "--allowedTools", "Read", "--", script}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	reqs := up.Requests()
	if len(reqs) != 2 || !bytes.Contains(reqs[0].Body, []byte(`"content":"read the notes"`)) || reqs[0].Header.Get("X-Run") != "r1" || !reqs[0].Stream {
		t.Fatalf("requests %+v", reqs)
	}
	if tr := reqs[1].ToolResults; len(tr) != 1 || tr[0].CallID != "toolu_0001" || tr[0].Content != "the release is on Friday\n" || tr[0].IsError {
		t.Errorf("the second request carried %+v", tr)
	}
	want := []string{
		`"type":"system"`,
		`"message":{"content":[{"id":"toolu_0001","input":{"file_path":"` + notes + `"},"name":"Read","type":"tool_use"}],"id":"msg_0001",`,
		`"tool_use_id":"toolu_0001","type":"tool_result"`,
		`"message":{"content":[{"text":"It is on Friday.","type":"text"}],"id":"msg_0002",`,
		`"result":"It is on Friday."`,
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), stdout.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d is %s\nwant it to hold %s", i+1, lines[i], w)
		}
	}
}

// TestClaudeModelLoopbackOnly: the fake dials no address off the host.
func TestClaudeModelLoopbackOnly(t *testing.T) {
	script := filepath.Join(t.TempDir(), "session.script")
	write(t, script, "init\nmodel hi\nresult\n")
	t.Setenv("ANTHROPIC_BASE_URL", "http://192.0.2.1:9")
	var stdout, stderr bytes.Buffer
	if code := Claude([]string{"-p", "--", script}, &stdout, &stderr); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if !strings.Contains(stdout.String(), `"is_error":true,`) || !strings.Contains(stdout.String(), `is not a loopback address`) {
		t.Errorf("stdout %s", stdout.String())
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadStream: whatever a model server sends, the stand-in's stream
// reader returns an answer or an error without panicking, and an answer's
// tool inputs are JSON it can send back.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\n" +
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Read\",\"input\":{}}}\n\n" +
		"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":1}\"}}\n\n" +
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"data: {\"type\":\"message_stop\"}\n\n"))
	f.Add([]byte("data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\ndata: {\"type\":\"content_block_delta\",\"index\":7}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		msg, err := readStream(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, bl := range msg.Content {
			if bl.Type == "tool_use" && !json.Valid(bl.input()) {
				t.Fatalf("tool input %q is not JSON", bl.input())
			}
		}
		if _, err := json.Marshal(msg.Content); err != nil {
			t.Fatalf("the answer cannot be sent back: %v", err)
		}
	})
}
