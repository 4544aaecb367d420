package loopback

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/exit"
)

// TestSwapsPlaceholderForToken: the upstream sees the real token in the
// header it expects and never the placeholder; path, query and end-to-end
// headers pass unchanged; the streamed answer arrives whole.
func TestSwapsPlaceholderForToken(t *testing.T) {
	t.Run("anthropic x-api-key", func(t *testing.T) {
		up := scripted.NewAnthropicServer(scripted.Texts("hello"))
		defer up.Close()
		p := start(t, up.URL(), nil)
		// Claude Code holds ANTHROPIC_AUTH_TOKEN, so it sends a bearer.
		status, body := send(t, newClient(t), p, "POST", "/v1/messages?beta=true",
			map[string]string{"Authorization": "Bearer " + p.Placeholder(), "anthropic-version": "2023-06-01"},
			`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		if status != 200 || !strings.Contains(body, `"text":"hello"`) || !strings.Contains(body, "event: message_stop") {
			t.Fatalf("status %d body %s", status, body)
		}
		r := up.Requests()[0]
		if r.Header.Get("X-Api-Key") != realToken || r.Header.Get("Authorization") != "" {
			t.Fatalf("upstream credential headers: x-api-key %q authorization %q", r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
		}
		if r.Path != "/v1/messages" || r.RawQuery != "beta=true" || r.Header.Get("Anthropic-Version") != "2023-06-01" {
			t.Fatalf("upstream saw %s?%s %v", r.Path, r.RawQuery, r.Header)
		}
	})
	t.Run("openai bearer", func(t *testing.T) {
		up := scripted.NewOpenAIServer(scripted.Texts("hi"))
		defer up.Close()
		p := start(t, up.URL(), func(c *Config) { c.Header = BearerHeader })
		status, body := send(t, newClient(t), p, "POST", "/v1/responses",
			map[string]string{"Authorization": "Bearer " + p.Placeholder()}, `{"model":"x","stream":true,"input":[]}`)
		if status != 200 || !strings.Contains(body, "response.completed") {
			t.Fatalf("status %d body %s", status, body)
		}
		r := up.Requests()[0]
		if r.Header.Get("Authorization") != "Bearer "+realToken || r.Header.Get("X-Api-Key") != "" {
			t.Fatalf("upstream credential headers: %v", r.Header)
		}
	})
	t.Run("path prefix kept", func(t *testing.T) {
		up := scripted.NewAnthropicServer(scripted.Texts("x"))
		defer up.Close()
		p := start(t, up.URL()+"/s/abc/", nil)
		status, _ := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{}`)
		if got := up.Requests()[0].Path; status != 200 || got != "/s/abc/v1/messages" {
			t.Fatalf("status %d, upstream path %q", status, got)
		}
	})
}

// TestRefusesWithoutPlaceholder: no credential, a wrong one, or the right
// one beside a wrong one is answered 401 and never forwarded.
func TestRefusesWithoutPlaceholder(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("x"))
	defer up.Close()
	p := start(t, up.URL(), nil)
	c := newClient(t)
	cases := []struct {
		name string
		hdr  map[string]string
		want string
	}{
		{"none", nil, RefusedNoPlaceholder},
		{"wrong key", map[string]string{"x-api-key": "sk-guess"}, RefusedWrongPlaceholder},
		{"the real token itself", map[string]string{"x-api-key": realToken}, RefusedWrongPlaceholder},
		{"placeholder prefix", map[string]string{"x-api-key": p.Placeholder()[:len(p.Placeholder())-1]}, RefusedWrongPlaceholder},
		{"basic auth", map[string]string{"Authorization": "Basic " + p.Placeholder()}, RefusedWrongPlaceholder},
		{"no auth scheme", map[string]string{"Authorization": p.Placeholder()}, RefusedWrongPlaceholder},
		{"right beside wrong", map[string]string{"x-api-key": p.Placeholder(), "Authorization": "Bearer nope"}, RefusedWrongPlaceholder},
	}
	for _, tc := range cases {
		status, body := send(t, c, p, "POST", "/v1/messages", tc.hdr, `{}`)
		if status != 401 || !strings.Contains(body, "metaharness loopback") || !strings.Contains(body, `"type":"authentication_error"`) {
			t.Errorf("%s: status %d body %s", tc.name, status, body)
		}
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("%d refused requests reached the upstream", n)
	}
	_ = p.Close() // a request is recorded when its handler ends, which may be after the client has the answer
	recs := p.Records()
	for i, tc := range cases {
		if recs[i].Refused != tc.want || recs[i].Status != 401 || recs[i].UpstreamStatus != 0 {
			t.Errorf("%s: record %+v, want refused %s", tc.name, recs[i], tc.want)
		}
	}
	if c := p.Counters(); c.RefusedAuth != uint64(len(cases)) || c.Forwarded != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestStripsConnectionHeaders: hop-by-hop headers, the headers Connection
