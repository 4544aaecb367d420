package telemetry

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/collector"
)

// What a run's events carry that the export must not, by default.
const (
	prompt      = "PROMPT-the-task-itself"
	fileText    = "FILETEXT-read-from-the-workspace"
	modelText   = "MODELTEXT-the-model-said"
	placeholder = "mh-placeholder-0123456789"
	warningText = "WARNINGTEXT-from-the-vendor"
)

func ptr[T any](v T) *T { return &v }

// play feeds a run the lines of a short session: one turn, a tool call
// allowed and answered, one denied, text, a warning, the terminal record.
func play(t *testing.T, r *Run) {
	t.Helper()
	evs := []record.Event{
		&record.SessionStarted{Adapter: "claude", SessionID: ptr("sess-1"), Model: ptr("claude-test")},
		&record.TurnStarted{Turn: 1},
		&record.Text{Text: modelText + " " + placeholder},
		&record.ToolRequested{CallID: "toolu_1", Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path":"notes.txt"}`),
			Operations: []string{"file.read"}, Subjects: []string{"file:notes.txt"}, DecisionRequired: true, Seam: record.SeamOwnedTool},
		&record.ToolDecided{CallID: "toolu_1", Decision: record.AllowDecision(), DecidedBy: "frame", Seam: record.SeamOwnedTool, LatencyMS: ptr(uint64(3))},
		&record.ToolResult{CallID: "toolu_1", Content: json.RawMessage(`"` + fileText + `"`), IsError: ptr(false)},
		&record.ToolRequested{CallID: "toolu_2", Name: "Bash", Input: json.RawMessage(`{"command":"cat /etc/shadow"}`), Seam: record.SeamHook},
		&record.ToolDecided{CallID: "toolu_2", Decision: record.DenyDecision("not in the frame"), DecidedBy: "frame", Seam: record.SeamHook},
		&record.Warning{Code: "VENDOR_TEXT", Message: warningText},
		&record.TurnEnded{Turn: 1, StopReason: ptr("end_turn")},
		&record.SessionEnded{FinalAnswer: &record.FinalAnswer{Text: modelText}, NumTurns: ptr(uint64(1)),
			Usage: &record.Usage{InputTokens: ptr(uint64(10)), OutputTokens: ptr(uint64(5))}},
	}
	for i, ev := range evs {
		line, err := record.EncodeEvent(uint64(i+1), "claude-abc", nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Write(line); err != nil {
			t.Fatal(err)
		}
	}
}

func startRun(t *testing.T, endpoint, protocol string, env map[string]string) *Run {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	env[EnvProtocol] = protocol
	cfg, err := Resolve(endpoint, env)
	if err != nil {
		t.Fatal(err)
	}
	x, err := NewExporter(cfg, "run", "test")
	if err != nil {
		t.Fatal(err)
	}
	r := x.StartRun(RunInfo{RunID: "claude-abc", Kind: "claude", Provider: "anthropic", Model: "claude-test", Hermetic: "on", Decisions: "frame", Credentials: "loopback", Prompt: prompt})
	r.Secrets(placeholder)
	return r
}

// requests are a model request through the proxy, as its record and the
// wire view's response give it, and a refused egress.
func requests() ([]loopback.Record, []loopback.Response) {
	at := time.Now()
	recs := []loopback.Record{
		{Seq: 1, Start: at, Route: loopback.RouteReverse, Method: "POST", Path: "/v1/messages", Status: 200, UpstreamStatus: 200, BytesIn: 900, BytesOut: 400, Duration: 20 * time.Millisecond},
		{Seq: 2, Start: at.Add(time.Millisecond), Route: "connect", Method: "CONNECT", Path: "evil.example:443", Status: 403, Refused: "egress_not_allowed"},
	}
	wire := []loopback.Response{{Start: at, Method: "POST", Path: "/v1/messages", Status: 200, Stream: true, ID: "msg_1", Model: "claude-test-1",
		StopReason: "end_turn", End: loopback.EndCompleted, Usage: &loopback.Usage{InputTokens: 12, OutputTokens: 7}}}
	return recs, wire
}

func attrs(s ptrace.Span) map[string]any { return s.Attributes().AsRaw() }

// TestRunTrace: a run's trace reaches the OpenTelemetry Collector's own
// receiver over either protocol as one tree — the root, the turn under it,
// the tool calls and the model request under the turn — with the GenAI
// conventions' names, the decisions, the usage; and nothing it sent holds
// the prompt, a text, a file's content or the placeholder.
func TestRunTrace(t *testing.T) {
	for _, protocol := range []string{collector.HTTP, collector.GRPC} {
		t.Run(protocol, func(t *testing.T) {
			c, err := collector.Start(protocol)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Stop()
			r := startRun(t, c.Endpoint, protocol, nil)
			play(t, r)
			recs, wire := requests()
			recs[0].Start, wire[0].Start = time.Now(), time.Now() // inside the turn, which has ended: the root
			wire[0].Start = recs[0].Start
			r.Requests(recs, wire)
			if st := r.Close(FlushBound); st.Error != "" || st.Exported != st.Spans {
				t.Fatalf("close: %+v", st)
			}
			st := r.End(Verdicts{ExitCode: 1, Outcome: "gap", ChildExit: "0", ControlVerdict: "gap", Gaps: []string{"h12"}}, FlushBound)
			if st.Error != "" || st.TraceID != r.TraceID() {
				t.Fatalf("end: %+v", st)
			}
			if !c.Wait(6, 5*time.Second) {
				t.Fatalf("the collector got %d spans", len(c.Spans()))
			}
			byName := map[string]ptrace.Span{}
			for _, s := range c.Spans() {
				if s.TraceID().String() != r.TraceID() {
					t.Errorf("span %s is in trace %s, not the run's %s", s.Name(), s.TraceID(), r.TraceID())
				}
				byName[s.Name()] = s
			}
			root, turn := byName["invoke_agent claude"], byName["turn 1"]
			read, bash := byName["execute_tool mcp__metaharness__read_file"], byName["execute_tool Bash"]
			chat, egress := byName["chat claude-test-1"], byName["connect CONNECT evil.example:443"]
			for name, s := range map[string]ptrace.Span{"root": root, "turn": turn, "read": read, "bash": bash, "chat": chat, "egress": egress} {
				if s.Name() == "" {
					t.Fatalf("no %s span among %v", name, keys(byName))
				}
			}
			if !root.ParentSpanID().IsEmpty() || turn.ParentSpanID() != root.SpanID() || read.ParentSpanID() != turn.SpanID() || bash.ParentSpanID() != turn.SpanID() {
				t.Errorf("the tree: root %s, turn under %s, read under %s, bash under %s", root.SpanID(), turn.ParentSpanID(), read.ParentSpanID(), bash.ParentSpanID())
			}
			want := map[string]map[string]any{
				"root": {AttrOperation: OpInvokeAgent, AttrProvider: "anthropic", AttrRequestModel: "claude-test", AttrConversation: "sess-1",
					AttrRun: "claude-abc", AttrExitCode: int64(1), AttrControlVerdict: "gap", AttrInputTokens: int64(10), AttrNumTurns: int64(1)},
				"read": {AttrOperation: OpExecuteTool, AttrToolName: "mcp__metaharness__read_file", AttrToolCallID: "toolu_1", AttrDecision: "allow",
					AttrDecidedBy: "frame", AttrDecisionMS: int64(3), AttrSeam: "owned_tool", AttrResultBytes: int64(len(fileText) + 2)},
				"bash":   {AttrDecision: "deny", AttrToolCallID: "toolu_2"},
				"chat":   {AttrOperation: OpChat, AttrResponseModel: "claude-test-1", AttrResponseID: "msg_1", AttrInputTokens: int64(12), AttrOutputTokens: int64(7), AttrHTTPStatus: int64(200), AttrBytesIn: int64(900)},
				"egress": {AttrRefused: "egress_not_allowed"},
			}
			for name, s := range map[string]ptrace.Span{"root": root, "read": read, "bash": bash, "chat": chat, "egress": egress} {
				got := attrs(s)
				for k, v := range want[name] {
					if got[k] != v {
						t.Errorf("%s: %s = %v (%T), want %v", name, k, got[k], got[k], v)
					}
				}
			}
			// Digests are keyed with the run's id, never a bare sha256 a
			// table of likely prompts would find.
			keyed := hmac.New(sha256.New, []byte("claude-abc"))
			keyed.Write([]byte(prompt))
			bare := sha256.Sum256([]byte(prompt))
			if got := attrs(root)[AttrPromptDigest]; got != hex.EncodeToString(keyed.Sum(nil)) || got == hex.EncodeToString(bare[:]) {
				t.Errorf("the prompt's digest %v is not HMAC-SHA256 keyed with the run's id", got)
			}
			if ops, _ := attrs(read)[AttrOperations].([]any); len(ops) != 1 || ops[0] != "file.read" {
				t.Errorf("read's operations: %v", attrs(read)[AttrOperations])
			}
			var warned bool
			for i := 0; i < turn.Events().Len(); i++ {
				e := turn.Events().At(i)
				if e.Name() == EventWarning && e.Attributes().AsRaw()[AttrWarningCode] == "VENDOR_TEXT" {
					warned = true
				}
			}
			if !warned {
				t.Error("the warning is not an event of its turn")
			}
			if res := c.Resources(); len(res) == 0 || res[0]["service.name"] != "metaharness" {
				t.Errorf("resources: %v", res)
			}
			sent := c.Sent()
			if !bytes.Contains(sent, []byte("mcp__metaharness__read_file")) {
				t.Fatal("the relay saw none of the export: the scan below would prove nothing")
			}
			for _, secret := range []string{prompt, fileText, modelText, placeholder, warningText, "/etc/shadow", "notes.txt"} {
				if bytes.Contains(sent, []byte(secret)) {
					t.Errorf("the export sent %q", secret)
				}
			}
		})
	}
}

// TestRunTraceContentOptIn: with the GenAI opt-in the texts go too, bounded,
// and the placeholder never.
func TestRunTraceContentOptIn(t *testing.T) {
	c, err := collector.Start(collector.HTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	r := startRun(t, c.Endpoint, collector.HTTP, map[string]string{EnvCaptureContent: "true"})
	play(t, r)
	r.Close(FlushBound)
	r.End(Verdicts{Outcome: "ok"}, FlushBound)
	if !c.Wait(4, 5*time.Second) {
		t.Fatalf("%d spans", len(c.Spans()))
	}
	sent := c.Sent()
	for _, s := range []string{prompt, fileText, modelText, warningText} {
		if !bytes.Contains(sent, []byte(s)) {
			t.Errorf("the opt-in did not send %q", s)
		}
	}
	if bytes.Contains(sent, []byte(placeholder)) {
		t.Error("the opt-in sent the placeholder")
	}
}

// TestCollectorDownOrSilent: a collector that is down fails the flush at
// once; one that never answers costs the bound and no more; either way
// the state says why, and the end does not wait again.
func TestCollectorDownOrSilent(t *testing.T) {
	down, err := collector.Down()
	if err != nil {
		t.Fatal(err)
	}
	silent, err := collector.StartSilent()
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	const bound = 300 * time.Millisecond
	for name, endpoint := range map[string]string{"down": down, "silent": silent.Endpoint} {
		for _, protocol := range []string{collector.HTTP, collector.GRPC} {
			t.Run(name+"/"+protocol, func(t *testing.T) {
				r := startRun(t, endpoint, protocol, nil)
				play(t, r)
				began := time.Now()
				st := r.Close(bound)
				end := r.End(Verdicts{Outcome: "ok"}, FlushBound)
				if took := time.Since(began); took > bound+400*time.Millisecond {
					t.Errorf("closing and ending took %v, the bound is %v", took, bound)
				}
				if st.Error == "" || st.Exported != 0 || end.Error == "" {
					t.Errorf("close %+v, end %+v", st, end)
				}
			})
		}
	}
}

// TestResolve: the flag before the variable, the protocol and headers of
// the caller's environment, and each refusal.
func TestResolve(t *testing.T) {
	if cfg, err := Resolve("", map[string]string{}); cfg != nil || err != nil {
		t.Errorf("nothing asked: %v %v", cfg, err)
	}
	cfg, err := Resolve("", map[string]string{EnvEndpoint: "https://otel.example:4318/", EnvProtocol: "grpc", EnvHeaders: "api-key=a%20b, x-team = blue"})
	if err != nil || cfg.Endpoint != "https://otel.example:4318" || cfg.Protocol != ProtocolGRPC || cfg.Headers["api-key"] != "a b" || cfg.Headers["x-team"] != "blue" {
		t.Errorf("from the environment: %+v %v", cfg, err)
	}
	if cfg, _ := Resolve("http://127.0.0.1:4318", map[string]string{EnvEndpoint: "https://other.example"}); cfg.Endpoint != "http://127.0.0.1:4318" {
		t.Errorf("the flag should win: %+v", cfg)
	}
	for _, c := range []struct {
		flag string
		env  map[string]string
		name exit.Name
		says string
	}{
		{"127.0.0.1:4318", nil, RefuseOTLPEndpoint, "not an absolute URL"},
		{"http://collector.internal:4318", nil, RefuseOTLPEndpoint, "plain http to a host that is not loopback"},
		{"ftp://127.0.0.1", nil, RefuseOTLPEndpoint, "the scheme must be https"},
		{"https://user:pw@otel.example", nil, RefuseOTLPEndpoint, "user info"},
		{"https://otel.example/?k=v", nil, RefuseOTLPEndpoint, "query"},
		{"https://otel.example", map[string]string{EnvProtocol: "http/json"}, RefuseOTLPProtocol, "http/json is not one"},
		{"https://otel.example", map[string]string{EnvHeaders: "novalue"}, RefuseOTLPHeaders, "entry 1 is not key=value"},
		{"https://otel.example", map[string]string{EnvHeaders: "k=%zz"}, RefuseOTLPHeaders, "entry 1 (k)"},
	} {
		env := c.env
		if env == nil {
			env = map[string]string{}
		}
		_, err := Resolve(c.flag, env)
		var r *exit.Refusal
		if !errors.As(err, &r) || r.Name != c.name || !strings.Contains(r.Message, c.says) {
			t.Errorf("%s %v: %v, want %s saying %q", c.flag, c.env, err, c.name, c.says)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("the refusal echoes the password: %v", err)
		}
	}
}

func keys(m map[string]ptrace.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// FuzzResolve: no endpoint or header list makes Resolve panic, and what
// it accepts is https or loopback http with no user info.
func FuzzResolve(f *testing.F) {
	f.Add("http://127.0.0.1:4318", "api-key=a%20b,x=y", "grpc")
	f.Add("https://otel.example/base/", "", "http/protobuf")
	f.Add("http://[::1]:4317", "k=%", "")
	f.Fuzz(func(t *testing.T, endpoint, headers, protocol string) {
		cfg, err := Resolve(endpoint, map[string]string{EnvHeaders: headers, EnvProtocol: protocol})
		if err != nil || cfg == nil {
			return
		}
		if !strings.HasPrefix(cfg.Endpoint, "https://") && !strings.HasPrefix(cfg.Endpoint, "http://") {
			t.Fatalf("accepted %q", cfg.Endpoint)
		}
		if strings.Contains(cfg.Endpoint, "@") {
			t.Fatalf("accepted user info: %q", cfg.Endpoint)
		}
	})
}
