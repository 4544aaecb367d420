package loopback

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// upstreamLog is an upstream that answers 200 and keeps each request line
// and header block exactly as it arrived.
type upstreamLog struct {
	mu   sync.Mutex
	seen []string
}

func (u *upstreamLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s\n", r.Method, r.RequestURI)
	_ = r.Header.Write(&b)
	u.mu.Lock()
	u.seen = append(u.seen, b.String())
	u.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (u *upstreamLog) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// rawRequest writes one request with target exactly as given (no client
// library cleans it) and returns the status code.
func rawRequest(t *testing.T, p *Proxy, target string, hdr map[string]string) int {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(p.BaseURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n", target)
	for k, v := range hdr {
		fmt.Fprintf(c, "%s: %s\r\n", k, v)
	}
	fmt.Fprint(c, "\r\n{}")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRefusesDotSegments: a path with a "." or ".." segment, however it is
// spelt, could climb out of the upstream's path prefix with the real token
// attached; it is answered 400, recorded, and never forwarded.
func TestRefusesDotSegments(t *testing.T) {
	up := &upstreamLog{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	p := start(t, srv.URL+"/s/abc", nil)
	hdr := map[string]string{"x-api-key": p.Placeholder()}
	for _, target := range []string{
		"/../admin",
		"/v1/../../admin",
		"/v1/messages/..",
		"/./v1/messages",
		"/%2e%2e/admin",
		"/v1/%2E%2E%2Fadmin",
		"/v1/..%2fadmin",
		`/v1/..\admin`,
		"/%252e%252e/admin",
		"/v1/%252E%252e%252fadmin",
		"/v1/%25252e%25252e/admin",
		"/v1/..;/admin",
		"/v1/.;x/messages",
		"/v1/%2e%2e;jsessionid=1/admin",
		"/v1/%252e%252e%253bx/admin",
		"/v1/%25" + strings.Repeat("25", 6) + "2e", // deeper than the bound
	} {
		if got := rawRequest(t, p, target, hdr); got != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", target, got)
		}
	}
	if got := rawRequest(t, p, "/v1/messages..x/.hidden", hdr); got != http.StatusOK {
		t.Errorf("a segment that merely holds dots: status %d, want 200", got)
	}
	if got := rawRequest(t, p, "/v1/a;..", hdr); got != http.StatusOK {
		t.Errorf("dots in a ;parameter: status %d, want 200", got)
	}
	_ = p.Close()
	if seen := up.requests(); len(seen) != 2 || !strings.HasPrefix(seen[0], "POST /s/abc/v1/messages..x/.hidden\n") {
		t.Fatalf("the upstream saw %q, want only the two clean paths", seen)
	}
	var refused int
	for _, r := range p.Records() {
		if r.Refused == RefusedPathDotSegment {
			refused++
		}
	}
	if c := p.Counters(); refused != 16 || c.RefusedRequest != 16 || c.Forwarded != 2 {
		t.Fatalf("%d records refused %s, counters %+v", refused, RefusedPathDotSegment, c)
	}
}

// TestPlaceholderNeverForwarded: the placeholder in the query string or
// the path (plain or percent-encoded) is refused, never forwarded; in any
// header but the credential it is dropped; in a held body it is replaced.
// The record says where.
func TestPlaceholderNeverForwarded(t *testing.T) {
	up := &upstreamLog{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	p := start(t, srv.URL, nil)
	ph := p.Placeholder()
	enc := ""
	for _, b := range []byte(ph) {
		enc += fmt.Sprintf("%%%02X", b)
	}
	hdr := map[string]string{"x-api-key": ph}
	for _, target := range []string{
		"/v1/messages?key=" + ph,
		"/v1/messages?beta=true&k=" + enc,
		"/v1/" + ph + "/messages",
		"/v1/" + enc,
	} {
		if got := rawRequest(t, p, target, hdr); got != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", strings.ReplaceAll(target, ph, "PH"), got)
		}
	}
	if got := rawRequest(t, p, "/v1/messages?beta=true", map[string]string{"x-api-key": ph, "X-Echo": "a " + ph}); got != http.StatusOK {
		t.Errorf("placeholder in another header: status %d, want 200 with the header dropped", got)
	}
	_ = p.Close()
	seen := up.requests()
	if len(seen) != 1 {
		t.Fatalf("the upstream saw %d requests, want 1", len(seen))
	}
	if strings.Contains(seen[0], ph) || strings.Contains(strings.ToLower(seen[0]), "x-echo") {
		t.Fatalf("the placeholder (or the header carrying it) reached the upstream:\n%s", strings.ReplaceAll(seen[0], ph, "PH"))
	}
	var refused int
	var dropped []string
	for _, r := range p.Records() {
		if r.Refused == RefusedPlaceholderInURL {
			refused++
		}
		dropped = append(dropped, r.Scrubbed...)
	}
	if refused != 4 || strings.Join(dropped, ",") != "header X-Echo" {
		t.Fatalf("%d refused %s, scrubbed %q", refused, RefusedPlaceholderInURL, dropped)
	}
}

// TestPlaceholderInBodyReplaced: a held body that quotes the placeholder
// (a model that ran env, say) goes upstream with it replaced.
func TestPlaceholderInBodyReplaced(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		_, _ = bufio.NewReader(r.Body).WriteTo(&b)
		got = b.String()
	}))
	defer srv.Close()
	p := start(t, srv.URL, nil)
	ph := p.Placeholder()
	status, _ := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": ph}, `{"text":"ANTHROPIC_AUTH_TOKEN=`+ph+`"}`)
	_ = p.Close()
	if status != 200 || strings.Contains(got, ph) || got != `{"text":"ANTHROPIC_AUTH_TOKEN=[redacted]"}` {
		t.Fatalf("status %d, upstream body %q", status, strings.ReplaceAll(got, ph, "PH"))
	}
	if r := p.Records()[0]; strings.Join(r.Scrubbed, ",") != "body" {
		t.Fatalf("record %+v", r)
	}
}