// names, and any header smuggling the placeholder stop at the proxy. A raw
// request is written so that no client library tidies it first.
func TestStripsConnectionHeaders(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("x"))
	defer up.Close()
	p := start(t, up.URL(), nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.BaseURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"model":"m"}`
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\n"+
		"Keep-Alive: timeout=5\r\nProxy-Authorization: Basic eA==\r\nProxy-Connection: keep-alive\r\nTE: trailers\r\nUpgrade: h2c\r\n"+
		"X-Custom: prefix-%s\r\nX-Kept: yes\r\nContent-Length: %d\r\n\r\n%s", p.Placeholder(), p.Placeholder(), len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	h := up.Requests()[0].Header
	for _, k := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Upgrade", "X-Custom"} {
		if v, ok := h[k]; ok {
			t.Errorf("upstream got %s: %v", k, v)
		}
	}
	if h.Get("X-Kept") != "yes" {
		t.Errorf("an end-to-end header was dropped: %v", h)
	}
	if strings.Contains(fmt.Sprint(h), p.Placeholder()) {
		t.Errorf("the placeholder reached the upstream: %v", h)
	}
}

// TestStreamsEachChunk: the second SSE event is only written after the
// client has read the first through the proxy, so a proxy that buffered
// would stall here (until the backstop fails the test).
func TestStreamsEachChunk(t *testing.T) {
	firstSeen := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: one\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-firstSeen:
		case <-time.After(10 * time.Second):
			return
		}
		fmt.Fprint(w, "event: two\ndata: {}\n\n")
	}))
	defer up.Close()
	p := start(t, up.URL, nil)
	req, _ := http.NewRequest("POST", p.BaseURL()+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", p.Placeholder())
	resp, err := newClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "event: one\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	close(firstSeen)
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "event: two") {
		t.Fatalf("the second event did not arrive: %q", rest)
	}
}

// TestReusesUpstreamConnections: twenty sequential requests open one
// upstream connection.
func TestReusesUpstreamConnections(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `{"ok":true}`)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	p := start(t, up.URL, nil)
	c := newClient(t)
	for i := 0; i < 20; i++ {
		if status, _ := send(t, c, p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{"i":1}`); status != 200 {
			t.Fatalf("request %d: status %d", i, status)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("the upstream saw %d connections for 20 sequential requests, want 1", n)
	}
}

// TestVerifiesUpstreamTLS: an upstream whose certificate nobody trusts is
// not talked to (502); trusting the test CA makes it work.
func TestVerifiesUpstreamTLS(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("secure"), scripted.WithTLS())
	defer up.Close()
	hdr := func(p *Proxy) map[string]string { return map[string]string{"x-api-key": p.Placeholder()} }

	untrusted := start(t, up.URL(), nil)
	status, body := send(t, newClient(t), untrusted, "POST", "/v1/messages", hdr(untrusted), `{}`)
	if status != 502 || !strings.Contains(body, "metaharness loopback") || !strings.Contains(body, "certificate") {
		t.Fatalf("untrusted upstream: status %d body %s", status, body)
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("a request reached an unverified upstream")
	}
	_ = untrusted.Close()
	if r := untrusted.Records()[0]; !strings.HasPrefix(r.Error, ErrUpstreamUnreachable) {
		t.Fatalf("record %+v", r)
	}

	trusted := start(t, up.URL(), func(c *Config) { c.RootCAs = up.CertPool() })
	status, body = send(t, newClient(t), trusted, "POST", "/v1/messages", hdr(trusted), `{"stream":true}`)
	if status != 200 || !strings.Contains(body, "secure") {
		t.Fatalf("trusted upstream: status %d body %s", status, body)
	}
}

