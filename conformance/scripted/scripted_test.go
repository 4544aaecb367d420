package scripted

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestScriptVectors: every good_* script parses; every fail_* script is
// refused with the reason its name promises.
func TestScriptVectors(t *testing.T) {
	want := map[string]string{
		"fail_unknown_field.json":           `unknown field "txt"`,
		"fail_empty_turn.json":              "turn 1: a turn needs text, a tool_call or an error",
		"fail_error_with_text.json":         "an error turn carries nothing else",
		"fail_error_status_range.json":      "error status 200 is not between 400 and 599",
		"fail_tool_input_not_object.json":   "input must be a JSON object",
		"fail_tool_without_name.json":       "tool_call needs a name",
		"fail_trailing_data.json":           "trailing data",
		"fail_final_from_no_group.json":     `final_from "Reply with exactly: \\S+" must have exactly one group, the text answered`,
		"fail_final_from_not_a_regexp.json": "final_from: error parsing regexp: missing closing )",
	}
	files, _ := filepath.Glob("testdata/scripts/*.json")
	if len(files) == 0 {
		t.Fatal("no script vectors")
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			s, err := LoadScript(f)
			if strings.HasPrefix(name, "good_") {
				if err != nil || len(s.Turns) == 0 {
					t.Fatalf("LoadScript: %v (turns %d)", err, len(s.Turns))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), want[name]) || want[name] == "" {
				t.Fatalf("error %v, want one containing %q", err, want[name])
			}
		})
	}
}

type event struct {
	name string
	data map[string]any
}

// post sends body to url and returns the response and its SSE events.
func post(t *testing.T, url string, header map[string]string, body string) (*http.Response, []event) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []event
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, nil
	}
	sc := bufio.NewScanner(resp.Body)
	var cur event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data line is not JSON: %q", line)
			}
		case line == "":
			events = append(events, cur)
			cur = event{}
		}
	}
	return resp, events
}

func names(events []event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.name)
	}
	return out
}