// TestAllowPaths: with an allowlist, the key goes only with the requests
// on it (any query): every other method or path, an encoding of an
// allowed one included, is answered 403, recorded and counted, and never
// forwarded.
func TestAllowPaths(t *testing.T) {
	up := &upstreamLog{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	p := start(t, srv.URL+"/s/abc", func(c *Config) { c.AllowPaths = ModelAPIPaths(AnthropicMessages) })
	hdr := map[string]string{"x-api-key": p.Placeholder()}
	c := newClient(t)
	if status, _ := send(t, c, p, "POST", "/v1/messages?beta=true", hdr, `{}`); status != http.StatusOK {
		t.Fatalf("the allowed request: status %d", status)
	}
	refused := []struct{ method, target string }{
		{"GET", "/v1/files"}, {"GET", "/v1/models"}, {"PUT", "/v1/organizations/x"}, {"GET", "/admin"},
		{"GET", "/v1/messages"}, {"POST", "/v1/messages/"}, {"POST", "/v1/messages/count_tokens"},
		{"POST", "/v1/%6dessages"}, {"POST", "//v1/messages"}, {"POST", "/V1/messages"}, {"post", "/v1/messages"},
	}
	for _, r := range refused {
		conn, err := net.Dial("tcp", strings.TrimPrefix(p.BaseURL(), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", r.method, r.target, p.Placeholder())
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.target, err)
		}
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(b.String(), "metaharness loopback: "+r.method+" ") ||
			!strings.Contains(b.String(), "(allowed: POST /v1/messages); it was not forwarded") || !strings.Contains(b.String(), `"type":"permission_error"`) {
			t.Errorf("%s %s: status %d body %s", r.method, r.target, resp.StatusCode, b.String())
		}
	}
	_ = p.Close()
	if seen := up.requests(); len(seen) != 1 || !strings.HasPrefix(seen[0], "POST /s/abc/v1/messages?beta=true\n") {
		t.Fatalf("the upstream saw %q", seen)
	}
	var n int
	for _, r := range p.Records() {
		if r.Refused == RefusedPathNotAllowed && r.Status == http.StatusForbidden && r.UpstreamStatus == 0 {
			n++
		}
	}
	if c := p.Counters(); n != len(refused) || c.RefusedRequest != uint64(len(refused)) || c.Forwarded != 1 {
		t.Fatalf("%d records refused %s, counters %+v", n, RefusedPathNotAllowed, c)
	}
}
