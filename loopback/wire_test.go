package loopback

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// wireCase is a captured-style answer of a model API and what the wire
// view must make of it.
type wireCase struct {
	file   string
	api    string
	status int
	want   Response
}

func wireData(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "wire", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// feed reads a body through a fresh wire view, in the pieces given, as
// an answer with status whose content type follows from the file's
// extension; whole says the body ended cleanly.
func feed(api string, status int, sse bool, whole bool, pieces ...[]byte) *Wire {
	w := newWire(api, DefaultWireLimit)
	h := http.Header{"Content-Type": {"application/json"}}
	if sse {
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
	}
	ws := w.begin(1, time.Time{}, "POST", "/v1/x", &http.Response{StatusCode: status, Header: h, ContentLength: -1})
	for _, p := range pieces {
		ws.relay(len(p))
		ws.write(p)
	}
	ws.end(whole)
	return w
}

func wireCases() []wireCase {
	toolMsg := "msg_01XFDUDYJgAACzvnptvVoYEL"
	readInput := json.RawMessage(`{"max_bytes":4096,"opts":{"a":[true,null,"é\n"],"z":1.50},"path":"notes.txt"}`)
	anthropicText := "I'll read `notes.txt` — \"quoted\" and\nthen answer ✓ 😀."
	toolCall := Item{Kind: KindToolCall, Type: "tool_use", ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Complete: true,
		Call: &Call{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "mcp__metaharness__read_file", Input: readInput, InputForm: InputJSON,
			Complete: true, Response: toolMsg, Emitted: 1}}
	anthropicHead := Response{Method: "POST", Path: "/v1/x", Status: 200, Stream: true, ID: toolMsg, Model: "claude-opus-5-5"}
	with := func(r Response, f func(*Response)) Response { f(&r); return r }

	resp := "resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b"
	msgID := "msg_68af40337e0c8193b4ff6e4c2a8b3e4105438e46b5f69a3b"
	reasoning := Item{Kind: KindReasoning, Type: "reasoning", ID: "rs_68af4030baa48193b0b43b4c2a176a1a05438e46b5f69a3b", Complete: true}
	message := Item{Kind: KindText, Type: "message", ID: msgID, Text: `Let me look at "notes.txt" — ünï 😀.`, Complete: true}
	fc := Item{Kind: KindToolCall, Type: "function_call", ID: "fc_68af4034d2a08193a1e0e1e4d5bb2e2305438e46b5f69a3b", Complete: true,
		Call: &Call{ID: "call_Ckx9SOs3YZ3RuaoHfgQFq3GW", Name: "read_file", Namespace: "mcp__metaharness",
			Input: json.RawMessage(`{"max_bytes":4096,"path":"notes.txt"}`), InputForm: InputJSON, Complete: true, Response: resp, Emitted: 1}}
	ctc := Item{Kind: KindToolCall, Type: "custom_tool_call", ID: "ctc_68af40351c3c8193", Complete: true,
		Call: &Call{ID: "call_apply_0001", Name: "apply_patch", Input: json.RawMessage(`"*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"`),
			InputForm: InputText, Complete: true, Response: resp, Emitted: 1}}
	bad := Item{Kind: KindToolCall, Type: "function_call", ID: "fc_bad", Complete: true,
		Call: &Call{ID: "call_bad_json", Name: "dyn_echo", Input: json.RawMessage(`"{\"path\": notes.txt}"`), InputForm: InputUnparsed,
			Complete: true, Response: resp, Emitted: 1}}
	responsesHead := Response{Method: "POST", Path: "/v1/x", Status: 200, Stream: true, ID: resp, Model: "gpt-5.5"}

	gresp := "Xf3SaO7gMpqz_uMP0NXMqQs"
	geminiHead := Response{Method: "POST", Path: "/v1/x", Status: 200, Stream: true, ID: gresp, Model: "gemini-3.8-flash"}
	geminiCall := func(id, name, input string) Item {
		return Item{Kind: KindToolCall, Type: "functionCall", Complete: true, Call: &Call{ID: id, Name: name,
			Input: json.RawMessage(input), InputForm: InputJSON, Complete: true, Response: gresp, Emitted: 1}}
	}
	unbound := func(it Item) Item { it.Call.Emitted = 2; return it } // the two calls without an id share ""

	return []wireCase{
		{"anthropic-tool.sse", AnthropicMessages, 200, with(anthropicHead, func(r *Response) {
			r.StopReason, r.End = "tool_use", EndCompleted
			r.Usage = &Usage{InputTokens: 472, OutputTokens: 89} // message_delta's count replaces message_start's
			r.Items = []Item{{Kind: KindReasoning, Type: "thinking", Complete: true},
				{Kind: KindText, Type: "text", Text: anthropicText, Complete: true}, toolCall}
		})},
		{"anthropic-cut.sse", AnthropicMessages, 200, with(anthropicHead, func(r *Response) {
			r.End, r.Usage = EndCut, &Usage{InputTokens: 472, OutputTokens: 2}
			r.Items = []Item{{Kind: KindReasoning, Type: "thinking", Complete: true},
				{Kind: KindText, Type: "text", Text: anthropicText, Complete: true},
				{Kind: KindToolCall, Type: "tool_use", ID: toolCall.ID, Call: &Call{ID: toolCall.ID, Name: toolCall.Call.Name,
					Input: json.RawMessage(`"{\"path\": \"no"`), InputForm: InputUnparsed, Response: toolMsg, Emitted: 1}}}
		})},
		{"anthropic-error.sse", AnthropicMessages, 200, with(anthropicHead, func(r *Response) {
			r.End, r.ErrorType, r.Usage = EndFailed, "overloaded_error", &Usage{InputTokens: 472, OutputTokens: 2}
			r.Items = []Item{{Kind: KindText, Type: "text", Text: "Hel"}}
		})},
		{"anthropic-message.json", AnthropicMessages, 200, Response{Method: "POST", Path: "/v1/x", Status: 200,
			ID: "msg_013Zva2CMHLNnXjNJJKqJ2EF", Model: "claude-opus-5-5", StopReason: "tool_use", End: EndCompleted, Usage: &Usage{InputTokens: 12, OutputTokens: 30},
			Items: []Item{{Kind: KindText, Type: "text", Text: "Reading it.", Complete: true},
				{Kind: KindToolCall, Type: "tool_use", ID: "toolu_01A09q90qw90lq917835lq9", Complete: true, Call: &Call{
					ID: "toolu_01A09q90qw90lq917835lq9", Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"max_bytes":10,"path":"notes.txt"}`),
					InputForm: InputJSON, Complete: true, Response: "msg_013Zva2CMHLNnXjNJJKqJ2EF", Emitted: 1}}}}},
		{"anthropic-429.json", AnthropicMessages, 429, Response{Method: "POST", Path: "/v1/x", Status: 429, Items: []Item{},
			End: EndFailed, ErrorType: "rate_limit_error"}},
		{"responses-tool.sse", OpenAIResponses, 200, with(responsesHead, func(r *Response) {
			r.StopReason, r.End, r.Usage = "completed", EndCompleted, &Usage{InputTokens: 329, OutputTokens: 99}
			r.Items = []Item{reasoning, message, fc, ctc, bad}
		})},
		{"responses-cut.sse", OpenAIResponses, 200, with(responsesHead, func(r *Response) {
			r.End = EndCut
			r.Items = []Item{reasoning, message}
		})},
		{"responses-incomplete.sse", OpenAIResponses, 200, with(responsesHead, func(r *Response) {
			r.StopReason, r.End = "max_output_tokens", EndIncomplete
			r.Items = []Item{message}
		})},
		{"responses-failed.sse", OpenAIResponses, 200, with(responsesHead, func(r *Response) {
			r.StopReason, r.End, r.ErrorType = "failed", EndFailed, "server_error"
			r.Items = []Item{}
		})},
		{"responses-error-event.sse", OpenAIResponses, 200, Response{Method: "POST", Path: "/v1/x", Status: 200, Stream: true,
			Items: []Item{}, End: EndFailed, ErrorType: "rate_limit_exceeded"}},
		{"responses-429.json", OpenAIResponses, 429, Response{Method: "POST", Path: "/v1/x", Status: 429, Items: []Item{},
			End: EndFailed, ErrorType: "insufficient_quota"}},
		{"responses-body.json", OpenAIResponses, 200, with(responsesHead, func(r *Response) {
			r.Stream, r.StopReason, r.End, r.Usage = false, "completed", EndCompleted, &Usage{InputTokens: 329, OutputTokens: 99}
			r.Items = []Item{reasoning, message, fc, ctc, bad}
		})},
		{"gemini-tool.sse", GeminiAPI, 200, with(geminiHead, func(r *Response) {
			r.StopReason, r.End, r.Usage = "STOP", EndCompleted, &Usage{InputTokens: 3120, OutputTokens: 120, CacheReadTokens: 2048}
			r.Items = []Item{{Kind: KindReasoning, Type: "thought", Complete: true},
				{Kind: KindText, Type: "text", Text: "I will read `notes.txt` — \"quoted\" and\nthen answer ✓ 😀.", Complete: true},
				{Kind: KindReasoning, Type: "thought", Complete: true}, // a thought does not part the text around it
				unbound(geminiCall("", "mcp_metaharness_read_file", `{"max_bytes":4096,"opts":{"a":[true,null,"é\n"],"z":1.50},"path":"notes.txt"}`)),
				geminiCall("read_file__call-7", "read_file", `{"file_path":"a.txt"}`),
				unbound(geminiCall("", "list_directory", `{}`))}
		})},
		{"gemini-cut.sse", GeminiAPI, 200, Response{Method: "POST", Path: "/v1/x", Status: 200, Stream: true, ID: "cut-1", Model: "gemini-2.5-flash",
			End: EndCut, Items: []Item{{Kind: KindText, Type: "text", Text: "Hello"}}}},
		{"gemini-error.sse", GeminiAPI, 200, Response{Method: "POST", Path: "/v1/x", Status: 200, Stream: true, ID: "err-1", Model: "gemini-2.5-flash",
			End: EndFailed, ErrorType: "RESOURCE_EXHAUSTED", Items: []Item{{Kind: KindText, Type: "text", Text: "Hel"}}}},
		{"gemini-body.json", GeminiAPI, 200, Response{Method: "POST", Path: "/v1/x", Status: 200, ID: "r0uter-9zVQ", Model: "gemini-3.5-flash-lite",
			StopReason: "STOP", End: EndCompleted, Usage: &Usage{InputTokens: 812, OutputTokens: 19},
			Items: []Item{{Kind: KindText, Type: "text", Text: `{"complexity_reasoning": "Simple read operation.", "complexity_score": 10}`, Complete: true}}}},
		{"gemini-429.json", GeminiAPI, 429, Response{Method: "POST", Path: "/v1/x", Status: 429, Items: []Item{},
			End: EndFailed, ErrorType: "RESOURCE_EXHAUSTED"}},
	}
}

func only(t *testing.T, w *Wire) Response {
	t.Helper()
	rs := w.Responses()
	if len(rs) != 1 {
		t.Fatalf("%d responses", len(rs))
	}
	return rs[0]
}

// TestWireParses: each captured-style answer, read whole, is what the
// model emitted: ids, model, texts, tool calls with canonical inputs,
// reasoning by its kind, the stop reason, how it ended, the error type.
func TestWireParses(t *testing.T) {
	for _, c := range wireCases() {
		t.Run(c.file, func(t *testing.T) {
			body := wireData(t, c.file)
			got := only(t, feed(c.api, c.status, strings.HasSuffix(c.file, ".sse"), true, body))
			if d := cmp.Diff(c.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestWireEverySplit: however the body is cut into chunks (at every byte
// into two, byte by byte, and with CRLF line ends), the view is the same.
func TestWireEverySplit(t *testing.T) {
	for _, c := range wireCases() {
		t.Run(c.file, func(t *testing.T) {
			body := wireData(t, c.file)
			sse := strings.HasSuffix(c.file, ".sse")
			want := only(t, feed(c.api, c.status, sse, true, body))
			for i := 1; i < len(body); i++ {
				got := only(t, feed(c.api, c.status, sse, true, body[:i], body[i:]))
				if d := cmp.Diff(want, got); d != "" {
					t.Fatalf("split at %d (-whole +split):\n%s", i, d)
				}
			}
			var bytewise [][]byte
			for i := range body {
				bytewise = append(bytewise, body[i:i+1])
			}
			if d := cmp.Diff(want, only(t, feed(c.api, c.status, sse, true, bytewise...))); d != "" {
				t.Fatalf("byte by byte (-whole +bytewise):\n%s", d)
			}
			if sse {
				crlf := []byte(strings.ReplaceAll(string(body), "\n", "\r\n"))
				if d := cmp.Diff(want, only(t, feed(c.api, c.status, sse, true, crlf))); d != "" {
					t.Fatalf("CRLF (-LF +CRLF):\n%s", d)
				}
			}
		})
	}
}

// TestWireToolInputInManyChunks: a tool input that arrives in many
// input_json_delta chunks, each cut anywhere (inside an escape, between a
// surrogate pair's halves), is read as the client joins it.
func TestWireToolInputInManyChunks(t *testing.T) {
	input := `{"cmd": "echo \"hi\" \u00e9 \ud83d\ude00", "n": [1, 2.0e3]}`
	parts := []string{`{"cmd": "ec`, `ho \"`, `hi\" \u00`, `e9 \ud83d`, `\ude00", "n": [`, `1, 2.0`, `e3]}`}
	if strings.Join(parts, "") != input {
		t.Fatal("the parts do not make the input")
	}
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\"}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Bash\",\"input\":{}}}\n\n")
	for _, p := range parts {
		q, _ := json.Marshal(p)
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":" + string(q) + "}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	// A text whose surrogate pair is split across two deltas, escaped.
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\\ud83d\"}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"\\ude00b\"}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	w := feed(AnthropicMessages, 200, true, true, []byte(b.String()))
	c, ok := w.Call("toolu_1")
	if !ok || c.InputForm != InputJSON || string(c.Input) != `{"cmd":"echo \"hi\" é 😀","n":[1,2.0e3]}` || c.Name != "Bash" || c.Response != "msg_1" || !c.Complete {
		t.Fatalf("call %+v %s", c, c.Input)
	}
	if got := only(t, w).Items[1].Text; got != "a😀b" {
		t.Fatalf("text %q", got)
	}
}

// TestWireNoInputDeltas: a tool_use block whose input came whole at its
// start (no input_json_delta) holds that input.
func TestWireNoInputDeltas(t *testing.T) {
	s := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"Read\",\"input\":{\"b\":1, \"a\":2}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	c, ok := feed(AnthropicMessages, 200, true, true, []byte(s)).Call("toolu_2")
	if !ok || string(c.Input) != `{"a":2,"b":1}` || c.InputForm != InputJSON {
		t.Fatalf("call %+v %s", c, c.Input)
	}
}

// TestWireStreamWithoutEventNames: data lines alone are read by their
// type, as the clients dispatch them.
func TestWireStreamWithoutEventNames(t *testing.T) {
	var b strings.Builder
	for _, line := range strings.Split(string(wireData(t, "anthropic-tool.sse")), "\n") {
		if !strings.HasPrefix(line, "event:") {
			b.WriteString(line + "\n")
		}
	}
	named := only(t, feed(AnthropicMessages, 200, true, true, wireData(t, "anthropic-tool.sse")))
	bare := only(t, feed(AnthropicMessages, 200, true, true, []byte(b.String())))
	if d := cmp.Diff(named, bare); d != "" {
		t.Fatalf("(-named +bare):\n%s", d)
	}
}

// TestWireEventNamedAgainstItsData: an event whose name and data's type
// disagree is read as the vendor's client reads it, by the data's type:
// Claude Code's SDK takes an event named for a message whatever its data
// says and skips a ping, whatever its data says; codex reads every event
// by its data alone.
func TestWireEventNamedAgainstItsData(t *testing.T) {
	anthropic := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\"}}\n\n" +
		// Named a delta, a block start by its data: the SDK starts a Bash call.
		"event: content_block_delta\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_bash\",\"name\":\"Bash\",\"input\":{}}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		// A ping carrying a call: the SDK skips it.
		"event: ping\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_read\",\"name\":\"Read\",\"input\":{}}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	w := feed(AnthropicMessages, 200, true, true, []byte(anthropic))
	if c, ok := w.Call("toolu_bash"); !ok || c.Name != "Bash" {
		t.Errorf("the call the SDK reads from a delta-named event: %+v %v", c, ok)
	}
	if _, ok := w.Call("toolu_read"); ok {
		t.Error("a call in a ping, which the SDK skips, is on the wire")
	}
	done := `{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"call_shell","name":"shell","arguments":"{}","status":"completed"}}`
	responses := "event: response.output_text.delta\ndata: " + done + "\n\n" +
		"event: response.output_item.done\ndata: {\"type\":\"response.output_text.delta\",\"item\":{\"type\":\"function_call\",\"id\":\"fc_2\",\"call_id\":\"call_read\",\"name\":\"read\",\"arguments\":\"{}\"}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"}}\n\n"
	w = feed(OpenAIResponses, 200, true, true, []byte(responses))
	if c, ok := w.Call("call_shell"); !ok || c.Name != "shell" {
		t.Errorf("the call codex reads from a delta-named event: %+v %v", c, ok)
	}
	if _, ok := w.Call("call_read"); ok {
		t.Error("a call in an event whose data is a delta, which codex does not read as an item, is on the wire")
	}
}

// TestWireBodyKeysReadAsTheVendorDoes: a whole JSON answer that gives a
// key in another case (or twice) is one the vendor's client reads one way
// and encoding/json another; the view holds no call from it.
func TestWireBodyKeysReadAsTheVendorDoes(t *testing.T) {
	for api, body := range map[string]string{
		AnthropicMessages: `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","Name":"Read","input":{}}],"stop_reason":"tool_use"}`,
		OpenAIResponses:   `{"id":"resp_1","object":"response","status":"completed","output":[{"type":"function_call","id":"fc_1","call_id":"toolu_1","name":"shell","name":"read","arguments":"{}"}]}`,
	} {
		w := feed(api, 200, false, true, []byte(body))
		if c, ok := w.Call("toolu_1"); ok {
			t.Errorf("%s: a call read from a body with a key twice or in another case: %+v", api, c)
		}
	}
}

// TestWireCutAndUnread: a stream the upstream broke off is cut whatever it
// held; a compressed body or one of another type is not read, and says so.
func TestWireCutAndUnread(t *testing.T) {
	if r := only(t, feed(AnthropicMessages, 200, true, false, wireData(t, "anthropic-tool.sse"))); r.End != EndCompleted {
		t.Fatalf("a stream that reached message_stop before the break is completed: %s", r.End)
	}
	body := wireData(t, "responses-tool.sse")
	if r := only(t, feed(OpenAIResponses, 200, true, false, body[:len(body)/2])); r.End != EndCut || len(r.Items) == 0 || len(r.Items) >= 5 {
		t.Fatalf("broken off: end %s, %d items", r.End, len(r.Items))
	}
	for name, h := range map[string]http.Header{
		"gzip": {"Content-Type": {"text/event-stream"}, "Content-Encoding": {"gzip"}},
		"html": {"Content-Type": {"text/html"}},
	} {
		w := newWire(AnthropicMessages, DefaultWireLimit)
		ws := w.begin(1, time.Time{}, "POST", "/v1/messages", &http.Response{StatusCode: 200, Header: h, ContentLength: -1})
		ws.relay(len(body))
		ws.write(body)
		ws.end(true)
		if r := only(t, w); r.End != EndOther || r.Unread == "" || len(r.Items) != 0 {
			t.Fatalf("%s: %+v", name, r)
		}
	}
}

// TestWireMalformed: events the view cannot walk are counted, not taken
// for content, and the rest of the stream is read.
func TestWireMalformed(t *testing.T) {
	s := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"!\"}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	r := only(t, feed(AnthropicMessages, 200, true, true, []byte(s)))
	if r.Unreadable != 2 || r.Items[0].Text != "!" || r.End != EndCompleted {
		t.Fatalf("%+v", r)
	}
}

// TestWireMemoryBound: past its limit the view holds nothing more of a
// response's content, marks what it cut and counts every byte it did not
// hold; the ids of later tool calls are still held.
func TestWireMemoryBound(t *testing.T) {
	const limit = 4 << 10
	w := newWire(AnthropicMessages, limit)
	body := wireData(t, "anthropic-tool.sse")
	var bigText strings.Builder
	bigText.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for range 100 {
		bigText.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("y", 100) + "\"}}\n\n")
	}
	bigText.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	for i, b := range [][]byte{[]byte(bigText.String()), body} {
		ws := w.begin(uint64(i), time.Time{}, "POST", "/v1/messages", &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, ContentLength: -1})
		ws.relay(len(b))
		ws.write(b)
		ws.end(true)
	}
	st := w.Stats()
	if st.Held > limit+1024 || st.Overflow == 0 || st.Limit != limit {
		t.Fatalf("stats %+v", st)
	}
	rs := w.Responses()
	if !rs[0].Truncated || !rs[0].Items[0].Truncated || len(rs[0].Items[0].Text) >= 100*100 || len(rs[0].Items[0].Text)%100 != 0 {
		t.Fatalf("first response: truncated %v, text of %d bytes", rs[0].Truncated, len(rs[0].Items[0].Text))
	}
	held := len(rs[0].Items[0].Text)
	if int64(100*100-held) > st.Overflow {
		t.Fatalf("%d bytes of text were not held but only %d counted as overflow", 100*100-held, st.Overflow)
	}
	c, ok := w.Call("toolu_01T1x1fJ34qAmk2tNTrN7Up6")
	if !ok || c.Name != "mcp__metaharness__read_file" || c.InputForm != InputUnparsed {
		t.Fatalf("the later tool call past the bound: %+v (found %v)", c, ok)
	}
	if !rs[1].Truncated {
		t.Fatal("the second response lost content to the bound but is not marked")
	}
}

// TestWireSettle: Settle returns at once with nothing outstanding, waits
// for a chunk relayed and not yet read, and gives up after its timeout;
// only the bytes relayed when it was called count.
func TestWireSettle(t *testing.T) {
	w := newWire(AnthropicMessages, DefaultWireLimit)
	if !w.Settle(time.Millisecond) {
		t.Fatal("an empty view did not settle")
	}
	ws := w.begin(1, time.Time{}, "POST", "/v1/messages", &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, ContentLength: -1})
	chunk := wireData(t, "anthropic-tool.sse")
	ws.relay(len(chunk))
	if w.Settle(20 * time.Millisecond) {
		t.Fatal("settled with a chunk relayed and not read")
	}
	done := make(chan bool)
	go func() { done <- w.Settle(10 * time.Second) }()
	for w.waiters.Load() == 0 { // Settle has taken its targets
		time.Sleep(time.Millisecond)
	}
	ws.write(chunk)
	ws.relay(1 << 20) // relayed after Settle was called: not waited for
	if !<-done {
		t.Fatal("Settle did not see the chunk read")
	}
	if _, ok := w.Call("toolu_01T1x1fJ34qAmk2tNTrN7Up6"); !ok {
		t.Fatal("the settled tool call is not visible")
	}
	ws.end(false)
	if !w.Settle(time.Millisecond) {
		t.Fatal("an ended stream holds Settle")
	}
}

// TestCanonical: one form for every encoding of a value; duplicate keys,
// trailing data and invalid UTF-8 refused.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		` { "b" : [ 1 , 2.50, -0, 1E+3 ] , "a" : { "y" : null, "x" : true } } `: `{"a":{"x":true,"y":null},"b":[1,2.50,-0,1E+3]}`,
		`"\u00e9\/\u2028\u0007\t<>&"`:                                           "\"é/\u2028\\u0007\\t<>&\"",
		`{"\u0061":1,"b":{"\ud83d\ude00":"😀"}}`:                                 `{"a":1,"b":{"😀":"😀"}}`,
		`[]`: `[]`, `{}`: `{}`, `"x"`: `"x"`, `12345678901234567890`: `12345678901234567890`,
	} {
		got, err := Canonical(json.RawMessage(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"x":{"k":1,"k":1}}`, `1 2`, `{`, ``, "\"\xff\"", `[1,]`,
		strings.Repeat("[", 300) + strings.Repeat("]", 300)} {
		if got, err := Canonical(json.RawMessage(in)); err == nil {
			t.Errorf("%q was accepted as %s", in, got)
		}
	}
}
