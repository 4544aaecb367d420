package loopback

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// streamUntil posts body to the proxy and reads the answer line by line,
// calling at once for the first line that holds mark (the moment a client
// has seen it); it returns the whole answer.
func streamUntil(t *testing.T, p *Proxy, path, body, mark string, at func()) string {
	t.Helper()
	req, _ := http.NewRequest("POST", p.BaseURL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.Placeholder())
	req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd") // as Claude Code sends it
	resp, err := newClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all strings.Builder
	br := bufio.NewReader(resp.Body)
	seen := false
	for {
		line, err := br.ReadString('\n')
		all.WriteString(line)
		if !seen && strings.Contains(line, mark) {
			seen = true
			at()
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !seen {
		t.Fatalf("the answer never held %q:\n%s", mark, all.String())
	}
	return all.String()
}

// TestWireThroughProxy: with the real proxy in front of the scripted
// servers the vendor tests use, a tool call the client has just been
// relayed is in the view once Settle returns, with its canonical input;
// after the answers end, each is in the view as the model sent it, and
// what the clients got is byte for byte what they get without a view.
// The upstream is asked for identity-encoded bodies.
func TestWireThroughProxy(t *testing.T) {
	t.Run("anthropic", func(t *testing.T) {
		script := scripted.Script{Turns: []scripted.Turn{
			{Text: "reading <it> & more", ToolCall: &scripted.ToolCall{Name: "mcp__metaharness__read_file", Input: json.RawMessage(`{"path": "a<b>.txt", "max_bytes": 10}`)}},
			{Text: "all read"},
			{Error: &scripted.ErrorTurn{Status: 429, Message: "slow down"}},
		}}
		up := scripted.NewAnthropicServer(script)
		defer up.Close()
		p := start(t, up.URL(), func(c *Config) { c.ModelAPI, c.AllowPaths = AnthropicMessages, ModelAPIPaths(AnthropicMessages) })
		const streamed = `{"model":"claude-opus-5-5","stream":true,"messages":[{"role":"user","content":"read it"}]}`
		body := streamUntil(t, p, "/v1/messages?beta=true", streamed, `{"index":1,"type":"content_block_stop"}`, func() {
			if !p.Wire().Settle(5 * time.Second) {
				t.Error("Settle timed out")
			}
			c, ok := p.Wire().Call("toolu_0001")
			if !ok || !c.Complete || c.Name != "mcp__metaharness__read_file" || string(c.Input) != `{"max_bytes":10,"path":"a<b>.txt"}` || c.Response != "msg_0001" {
				t.Errorf("the just-relayed call: %+v %s (found %v)", c, c.Input, ok)
			}
		})
		send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{"model":"m","messages":[]}`)
		status, _ := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, streamed)
		_ = p.Close()
		if status != 429 {
			t.Fatalf("third turn: %d", status)
		}
		rs := p.Wire().Responses()
		if len(rs) != 3 {
			t.Fatalf("%d responses", len(rs))
		}
		if r := rs[0]; r.ID != "msg_0001" || r.Model != "claude-opus-5-5" || r.End != EndCompleted || r.StopReason != "tool_use" || !r.Stream ||
			len(r.Items) != 2 || r.Items[0].Text != "reading <it> & more" || r.Items[1].Call == nil || r.Items[1].Call.Emitted != 1 {
			t.Fatalf("first response %+v", r)
		}
		if r := rs[1]; r.ID != "msg_0002" || r.Stream || r.End != EndCompleted || r.StopReason != "end_turn" || len(r.Items) != 1 || r.Items[0].Text != "all read" {
			t.Fatalf("the whole JSON answer %+v", r)
		}
		if r := rs[2]; r.Status != 429 || r.End != EndFailed || r.ErrorType != "rate_limit_error" {
			t.Fatalf("the 429 %+v", r)
		}
		// Records are kept as their requests end, which under load need
		// not be the order they were sent in.
		var quota *Quota
		for _, r := range p.Records() {
			if r.UpstreamStatus == 429 {
				quota = r.Quota
			}
		}
		if quota == nil || quota.Type != "rate_limit_error" {
			t.Fatalf("the quota sniffer missed the 429 beside the view: %+v", quota)
		}
		for _, r := range up.Requests() {
			if got := r.Header.Get("Accept-Encoding"); got != "identity" {
				t.Fatalf("the upstream was asked for %q, not identity", got)
			}
		}
		// The same answer without a view, from a fresh server on the same script.
		plain := scripted.NewAnthropicServer(script)
		defer plain.Close()
		q := start(t, plain.URL(), nil)
		if _, got := send(t, newClient(t), q, "POST", "/v1/messages?beta=true", map[string]string{"x-api-key": q.Placeholder()}, streamed); got != body {
			t.Fatalf("the view changed what was relayed:\nwith:    %q\nwithout: %q", body, got)
		}
	})
	t.Run("openai", func(t *testing.T) {
		up := scripted.NewOpenAIServer(scripted.Script{Turns: []scripted.Turn{
			{Text: "looking", ToolCall: &scripted.ToolCall{Name: "read_file", Namespace: "mcp__metaharness", Input: json.RawMessage(`{"path":"x"}`)}},
			{ToolCall: &scripted.ToolCall{Name: "apply_patch", Freeform: "*** Begin Patch\n*** End Patch\n"}},
		}})
		defer up.Close()
		p := start(t, up.URL(), func(c *Config) {
			c.Header, c.ModelAPI, c.AllowPaths = BearerHeader, OpenAIResponses, ModelAPIPaths(OpenAIResponses)
		})
		const streamed = `{"model":"gpt-5.5","stream":true,"input":[]}`
		streamUntil(t, p, "/v1/responses", streamed, `"type":"function_call"`, func() {
			if !p.Wire().Settle(5 * time.Second) {
				t.Error("Settle timed out")
			}
			c, ok := p.Wire().Call("call_0001")
			if !ok || c.Name != "read_file" || c.Namespace != "mcp__metaharness" || string(c.Input) != `{"path":"x"}` || c.InputForm != InputJSON {
				t.Errorf("the just-relayed call: %+v %s (found %v)", c, c.Input, ok)
			}
		})
		streamUntil(t, p, "/v1/responses", streamed, `"type":"custom_tool_call"`, func() {
			p.Wire().Settle(5 * time.Second)
			c, ok := p.Wire().Call("call_0002")
			if !ok || c.InputForm != InputText || string(c.Input) != `"*** Begin Patch\n*** End Patch\n"` {
				t.Errorf("the freeform call: %+v %s (found %v)", c, c.Input, ok)
			}
		})
		_ = p.Close()
		rs := p.Wire().Responses()
		if len(rs) != 2 || rs[0].ID != "resp_0001" || rs[0].End != EndCompleted || rs[0].Model != "gpt-5.5" || len(rs[0].Items) != 2 ||
			rs[0].Items[0].Text != "looking" || rs[1].Items[0].Call.ID != "call_0002" {
			t.Fatalf("responses %+v", rs)
		}
		if st := p.Wire().Stats(); st.Responses != 2 || st.ToolCalls != 2 || st.Overflow != 0 || st.API != OpenAIResponses {
			t.Fatalf("stats %+v", st)
		}
	})
}

// TestWireSettleNotStarved: a stream that keeps relaying ahead of its
// parse does not hold off Settle for another stream's chunk.
func TestWireSettleNotStarved(t *testing.T) {
	w := newWire(AnthropicMessages, DefaultWireLimit)
	sse := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, ContentLength: -1}
	busy := w.begin(1, time.Time{}, "POST", "/v1/messages", sse)
	quiet := w.begin(2, time.Time{}, "POST", "/v1/messages", sse)
	stop := make(chan struct{})
	defer close(stop)
	ping := []byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")
	go func() {
		busy.relay(len(ping))
		for {
			select {
			case <-stop:
				return
			default:
			}
			busy.relay(len(ping)) // always one chunk ahead of what it has read
			busy.write(ping)
		}
	}()
	chunk := wireData(t, "anthropic-tool.sse")
	quiet.relay(len(chunk))
	go func() {
		time.Sleep(5 * time.Millisecond)
		quiet.write(chunk)
	}()
	if !w.Settle(5 * time.Second) {
		t.Fatal("a busy stream starved Settle")
	}
	if _, ok := w.Call("toolu_01T1x1fJ34qAmk2tNTrN7Up6"); !ok {
		t.Fatal("the quiet stream's call is not in the view after Settle")
	}
}