// TestUnreachableUpstream: 502 naming metaharness, recorded.
func TestUnreachableUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	p := start(t, dead, nil)
	status, body := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{}`)
	var e struct {
		Type  string
		Error struct{ Type, Code, Message string }
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != 502 || e.Error.Type != "api_error" ||
		!strings.Contains(e.Error.Message, "metaharness loopback: the upstream "+strings.TrimPrefix(dead, "http://")+" could not be reached") {
		t.Fatalf("status %d body %s", status, body)
	}
	_ = p.Close()
	if c := p.Counters(); c.UpstreamErrors != 1 || c.Forwarded != 0 {
		t.Fatalf("counters %+v", c)
	}
}

// TestRetriesOnceAfter401WithNewToken: the upstream takes only the new
// token; the proxy started with the old one re-reads the file on the 401
// and retries once. When the file has not changed, the 401 is relayed.
func TestRetriesOnceAfter401WithNewToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("old-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := scripted.NewAnthropicServer(scripted.Texts("after rotation"), scripted.RequireKey("new-token"))
	defer up.Close()
	p := start(t, up.URL(), func(c *Config) { c.Token = TokenSource{File: file} })
	c := newClient(t)
	hdr := map[string]string{"x-api-key": p.Placeholder()}

	// Unchanged: relayed.
	status, body := send(t, c, p, "POST", "/v1/messages", hdr, `{"stream":true}`)
	if status != 401 || !strings.Contains(body, "invalid x-api-key") {
		t.Fatalf("unchanged token: status %d body %s", status, body)
	}
	// Rotated: retried once.
	if err := os.WriteFile(file, []byte("new-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, body = send(t, c, p, "POST", "/v1/messages", hdr, `{"stream":true}`)
	if status != 200 || !strings.Contains(body, "after rotation") {
		t.Fatalf("rotated token: status %d body %s", status, body)
	}
	var keys []string
	for _, r := range up.Requests() {
		keys = append(keys, r.Credential())
	}
	if strings.Join(keys, ",") != "old-token,old-token,new-token" {
		t.Fatalf("upstream saw keys %v", keys)
	}
	_ = p.Close()
	recs := p.Records()
	if recs[0].Refresh != RefreshUnchanged || recs[1].Refresh != RefreshRetried || recs[1].Status != 200 {
		t.Fatalf("records %+v", recs)
	}
	if c := p.Counters(); c.RefreshRetried != 1 || c.RefreshFailed != 1 {
		t.Fatalf("counters %+v", c)
	}
	// The file vanishing is recorded and the 401 relayed; nothing is retried.
	up2 := scripted.NewAnthropicServer(scripted.Texts("x"), scripted.RequireKey("other"))
	defer up2.Close()
	p2 := start(t, up2.URL(), func(c *Config) { c.Token = TokenSource{File: file} })
	_ = os.Remove(file)
	status, _ = send(t, c, p2, "POST", "/v1/messages", map[string]string{"x-api-key": p2.Placeholder()}, `{}`)
	_ = p2.Close()
	if r := p2.Records()[0]; status != 401 || r.Refresh != RefreshFailed || !strings.HasPrefix(r.Error, ErrTokenReread) {
		t.Fatalf("status %d record %+v", status, r)
	}
}

// refusalWords are what the newer refusals must say, besides their name.
var refusalWords = map[exit.Name]string{
	RefuseModelAPIUnknown:    `is not one of anthropic-messages (Claude Code), openai-responses (Codex) and gemini-generate-content (Gemini CLI)`,
	RefuseAllowPathMalformed: `; give METHOD /PATH, for example "POST /v1/messages"`,
	RefuseCredentialsUnknown: `--child-key "bearer" is not one of attach (the child's key is the placeholder), pass-through`,
	RefuseTokenNotUsed:       `--token-env TOK was given, but under --child-key`,
}

