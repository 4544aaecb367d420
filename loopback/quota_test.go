package loopback

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Vendor answers, as the upstreams give them.
const (
	anthropic429   = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	openAIQuota    = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	openAIRate     = `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	overloaded     = `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	anthropicSSE   = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n"
	responsesSSE   = "event: response.created\ndata: {\"type\":\"response.created\"}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"r\",\"error\":{\"code\":\"insufficient_quota\",\"message\":\"You exceeded your current quota\"}}}\n\n"
	gemini429      = `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED"}}`
	geminiSSE      = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}]}\r\n\r\ndata: " + gemini429 + "\r\n\r\n"
	namelessSSE    = "data: {\"type\":\"response.created\"}\n\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"x\"}\n\n"
	textAboutQuota = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"handle rate_limit_error and insufficient_quota\\nevent: error\\ndata: {\\\"type\\\":\\\"error\\\",\\\"code\\\":\\\"insufficient_quota\\\"}\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
)

// TestQuotaRecorded: the upstream's quota answers, plain or inside a 200
// event stream, are recorded as a Quota with the vendor's type and a
// well-formed Retry-After, and counted; the client gets the answer
// unchanged. An overload, a 5xx, and model text that merely mentions the
// words are not quota answers.
func TestQuotaRecorded(t *testing.T) {
	cases := []struct {
		name, body, contentType, retryAfter string
		status                              int
		want                                *Quota
	}{
		{"anthropic 429", anthropic429, "application/json", "30", 429, &Quota{Status: 429, Type: "rate_limit_error", RetryAfter: "30"}},
		{"openai insufficient_quota", openAIQuota, "application/json", "", 429, &Quota{Status: 429, Type: "insufficient_quota"}},
		{"openai rate limit", openAIRate, "application/json", "Wed, 21 Oct 2015 07:28:00 GMT", 429, &Quota{Status: 429, Type: "rate_limit_exceeded", RetryAfter: "Wed, 21 Oct 2015 07:28:00 GMT"}},
		{"a bare 429", "", "", "soon; x-api-key=1", 429, &Quota{Status: 429}},
		{"quota type on a 400", openAIQuota, "application/json", "", 400, &Quota{Status: 400, Type: "insufficient_quota"}},
		{"overloaded", overloaded, "application/json", "5", 529, nil},
		{"server error", `{"error":{"type":"api_error"}}`, "application/json", "", 500, nil},
		{"anthropic stream error", anthropicSSE, "text/event-stream", "", 200, &Quota{Status: 200, Type: "rate_limit_error", InStream: true}},
		{"responses failed", responsesSSE, "text/event-stream; charset=utf-8", "", 200, &Quota{Status: 200, Type: "insufficient_quota", InStream: true}},
		{"stream without event names", namelessSSE, "text/event-stream", "", 200, &Quota{Status: 200, Type: "rate_limit_exceeded", InStream: true}},
		{"model text mentioning quota", textAboutQuota, "text/event-stream", "", 200, nil},
		{"json success mentioning quota", openAIQuota, "application/json", "", 200, nil},
		{"gemini resource exhausted", gemini429, "application/json", "", 429, &Quota{Status: 429, Type: "RESOURCE_EXHAUSTED"}},
		{"gemini stream error", geminiSSE, "text/event-stream", "", 200, &Quota{Status: 200, Type: "RESOURCE_EXHAUSTED", InStream: true}},
	}
	for _, c := range cases {
		api := AnthropicMessages
		switch {
		case strings.Contains(c.body, "response."):
			api = OpenAIResponses
		case strings.Contains(c.body, "RESOURCE_EXHAUSTED"):
			api = GeminiAPI
		}
		// With a wire view, the view reads a stream's error events in
		// the sniffer's place: the same quota either way.
		for _, view := range []string{"", api} {
			t.Run(c.name+"/view "+view, func(t *testing.T) {
				up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if c.contentType != "" {
						w.Header().Set("Content-Type", c.contentType)
					}
					if c.retryAfter != "" {
						w.Header().Set("Retry-After", c.retryAfter)
					}
					w.WriteHeader(c.status)
					// Byte by byte, so that every line is split across chunks.
					for i := range len(c.body) {
						_, _ = w.Write([]byte{c.body[i]})
						w.(http.Flusher).Flush()
					}
				}))
				defer up.Close()
				p := start(t, up.URL, func(cfg *Config) { cfg.ModelAPI = view })
				status, body := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{}`)
				if status != c.status || body != c.body {
					t.Fatalf("the client got %d %q, want the upstream's answer unchanged", status, body)
				}
				_ = p.Close()
				recs := p.Records()
				if len(recs) != 1 {
					t.Fatalf("%d records", len(recs))
				}
				got := recs[0].Quota
				if d := cmp.Diff(c.want, got); d != "" {
					t.Fatalf("quota (-want +got):\n%s", d)
				}
				if n := p.Counters().UpstreamQuota; (n == 1) != (c.want != nil) {
					t.Fatalf("upstream_quota counter %d", n)
				}
			})
		}
	}
}

// TestQuotaPhrase: the words a fleet's usage-limit rule looks for.
func TestQuotaPhrase(t *testing.T) {
	for q, want := range map[Quota]string{
		{Status: 429, Type: "rate_limit_error", RetryAfter: "30"}: "429 Too Many Requests (rate_limit_error, retry after 30)",
		{Status: 429}: "429 Too Many Requests",
		{Status: 200, Type: "insufficient_quota", InStream: true}: "an error event in its 200 stream (insufficient_quota)",
	} {
		if got := QuotaPhrase(q); got != want {
			t.Errorf("%+v: %q, want %q", q, got, want)
		}
	}
}

// FuzzQuotaSniffer: whatever an upstream streams, however it is cut into
// chunks, the sniffer never panics, holds no more than it may, and finds
// the same thing as when the body arrives whole.
func FuzzQuotaSniffer(f *testing.F) {
	for _, body := range []string{anthropicSSE, responsesSSE, namelessSSE, textAboutQuota, "event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\"}}", "data:\n\n\n"} {
		f.Add([]byte(body), uint8(7), true)
	}
	f.Add([]byte(anthropic429), uint8(1), false)
	f.Add([]byte(openAIQuota), uint8(200), false)
	f.Fuzz(func(t *testing.T, body []byte, cut uint8, stream bool) {
		whole := &sniffer{stream: stream}
		whole.write(body)
		pieces := &sniffer{stream: stream}
		step := int(cut) + 1
		for i := 0; i < len(body); i += step {
			pieces.write(body[i:min(i+step, len(body))])
			if len(pieces.lines.buf) > maxSniff || len(pieces.data) > maxSniff || len(pieces.body) > maxSniff {
				t.Fatalf("the sniffer holds %d/%d/%d bytes", len(pieces.lines.buf), len(pieces.data), len(pieces.body))
			}
		}
		a, b := whole.quota(429, http.Header{}), pieces.quota(429, http.Header{})
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("whole %+v, in pieces of %d %+v", a, step, b)
		}
		if a != nil && a.Type != "" && !bytes.Contains(body, []byte(a.Type)) {
			t.Fatalf("found %q, which the body does not hold", a.Type)
		}
		if a != nil && a.Type != "" && !strings.Contains(strings.Join(QuotaTypes, " "), a.Type) {
			t.Fatalf("found %q, not a quota type", a.Type)
		}
	})
}
