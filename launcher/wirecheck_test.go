package launcher

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/record"
)

// wired is a real loopback proxy in front of the scripted Anthropic model,
// with the model's two answers (a Bash call, then DONE) already relayed to
// a client, as a vendor would have them.
func wired(t *testing.T) *loopback.Proxy {
	t.Helper()
	up := scripted.NewAnthropicServer(scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}},
		{Text: "DONE"},
	}})
	t.Cleanup(up.Close)
	p, err := loopback.New(loopback.Config{
		Upstream: up.URL(), Token: loopback.TokenSource{Env: "K"}, ModelAPI: loopback.AnthropicMessages,
		LookupEnv: func(string) (string, bool) { return "sk-test", true },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	for range 2 {
		req, _ := http.NewRequest("POST", p.BaseURL()+"/v1/messages", strings.NewReader(`{"model":"m","stream":true,"max_tokens":9,"messages":[{"role":"user","content":"go"}],"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`))
		req.Header.Set("X-Api-Key", p.Placeholder())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return p
}

// wireCall is the one tool call the model made.
func wireCall(t *testing.T, p *loopback.Proxy) loopback.Call {
	t.Helper()
	for _, r := range kind.NewWireView(p.Wire()).Responses() {
		for _, it := range r.Items {
			if it.Call != nil {
				return *it.Call
			}
		}
	}
	t.Fatal("the wire holds no call")
	return loopback.Call{}
}

// TestVerifyAnswersOnlyTheModelsCalls: a decision request is let through
// for the call the model made, once; a second request for it, and one for
// a call the model never made, are denied at once and recorded apart.
func TestVerifyAnswersOnlyTheModelsCalls(t *testing.T) {
	p := wired(t)
	call := wireCall(t, p)
	c := newWireCheck(p, nil, &kind.Plan{})
	if d, w := c.verify(decide.Request{Seam: record.SeamHook, CallID: call.ID, Tool: "Bash"}); d != nil || w != nil {
		t.Fatalf("the model's own call was refused: %v %v", d, w)
	}
	for _, id := range []string{call.ID, "toolu_forged"} {
		d, w := c.verify(decide.Request{Seam: record.SeamHook, CallID: id, Tool: "Bash"})
		if d == nil || d.Decision != record.Deny || w == nil || w.Code != attest.DecisionNotOnWire || !strings.Contains(w.Message, id) {
			t.Errorf("request for %s: %v %v, want a deny and a %s warning naming it", id, d, w, attest.DecisionNotOnWire)
		}
	}
	if n := c.requestsDenied(); n != 2 {
		t.Errorf("%d requests counted as not on the wire, want 2", n)
	}
	if got := c.undecided(); len(got) != 0 {
		t.Errorf("the decided call was reported undecided: %v", got)
	}
	if got := newWireCheck(p, nil, &kind.Plan{}).undecided(); len(got) != 1 || got[0].Code != attest.CallNotDecided {
		t.Errorf("a call no seam decided: %v, want one %s", got, attest.CallNotDecided)
	}
}

// lineServices is a session's view of the run for RecordCheck: the wire,
// and what was reported not on it.
type lineServices struct {
	kind.Services
	wire     *kind.WireView
	reported []string
}

func (s *lineServices) Wire() *kind.WireView  { return s.wire }
func (s *lineServices) NotOnWire(what string) { s.reported = append(s.reported, what) }

// TestRecordCheck: the vendor's lines stand where the wire holds them; a
// text, a call and a result the model never made are reported and not
// recorded; a final answer the model never wrote is the wire's instead.
func TestRecordCheck(t *testing.T) {
	p := wired(t)
	call := wireCall(t, p)
	rs := kind.NewWireView(p.Wire()).Responses()
	msg := rs[1].ID
	svc := &lineServices{wire: kind.NewWireView(p.Wire())}
	last := func(rs []loopback.Response) *string { t := rs[len(rs)-1].Items[0].Text; return &t }
	c := kind.NewRecordCheck("the vendor", svc, func(loopback.Call, *record.ToolRequested) error { return nil }, last, "VENDOR_TEXT")
	sp := func(s string) *string { return &s }
	f := false
	for _, tc := range []struct {
		ev   record.Event
		want bool
	}{
		{&record.Text{Text: "DONE", RequestID: &msg}, true},
		{&record.Text{Text: "rm -rf / is fine", RequestID: &msg}, false},
		{&record.Text{Text: "DONE", RequestID: sp("msg_other")}, false},
		{&record.ToolRequested{CallID: call.ID, Name: "Bash"}, true},
		{&record.ToolRequested{CallID: "toolu_forged", Name: "Write"}, false},
		{&record.ToolResult{CallID: "toolu_forged", IsError: &f}, false},
		{&record.ToolResult{CallID: call.ID, IsError: &f}, true},
		{&record.Warning{Code: "VENDOR_TEXT", Message: "API Error: 500"}, false},
		{&record.Warning{Code: "OTHER", Message: "x"}, true},
	} {
		if got := c.Holds(tc.ev); got != tc.want {
			t.Errorf("%s %+v: holds %t, want %t", tc.ev.EventName(), tc.ev, got, tc.want)
		}
	}
	if len(svc.reported) != 5 {
		t.Errorf("%d reports, want 5: %q", len(svc.reported), svc.reported)
	}
	end := c.Final(&record.SessionEnded{FinalAnswer: &record.FinalAnswer{Text: "the agent's words"}})
	if end.FinalAnswer == nil || end.FinalAnswer.Text != "DONE" {
		t.Errorf("final answer %+v, want the wire's DONE", end.FinalAnswer)
	}
	if end := c.Final(&record.SessionEnded{FinalAnswer: &record.FinalAnswer{Text: "DONE"}}); end.FinalAnswer.Text != "DONE" || len(svc.reported) != 6 {
		t.Errorf("the model's own answer was changed or reported: %+v, %d reports", end.FinalAnswer, len(svc.reported))
	}
}