// TestRefusals: every refusal New and Start make, by name.
func TestRefusals(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, []byte(" \n"), 0o600)
	twoLines := filepath.Join(dir, "two")
	_ = os.WriteFile(twoLines, []byte("a\nb\n"), 0o600)
	good := TokenSource{Env: "TOK"}
	env := lookup(map[string]string{"TOK": realToken, "EMPTY": ""})
	cases := []struct {
		name string
		cfg  Config
		want exit.Name
	}{
		{"listen all interfaces", Config{Listen: "0.0.0.0:0"}, RefuseListenNotLoopback},
		{"listen no host", Config{Listen: ":0"}, RefuseListenNotLoopback},
		{"listen private", Config{Listen: "192.168.1.10:0"}, RefuseListenNotLoopback},
		{"listen ipv6 any", Config{Listen: "[::]:0"}, RefuseListenNotLoopback},
		{"listen host name", Config{Listen: "example.com:80"}, RefuseListenNotLoopback},
		{"listen no port", Config{Listen: "127.0.0.1"}, RefuseListenNotLoopback},
		{"listen and unix", Config{Listen: "127.0.0.1:0", Unix: "/tmp/x.sock"}, RefuseListenNotLoopback},
		{"upstream http public", Config{Upstream: "http://api.anthropic.com"}, RefuseUpstreamNotHTTPS},
		{"upstream http private", Config{Upstream: "http://10.0.0.5:8080"}, RefuseUpstreamNotHTTPS},
		{"upstream ftp", Config{Upstream: "ftp://127.0.0.1"}, RefuseUpstreamNotHTTPS},
		{"upstream relative", Config{Upstream: "api.anthropic.com"}, RefuseUpstreamMalformed},
		{"upstream empty", Config{Upstream: ""}, RefuseUpstreamMalformed},
		{"upstream userinfo", Config{Upstream: "https://user:pw@api.anthropic.com"}, RefuseUpstreamMalformed},
		{"upstream query", Config{Upstream: "https://api.anthropic.com/?key=x"}, RefuseUpstreamMalformed},
		{"unknown auth header", Config{Header: "basic"}, RefuseUpstreamAuthUnknown},
		{"no token source", Config{Token: TokenSource{}}, RefuseTokenMissing},
		{"token env unset", Config{Token: TokenSource{Env: "NOPE"}}, RefuseTokenMissing},
		{"token env empty", Config{Token: TokenSource{Env: "EMPTY"}}, RefuseTokenMissing},
		{"token file empty", Config{Token: TokenSource{File: empty}}, RefuseTokenMissing},
		{"token file absent", Config{Token: TokenSource{File: filepath.Join(dir, "absent")}}, RefuseTokenUnreadable},
		{"token file a directory", Config{Token: TokenSource{File: dir}}, RefuseTokenUnreadable},
		{"token file two lines", Config{Token: TokenSource{File: twoLines}}, RefuseTokenUnreadable},
		{"two token sources", Config{Token: TokenSource{Env: "TOK", File: empty}}, RefuseTokenSourceAmbiguous},
		{"egress with scheme", Config{AllowEgress: []string{"https://example.com/"}}, RefuseEgressHostMalformed},
		{"egress bad port", Config{AllowEgress: []string{"example.com:0"}}, RefuseEgressHostMalformed},
		{"model api unknown", Config{ModelAPI: "openai-chat"}, RefuseModelAPIUnknown},
		{"allow path without method", Config{AllowPaths: []string{"/v1/messages"}}, RefuseAllowPathMalformed},
		{"allow path lower-case method", Config{AllowPaths: []string{"post /v1/messages"}}, RefuseAllowPathMalformed},
		{"allow path two spaces", Config{AllowPaths: []string{"POST  /v1/messages"}}, RefuseAllowPathMalformed},
		{"allow path relative", Config{AllowPaths: []string{"POST v1/messages"}}, RefuseAllowPathMalformed},
		{"allow path query", Config{AllowPaths: []string{"POST /v1/messages?beta=true"}}, RefuseAllowPathMalformed},
		{"allow path escape", Config{AllowPaths: []string{"POST /v1/%6dessages"}}, RefuseAllowPathMalformed},
		{"allow path dot segment", Config{AllowPaths: []string{"POST /v1/../admin"}}, RefuseAllowPathMalformed},
		{"allow path ;parameter dot segment", Config{AllowPaths: []string{"POST /v1/..;x/admin"}}, RefuseAllowPathMalformed},
		{"allow path to escape", Config{AllowPaths: []string{"POST /v1/mess\u00e4ges"}}, RefuseAllowPathMalformed},
		{"credentials unknown", Config{Credentials: "bearer"}, RefuseCredentialsUnknown},
		{"token under pass-through", Config{Credentials: PassThrough}, RefuseTokenNotUsed},
		{"token under none", Config{Credentials: NoCredential}, RefuseTokenNotUsed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.Upstream == "" && !strings.HasPrefix(tc.name, "upstream") {
				cfg.Upstream = "https://api.anthropic.com"
			}
			if cfg.Token.Env == "" && cfg.Token.File == "" && tc.name != "no token source" {
				cfg.Token = good
			}
			cfg.LookupEnv = env
			_, err := New(cfg)
			var r *exit.Refusal
			if !errors.As(err, &r) || r.Name != tc.want {
				t.Fatalf("err %v, want refusal %s", err, tc.want)
			}
			if strings.Contains(r.Message, realToken) {
				t.Fatalf("the refusal shows the token: %s", r.Message)
			}
			if msg, ok := refusalWords[r.Name]; ok && !strings.Contains(r.Message, msg) {
				t.Fatalf("refusal %s: %q does not say %q", r.Name, r.Message, msg)
			}
		})
	}
	t.Run("socket path taken", func(t *testing.T) {
		sock := filepath.Join(dir, "taken.sock")
		_ = os.WriteFile(sock, nil, 0o600)
		p, err := New(Config{Upstream: "https://api.anthropic.com", Unix: sock, Token: good, LookupEnv: env})
		if err != nil {
			t.Fatal(err)
		}
		var r *exit.Refusal
		if err := p.Start(); !errors.As(err, &r) || r.Name != RefuseSocketPathTaken {
			t.Fatalf("Start: %v", err)
		}
	})
	t.Run("port taken", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p, err := New(Config{Upstream: "https://api.anthropic.com", Listen: ln.Addr().String(), Token: good, LookupEnv: env})
		if err != nil {
			t.Fatal(err)
		}
		var r *exit.Refusal
		if err := p.Start(); !errors.As(err, &r) || r.Name != RefuseListenFailed {
			t.Fatalf("Start: %v", err)
		}
	})
}

// TestUnixSocket: the reverse endpoint on a unix socket (mode 0600), which
// Claude Code reaches with ANTHROPIC_UNIX_SOCKET.
func TestUnixSocket(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("over a socket"))
	defer up.Close()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	p := start(t, up.URL(), func(c *Config) { c.Unix = sock })
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", st, err)
	}
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	status, body := send(t, &http.Client{Transport: tr}, p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{"stream":true}`)
	if status != 200 || !strings.Contains(body, "over a socket") {
		t.Fatalf("status %d body %s", status, body)
	}
	if env, err := p.GateEnv(); err != nil || len(env) != 0 || p.BaseURL() != "http://localhost" || p.SocketPath() != sock {
		t.Fatalf("a proxy on a socket: gate env %v %v, base %s", env, err, p.BaseURL())
	}
	_ = p.Close()
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket outlived Close: %v", err)
	}
}
