package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/collector"
)

// finalText is the scripted model's last answer: distinctive, so that the
// export's scan can look for it.
const finalText = "FINAL-ANSWER-of-the-scripted-model"

// TestRunClaudeTraceAndStatement: a governed run of the real Claude Code
// (loopback-only namespace, scripted model, the real proxy and mcp-serve,
// a frame) is one trace at the OpenTelemetry Collector's own receiver and
// a signed statement that audit --verify holds; see traceAndStatement.
func TestRunClaudeTraceAndStatement(t *testing.T) {
	token := randomToken("sk-ant-test-REAL-")
	o := newOperator(t, token)
	watch := &secretWatch{t: t, token: token, pid: make(chan int, 1)}
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"hello.txt","max_bytes":null}`)}},
		{Text: finalText},
	}}, scripted.OnRequest(watch.look))
	defer up.Close()
	traceAndStatement(t, o, up, watch, collector.HTTP, "mcp__metaharness__read_file")
}

// TestRunCodexTraceAndStatement: the same of the real Codex through
// app-server, exported over gRPC.
func TestRunCodexTraceAndStatement(t *testing.T) {
	token := randomToken("sk-test-REAL-")
	o := newCodexOperator(t, token)
	watch := &secretWatch{t: t, token: token, pid: make(chan int, 1), placeholderVar: "METAHARNESS_LOOPBACK_KEY", homeVar: "CODEX_HOME"}
	up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "read_file", Input: json.RawMessage(`{"path":"hello.txt","max_bytes":null}`)}},
		{Text: finalText},
	}}, scripted.OnRequest(watch.look))
	defer up.Close()
	traceAndStatement(t, o, up, watch, collector.GRPC, "read_file")
}

// traceAndStatement runs a catalogue read under a frame with
// --otlp-endpoint, --statement and --sign-key, and checks: exit 0; every
// span in the trace session.started names; the root, a turn, the tool
// call with its decision, the model requests with the wire's model and
// usage; no byte exported holds the token, the placeholder the child held
// (watch sees it), the task, the file's text or the model's answer; the
// statement verifies (0), names the records and holds neither secret.
func traceAndStatement(t *testing.T, o *operator, up *scripted.Server, watch *secretWatch, protocol, tool string) {
	t.Helper()
	c, err := collector.Start(protocol)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	const fileText = "hello from the operator's tree, FILETEXT\n"
	o.write("hello.txt", fileText)
	cat := filepath.Join(o.home, "tools.yaml")
	if err := os.WriteFile(cat, []byte(readCatalogue), 0o644); err != nil {
		t.Fatal(err)
	}
	key, pub := writeKeyPair(t, o.home, ed25519Key(t))
	out := t.TempDir()
	st, events, att := filepath.Join(out, "run.intoto.jsonl"), filepath.Join(out, "events.jsonl"), filepath.Join(out, "attestation.json")
	o.env = append(o.env, "OTEL_EXPORTER_OTLP_PROTOCOL="+protocol)
	const task = "read hello.txt, TASKTEXT"
	res := o.runWatched(watch.started, nil, "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", "MH_TEST_TOKEN",
		"--catalogue", cat, "--frame", o.sealFrame("file.read"), "--cwd", o.tree, "--scratch-cwd",
		"--otlp-endpoint", c.Endpoint, "--statement", st, "--sign-key", key, "--events", events, "--attestation", att, "-p", task)
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stdout)
	}
	started := res.find("session.started")
	if len(started) != 1 {
		t.Fatalf("%d session.started", len(started))
	}
	traceID := started[0].(*record.SessionStarted).TraceID
	if len(traceID) != 32 {
		t.Fatalf("session.started names trace %q", traceID)
	}
	for _, w := range res.find("warning") {
		if w.(*record.Warning).Code == "OTLP_EXPORT_FAILED" {
			t.Errorf("the export failed: %s", w.(*record.Warning).Message)
		}
	}

	spans := c.Spans()
	byID := map[string]ptrace.Span{}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
		byID[s.SpanID().String()] = s
		if s.TraceID().String() != traceID {
			t.Errorf("span %q is in trace %s, not %s", s.Name(), s.TraceID(), traceID)
		}
	}
	t.Logf("trace %s: %d spans: %s", traceID, len(spans), strings.Join(names, ", "))
	var root, call ptrace.Span
	var turns, chats int
	for _, s := range spans {
		a := s.Attributes().AsRaw()
		switch {
		case s.ParentSpanID().IsEmpty():
			root = s
		case strings.HasPrefix(s.Name(), "turn "):
			turns++
		case s.Name() == "execute_tool "+tool:
			call = s
		case a["gen_ai.operation.name"] == "chat":
			chats++
			if a["gen_ai.usage.input_tokens"] == nil || a["http.response.status_code"] != int64(200) || a["gen_ai.response.model"] == "" {
				t.Errorf("model request span %s: %v", s.Name(), a)
			}
		}
	}
	if root.Name() != "invoke_agent "+o.kind || turns < 1 || call.Name() == "" || chats < 2 {
		t.Fatalf("root %q, call %q, %d turns, %d model requests; spans: %d", root.Name(), call.Name(), turns, chats, len(spans))
	}
	ra, ca := root.Attributes().AsRaw(), call.Attributes().AsRaw()
	if ra["metaharness.exit_code"] != int64(0) || ra["metaharness.control_verdict"] != "ok" || ra["gen_ai.agent.name"] != o.kind {
		t.Errorf("root: %v", ra)
	}
	if ca["metaharness.tool.decision"] != "allow" || ca["metaharness.tool.decided_by"] != "frame" || ca["gen_ai.tool.call.id"] == "" {
		t.Errorf("tool call: %v", ca)
	}
	for p := call; !p.ParentSpanID().IsEmpty(); p = byID[p.ParentSpanID().String()] {
		if _, ok := byID[p.ParentSpanID().String()]; !ok {
			t.Fatalf("the tool call's ancestry breaks at %s", p.Name())
		}
	}
	sent := c.Sent()
	if !bytes.Contains(sent, []byte(tool)) {
		t.Fatal("the relay saw none of the export")
	}
	watch.check()
	if watch.placeholder == "" {
		t.Fatal("no placeholder was seen in the child to scan the export for")
	}
	for what, secret := range map[string]string{"the token": watch.token, "the placeholder": watch.placeholder,
		"the task": "TASKTEXT", "the file's text": "FILETEXT", "the model's answer": finalText} {
		if bytes.Contains(sent, []byte(secret)) {
			t.Errorf("the export sent %s", what)
		}
	}

	// The statement.
	outb, err := o.metaharness("audit", "--verify", st, "--key", pub)
	if err != nil {
		t.Fatalf("audit --verify: %v\n%s", err, outb)
	}
	for _, want := range []string{"signature ok: ed25519 key ", "\nok         events ", "\nok         attestation ", "\nok         frame ", "\nok         catalogue ", "\nunkept     catalogue-copy ", "\nstatement verified: "} {
		if !strings.Contains(string(outb), want) {
			t.Errorf("audit --verify does not say %q:\n%s", want, outb)
		}
	}
	b, _ := os.ReadFile(st)
	if bytes.Contains(b, []byte(watch.token)) || bytes.Contains(b, []byte(watch.placeholder)) {
		t.Error("the statement holds the token or the placeholder")
	}

	// The run page, made of the stream and the attestation, holds neither
	// either; it shows the run's verdict and its call.
	page := filepath.Join(out, "page.html")
	if outb, err := o.metaharness("project", "--html", page, "--attestation", att, events); err != nil {
		t.Fatalf("project --html: %v\n%s", err, outb)
	}
	pb, _ := os.ReadFile(page)
	if bytes.Contains(pb, []byte(watch.token)) || bytes.Contains(pb, []byte(watch.placeholder)) {
		t.Error("the run page holds the token or the placeholder")
	}
	for _, want := range []string{`data-fact="control verdict"><span class="badge s-ok">`, `<dd data-fact="exit code">0: `, `data-decision="allowed"`} {
		if !bytes.Contains(pb, []byte(want)) {
			t.Errorf("the run page lacks %q", want)
		}
	}
	var doc struct {
		Telemetry *record.Telemetry `json:"telemetry"`
	}
	ab, _ := os.ReadFile(att)
	if err := json.Unmarshal(ab, &doc); err != nil || doc.Telemetry == nil || doc.Telemetry.TraceID != traceID || doc.Telemetry.Error != "" {
		t.Errorf("the attestation's telemetry: %+v (%v)", doc.Telemetry, err)
	}
}