func TestAnthropicScript(t *testing.T) {
	s := Script{Turns: []Turn{
		{ToolCall: &ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path": "a.txt"}`)}},
		{Text: "it says hi"},
	}}
	srv := NewAnthropicServer(s)
	defer srv.Close()
	url := srv.URL() + "/v1/messages?beta=true"
	hdr := map[string]string{"x-api-key": "k1", "anthropic-version": "2023-06-01"}

	resp, ev := post(t, url, hdr, `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"mcp__metaharness__read_file"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	wantNames := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if d := cmp.Diff(wantNames, names(ev)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	block := ev[1].data["content_block"].(map[string]any)
	if block["type"] != "tool_use" || block["name"] != "mcp__metaharness__read_file" {
		t.Fatalf("content_block_start: %v", block)
	}
	if pj := ev[2].data["delta"].(map[string]any)["partial_json"]; pj != `{"path":"a.txt"}` {
		t.Fatalf("partial_json %v", pj)
	}
	if sr := ev[4].data["delta"].(map[string]any)["stop_reason"]; sr != "tool_use" {
		t.Fatalf("stop_reason %v", sr)
	}

	_, ev = post(t, url, hdr, `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_0001","name":"mcp__metaharness__read_file","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_0001","content":[{"type":"text","text":"hi there"}]}]}]}`)
	if got := ev[2].data["delta"].(map[string]any)["text"]; got != "it says hi" {
		t.Fatalf("second answer %v", got)
	}
	_, ev = post(t, url, hdr, `{"model":"m","stream":true,"messages":[{"role":"user","content":"more"}]}`)
	if got := ev[2].data["delta"].(map[string]any)["text"]; got != DefaultFinal {
		t.Fatalf("past the end %v", got)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	if reqs[0].Turn != 0 || reqs[1].Turn != 1 || reqs[2].Turn != PastEnd {
		t.Fatalf("turns %d %d %d", reqs[0].Turn, reqs[1].Turn, reqs[2].Turn)
	}
	if reqs[0].Credential() != "k1" || reqs[0].RawQuery != "beta=true" || reqs[0].Header.Get("Anthropic-Version") != "2023-06-01" {
		t.Fatalf("request 1 recorded as %+v", reqs[0])
	}
	if d := cmp.Diff([]string{"mcp__metaharness__read_file"}, reqs[0].Tools); d != "" {
		t.Fatalf("tools: %s", d)
	}
	if d := cmp.Diff([]ToolResult{{CallID: "toolu_0001", Content: "hi there"}}, reqs[1].ToolResults); d != "" {
		t.Fatalf("tool results: %s", d)
	}
}

// TestFinalFromPrompt: past its turns, a script with final_from answers
// each request with what its group finds in the request's last matching
// user text (a string content, or its text blocks), and Final when no
// text matches.
func TestFinalFromPrompt(t *testing.T) {
	s, err := LoadScript("testdata/scripts/good_final_from_prompt.json")
	if err != nil {
		t.Fatal(err)
	}
	text := func(ev []event) any { return ev[2].data["delta"].(map[string]any)["text"] }
	a := NewAnthropicServer(s)
	defer a.Close()
	url := a.URL() + "/v1/messages"
	if _, ev := post(t, url, nil, `{"stream":true,"messages":[{"role":"user","content":"Reply with exactly: AH_1"}]}`); text(ev) != "first" {
		t.Fatalf("the turn: %v", text(ev))
	}
	_, ev := post(t, url, nil, `{"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x</system-reminder>"},{"type":"text","text":"Reply with exactly: AH_SMOKE_0A1B"}]}]}`)
	if text(ev) != "AH_SMOKE_0A1B" {
		t.Fatalf("past the turns, with the prompt: %v", text(ev))
	}
	if _, ev := post(t, url, nil, `{"stream":true,"messages":[{"role":"user","content":"something else"}]}`); text(ev) != "no marker here" {
		t.Fatalf("past the turns, no match: %v", text(ev))
	}
}

func TestOpenAIScript(t *testing.T) {
	s := Script{Turns: []Turn{
		{ToolCall: &ToolCall{Name: "echo", Namespace: "mcp__demo", Input: json.RawMessage(`{"text":"x"}`)}},
	}, Final: "DONE"}
	srv := NewOpenAIServer(s)
	defer srv.Close()
	url := srv.URL() + "/v1/responses"
	hdr := map[string]string{"Authorization": "Bearer k2"}

	_, ev := post(t, url, hdr, `{"model":"fake-model","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}],
		"tools":[{"type":"function","name":"exec_command"},{"type":"namespace","name":"mcp__demo","tools":[{"type":"function","name":"echo"}]},{"type":"web_search"}]}`)
	if d := cmp.Diff([]string{"response.created", "response.output_item.done", "response.completed"}, names(ev)); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	item := ev[1].data["item"].(map[string]any)
	if item["type"] != "function_call" || item["namespace"] != "mcp__demo" || item["name"] != "echo" || item["arguments"] != `{"text":"x"}` {
		t.Fatalf("item %v", item)
	}
	_, ev = post(t, url, hdr, `{"model":"fake-model","stream":true,"input":[{"type":"message","role":"user","content":"go"},
		{"type":"function_call","call_id":"call_0001","name":"echo","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_0001","output":"echo: x"}]}`)
	if d := cmp.Diff([]string{"response.created", "response.output_item.added", "response.output_text.delta", "response.output_item.done", "response.completed"}, names(ev)); d != "" {
		t.Fatalf("text events (-want +got):\n%s", d)
	}
	msg := ev[3].data["item"].(map[string]any)
	if text := msg["content"].([]any)[0].(map[string]any)["text"]; text != "DONE" || ev[2].data["delta"] != "DONE" {
		t.Fatalf("final text %v, delta %v", text, ev[2].data["delta"])
	}
	reqs := srv.Requests()
	if d := cmp.Diff([]string{"exec_command", "mcp__demo__echo", "web_search"}, reqs[0].Tools); d != "" {
		t.Fatalf("tools: %s", d)
	}
	if d := cmp.Diff([]ToolResult{{CallID: "call_0001", Content: "echo: x"}}, reqs[1].ToolResults); d != "" {
		t.Fatalf("tool results: %s", d)
	}
	if reqs[1].Credential() != "k2" {
		t.Fatalf("credential %q", reqs[1].Credential())
	}
	if d := cmp.Diff([]string{"go"}, reqs[0].UserTexts); d != "" || reqs[0].Lite {
		t.Fatalf("user texts %s, lite %v", d, reqs[0].Lite)
	}
}

// TestOpenAIResponsesLite: a responses-lite request's tools are read from
// its additional_tools item, and a freeform call is a custom_tool_call.
func TestOpenAIResponsesLite(t *testing.T) {
	srv := NewOpenAIServer(Script{Turns: []Turn{{ToolCall: &ToolCall{Name: "apply_patch", Freeform: "*** Begin Patch"}}}})
	defer srv.Close()
	hdr := map[string]string{"x-openai-internal-codex-responses-lite": "true"}
	_, ev := post(t, srv.URL()+"/v1/responses", hdr, `{"model":"gpt-6-sol","stream":true,"input":[
		{"type":"additional_tools","role":"developer","tools":[{"type":"namespace","name":"functions","tools":[{"type":"function","name":"read_file"}]}]},
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"STEER"}]}]}`)
	item := ev[1].data["item"].(map[string]any)
	if item["type"] != "custom_tool_call" || item["input"] != "*** Begin Patch" || item["call_id"] != "call_0001" {
		t.Fatalf("item %v", item)
	}
	r := srv.Requests()[0]
	if d := cmp.Diff([]string{"functions__read_file"}, r.Tools); d != "" || !r.Lite {
		t.Fatalf("tools %s, lite %v", d, r.Lite)
	}
	if d := cmp.Diff([]string{"hi", "STEER"}, r.UserTexts); d != "" {
		t.Fatalf("user texts: %s", d)
	}
}

// TestHoldAndFinalError: a held stream starts and waits; a client that goes
// away ends the hold (the request is marked abandoned, the turn consumed).
// FinalError answers every request past the turns, with Retry-After.
func TestHoldAndFinalError(t *testing.T) {
	holding := make(chan struct{}, 1)
	srv := NewOpenAIServer(Script{
		Turns:      []Turn{{Text: "slow", HoldMS: 60_000}},
		FinalError: &ErrorTurn{Status: 429, Message: "slow down", RetryAfter: "7"},
	}, OnRequest(func(r Request) {
		if r.Turn == 0 {
			holding <- struct{}{}
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL()+"/v1/responses", strings.NewReader(`{"stream":true}`))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-holding
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the held stream ended on its own")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !srv.Requests()[0].Abandoned {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned hold was never recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < 2; i++ {
		resp, _ := post(t, srv.URL()+"/v1/responses", nil, `{"stream":true}`)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
			t.Fatalf("request %d past the turns: %d, Retry-After %q", i+2, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if _, err := ParseScript([]byte(`{"turns":[{"text":"x","hold_ms":-1}]}`)); err == nil {
		t.Fatal("a negative hold was accepted")
	}
	if _, err := ParseScript([]byte(`{"turns":[],"final_error":{"status":200,"message":"x"}}`)); err == nil {
		t.Fatal("a final_error with a success status was accepted")
	}
}

// TestErrorsAndRefusals: an error turn answers its status in the vendor's
// error shape; a wrong key and a non-model request consume no turn.
func TestErrorsAndRefusals(t *testing.T) {
	s := Script{Turns: []Turn{{Error: &ErrorTurn{Status: 529, Message: "Overloaded"}}, {Text: "after"}}}
	srv := NewAnthropicServer(s, RequireKey("good"))
	defer srv.Close()
	url := srv.URL() + "/v1/messages"

	resp, _ := post(t, url, map[string]string{"x-api-key": "bad"}, `{"stream":true}`)
	if resp.StatusCode != 401 {
		t.Fatalf("wrong key: status %d", resp.StatusCode)
	}
	resp, _ = post(t, srv.URL()+"/api/hello", map[string]string{"x-api-key": "good"}, ``)
	if resp.StatusCode != 404 {
		t.Fatalf("probe: status %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer good")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 529 || !strings.Contains(string(body), `"type":"overloaded_error"`) || !strings.Contains(string(body), "Overloaded") {
		t.Fatalf("error turn: %d %s", r.StatusCode, body)
	}
	// Non-streaming answer of the next turn.
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"m"}`))
	req.Header.Set("x-api-key", "good")
	r, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Content []struct{ Text string } `json:"content"`
	}
	_ = json.NewDecoder(r.Body).Decode(&msg)
	r.Body.Close()
	if len(msg.Content) != 1 || msg.Content[0].Text != "after" {
		t.Fatalf("non-streaming answer %+v", msg)
	}
	var turns []int
	for _, q := range srv.Requests() {
		turns = append(turns, q.Turn)
	}
	if d := cmp.Diff([]int{NotAnswered, NotAnswered, 0, 1}, turns); d != "" {
		t.Fatalf("turns: %s", d)
	}
}

// TestTLS: a client that does not trust the server's certificate fails; one
// given CertPool succeeds.
func TestTLS(t *testing.T) {
	srv := NewOpenAIServer(Texts("hi"), WithTLS())
	defer srv.Close()
	if _, err := http.Post(srv.URL()+"/v1/responses", "application/json", strings.NewReader(`{}`)); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: srv.TLSConfig()}}
	defer c.CloseIdleConnections()
	resp, err := c.Post(srv.URL()+"/v1/responses", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

// FuzzParseScript: the script reader never panics, and a script it accepts
// survives a JSON round trip unchanged.
func FuzzParseScript(f *testing.F) {
	files, _ := filepath.Glob("testdata/scripts/*.json")
	for _, p := range files {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScript(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("accepted script does not encode: %v", err)
		}
		again, err := ParseScript(out)
		if err != nil {
			t.Fatalf("re-encoded script refused: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if string(out) != string(out2) {
			t.Fatalf("round trip changed the script:\n%s\n%s", out, out2)
		}
	})
}

// TestGeminiServer: a turn is answered as data-only events of whole
// responses, the text cut in two and the finish on the last; a tool call
// has no id unless the script names one; a side call asking for JSON is
// answered from its schema without a turn; the tool results the client
// hands back are read; an error turn is the API's error shape.
func TestGeminiServer(t *testing.T) {
	srv := NewGeminiServer(Script{Turns: []Turn{
		{Text: "héllo", ToolCall: &ToolCall{Name: "read_file", Input: json.RawMessage(`{"file_path":"a"}`)}},
		{ToolCall: &ToolCall{Name: "list_directory", ID: "c1"}},
		{Error: &ErrorTurn{Status: 429, Message: "slow"}},
	}}, RequireKey("k"))
	defer srv.Close()
	key := map[string]string{"x-goog-api-key": "k"}
	whole := func(url, body string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("X-Goog-Api-Key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	_, sideBody := whole(srv.URL()+"/v1beta/models/m-1:generateContent",
		`{"contents":[],"generationConfig":{"responseJsonSchema":{"type":"object","properties":{"score":{"type":"INTEGER"},"why":{"type":"string"},"pick":{"enum":["flash","pro"]}}}}}`)
	var side struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string } `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(sideBody, &side); err != nil {
		t.Fatal(err)
	}
	_, events := post(t, srv.URL()+"/v1beta/models/m-1:streamGenerateContent?alt=sse", key,
		`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"x","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"id":"x__1","name":"x","response":{"output":"fine"}}},{"functionResponse":{"name":"y","response":{"error":"no"}}}]}],"tools":[{"functionDeclarations":[{"name":"read_file"},{"name":"list_directory"}]}]}`)
	if len(events) != 3 || events[0].name != "" {
		t.Fatalf("events %+v", events)
	}
	texts := ""
	for _, e := range events[:2] {
		parts := e.data["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
		texts += parts[0].(map[string]any)["text"].(string)
	}
	last := events[2].data["candidates"].([]any)[0].(map[string]any)
	call := last["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["functionCall"].(map[string]any)
	if texts != "héllo" || last["finishReason"] != "STOP" || call["name"] != "read_file" || call["id"] != nil || events[2].data["usageMetadata"] == nil {
		t.Fatalf("texts %q, last %v", texts, last)
	}
	_, events = post(t, srv.URL()+"/v1beta/models/m-1:streamGenerateContent?alt=sse", key, `{"contents":[]}`)
	if got := events[0].data["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["functionCall"].(map[string]any)["id"]; got != "c1" {
		t.Fatalf("the script's id: %v", got)
	}
	if status, body := whole(srv.URL()+"/v1beta/models/m-1:streamGenerateContent?alt=sse", `{"contents":[]}`); status != 429 || !strings.Contains(string(body), `"status":"RESOURCE_EXHAUSTED"`) {
		t.Fatalf("error turn: %d %s", status, body)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 || reqs[0].Turn != SideCall || !reqs[0].Side || reqs[1].Turn != 0 || reqs[1].Model != "m-1" || !reqs[1].Stream {
		t.Fatalf("requests %+v", reqs)
	}
	want := []ToolResult{{CallID: "x__1", Content: "fine"}, {CallID: "y", Content: "no", IsError: true}}
	if d := cmp.Diff(want, reqs[1].ToolResults); d != "" || strings.Join(reqs[1].Tools, ",") != "read_file,list_directory" || strings.Join(reqs[1].UserTexts, ",") != "go" {
		t.Fatalf("parsed %+v %v %v", reqs[1].ToolResults, reqs[1].Tools, reqs[1].UserTexts)
	}
	var got map[string]any
	if len(side.Candidates) != 1 || json.Unmarshal([]byte(side.Candidates[0].Content.Parts[0].Text), &got) != nil ||
		got["score"] != float64(0) || got["why"] != "scripted" || got["pick"] != "flash" {
		t.Fatalf("side call answered %+v", side)
	}
}
