package loopback

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// TestWireGeminiBind: the calls the Gemini API gave no id are findable
// once the client names them, in the order the model made them, each
// once; a call that came with an id is found under the id the client
// answers with (name__id) without binding.
func TestWireGeminiBind(t *testing.T) {
	w := feed(GeminiAPI, 200, true, true, wireData(t, "gemini-tool.sse"))
	if _, ok := w.Call("read_file__call-7"); !ok {
		t.Fatal("the call with an API id is not found under name__id")
	}
	byName := func(name string) func(Call) bool { return func(c Call) bool { return c.Name == name } }
	if w.Bind("", byName("list_directory")) {
		t.Fatal("an empty id was bound")
	}
	if !w.Bind("list_directory__list_directory_1_2", byName("list_directory")) {
		t.Fatal("the id-less list_directory call was not bound")
	}
	if w.Bind("list_directory__again", byName("list_directory")) {
		t.Fatal("a call was bound twice")
	}
	if w.Bind("read_file__other", byName("read_file")) {
		t.Fatal("a call that has an id was bound")
	}
	c, ok := w.Call("list_directory__list_directory_1_2")
	if !ok || c.Name != "list_directory" || c.Response != "Xf3SaO7gMpqz_uMP0NXMqQs" || c.Emitted != 1 || string(c.Input) != `{}` {
		t.Fatalf("bound call %+v %s (found %v)", c, c.Input, ok)
	}
	items := only(t, w).Items
	if got := items[len(items)-1].Call.ID; got != "list_directory__list_directory_1_2" {
		t.Fatalf("the snapshot shows the bound call as %q", got)
	}
	if items[3].Call.ID != "" {
		t.Fatalf("an unbound call shows an id: %+v", items[3].Call)
	}
}

// TestWireGeminiThroughProxy: Gemini CLI's requests go upstream with the
// real key in x-goog-api-key (the placeholder never), the model's answer
// is read into the view as it streams, the router's JSON side call too;
// a key in the query, a method or path the API does not take, and a
// model name that spans segments are refused and never forwarded. The
// view reads what each request offered the model (Response.Asked).
func TestWireGeminiThroughProxy(t *testing.T) {
	up := scripted.NewGeminiServer(scripted.Script{Turns: []scripted.Turn{
		{Text: "reading it", ToolCall: &scripted.ToolCall{Name: "read_file", Input: json.RawMessage(`{"file_path":"a.txt"}`)}},
	}})
	defer up.Close()
	p := start(t, up.URL(), func(c *Config) {
		c.Header, c.ModelAPI, c.AllowPaths = GoogAPIKeyHeader, GeminiAPI, ModelAPIPaths(GeminiAPI)
	})
	key := map[string]string{"x-goog-api-key": p.Placeholder()}
	side := `{"contents":[],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object","properties":{"complexity_score":{"type":"integer"}}}}}`
	if status, body := send(t, newClient(t), p, "POST", "/v1beta/models/gemini-3.5-flash-lite:generateContent", key, side); status != 200 || !strings.Contains(body, `complexity_score`) {
		t.Fatalf("side call: %d %s", status, body)
	}
	turn := `{"contents":[{"role":"user","parts":[{"text":"<session_context>\n- **Workspace Directories:**\n  - /w\n"},{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_file"},{"name":"mcp_metaharness_x"}]}]}`
	if status, body := send(t, newClient(t), p, "POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", key, turn); status != 200 || !strings.Contains(body, "functionCall") {
		t.Fatalf("turn: %d %s", status, body)
	}
	for _, c := range []struct {
		method, path string
		status       int
		refused      string
	}{
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=" + realToken, http.StatusBadRequest, RefusedKeyInQuery},
		{"POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?KEY=x", http.StatusBadRequest, RefusedKeyInQuery},
		{"POST", "/v1beta/models/gemini-2.5-flash:countTokens", http.StatusForbidden, RefusedPathNotAllowed},
		{"GET", "/v1beta/models", http.StatusForbidden, RefusedPathNotAllowed},
		{"POST", "/v1beta/models/a/b:generateContent", http.StatusForbidden, RefusedPathNotAllowed},
		{"POST", "/v1beta/models/:generateContent", http.StatusForbidden, RefusedPathNotAllowed},
	} {
		if status, body := send(t, newClient(t), p, c.method, c.path, key, `{}`); status != c.status {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, status, body, c.status)
		}
		recs := p.Records()
		if r := recs[len(recs)-1]; r.Refused != c.refused {
			t.Errorf("%s %s: recorded %+v, want refused %s", c.method, c.path, r, c.refused)
		}
	}
	_ = p.Close()
	reqs := up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests reached the upstream, want the side call and the turn", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("X-Goog-Api-Key") != realToken || r.Header.Get("X-Api-Key") != "" || r.Header.Get("Authorization") != "" {
			t.Errorf("the upstream saw x-goog-api-key %q, x-api-key %q, authorization %q", r.Header.Get("X-Goog-Api-Key"), r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
		}
	}
	rs := p.Wire().Responses()
	if len(rs) != 2 || rs[0].Stream || rs[0].End != EndCompleted || len(rs[0].Items) != 1 || !strings.Contains(rs[0].Items[0].Text, "complexity_score") {
		t.Fatalf("the side call as the view read it: %+v", rs)
	}
	r := rs[1]
	if !r.Stream || r.End != EndCompleted || r.StopReason != "STOP" || r.ID != "resp_0002" || len(r.Items) != 2 ||
		r.Items[0].Text != "reading it" || r.Items[1].Call == nil || r.Items[1].Call.Name != "read_file" || string(r.Items[1].Call.Input) != `{"file_path":"a.txt"}` {
		t.Fatalf("the turn as the view read it: %+v", r)
	}
	if a := r.Asked; a == nil || strings.Join(a.Tools, ",") != "read_file,mcp_metaharness_x" || !strings.Contains(a.Context, "  - /w\n") || strings.Contains(a.Context, "go") {
		t.Fatalf("the turn's request as the view read it: %+v", r.Asked)
	}
	if a := rs[0].Asked; a == nil || len(a.Tools) != 0 {
		t.Fatalf("the side call's request as the view read it: %+v", a)
	}
}

// TestAllowPathWildcard: a * in an allowlisted path stands for one
// segment's characters, never a /, and never nothing.
func TestAllowPathWildcard(t *testing.T) {
	rules, err := parseAllowPaths([]string{"POST /v1beta/models/*:generateContent", "GET /a/b*c/d"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"/v1beta/models/gemini-2.5-flash:generateContent": true,
		"/v1beta/models/m:generateContent":                true,
		"/v1beta/models/:generateContent":                 false,
		"/v1beta/models/a/b:generateContent":              false,
		"/v1beta/models/m:generateContentX":               false,
		"/v1beta/models/m:generateContent/x":              false,
	} {
		if got := rules[0].matches(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	if !rules[1].matches("/a/bxyzc/d") || rules[1].matches("/a/bc/d") {
		t.Error("a * inside a segment")
	}
	if _, err := parseAllowPaths([]string{"POST /a/*x*"}); err == nil {
		t.Error("two * in a segment were taken")
	}
}
