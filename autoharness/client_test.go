package autoharness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const insecure = "baseUrl must use https when apiKey is set (allowInsecureHttp only permits plain HTTP to a loopback baseUrl, e.g. http://127.0.0.1 or http://localhost)"

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"no base URL", Options{}, "baseUrl is required"},
		{"negative timeout", Options{BaseURL: "https://h", RequestTimeout: -time.Second}, "requestTimeout must be at least 1ms and at most 5m0s, got -1s"},
		{"sub-millisecond timeout", Options{BaseURL: "https://h", RequestTimeout: time.Microsecond}, "requestTimeout must be at least 1ms and at most 5m0s, got 1µs"},
		{"timeout past 300s", Options{BaseURL: "https://h", RequestTimeout: MaxRequestTimeout + time.Nanosecond}, "requestTimeout must be at least 1ms and at most 5m0s, got 5m0.000000001s"},
		{"not a URL", Options{BaseURL: "harness.test"}, "baseUrl must be an absolute http or https URL, such as https://harness.example.com"},
		{"another scheme", Options{BaseURL: "ftp://harness.test"}, "baseUrl must be an absolute http or https URL, such as https://harness.example.com"},
		{"no host", Options{BaseURL: "https:///api/v1"}, "baseUrl must be an absolute http or https URL, such as https://harness.example.com"},
		{"user info", Options{BaseURL: "https://u:p@harness.test"}, "baseUrl must not carry a user or password; pass the key as APIKey"},
		{"query", Options{BaseURL: "https://harness.test?x=1"}, "baseUrl must not have a query or a fragment"},
		{"fragment", Options{BaseURL: "https://harness.test#x"}, "baseUrl must not have a query or a fragment"},
		{"key over http", Options{BaseURL: "http://127.0.0.1:7420", APIKey: "k"}, insecure},
		{"key over http to a private address", Options{BaseURL: "http://192.168.1.10", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"key over http to 10/8", Options{BaseURL: "http://10.0.0.5", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"key over http to 172.16/12", Options{BaseURL: "http://172.16.0.5", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"key over http to a name", Options{BaseURL: "http://harness.test", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"key over http to a name under 127", Options{BaseURL: "http://127.0.0.1.nip.io", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"key over http to 128/8", Options{BaseURL: "http://128.0.0.1", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"key over http to ::2", Options{BaseURL: "http://[::2]", APIKey: "k", AllowInsecureHTTP: true}, insecure},
		{"cookie over http", Options{BaseURL: "http://harness.test", Cookie: "s=1", AllowInsecureHTTP: true}, insecure},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.o)
			if err == nil || err.Error() != c.want {
				t.Errorf("New: %v, want %q", err, c.want)
			}
		})
	}
}

func TestNewAccepts(t *testing.T) {
	for _, c := range []struct {
		o         Options
		base      string
		requestTO time.Duration
	}{
		{Options{BaseURL: "https://harness.test"}, "https://harness.test", DefaultRequestTimeout},
		{Options{BaseURL: "https://harness.test/", APIKey: "k"}, "https://harness.test", DefaultRequestTimeout},
		{Options{BaseURL: "https://harness.test/api/v1"}, "https://harness.test", DefaultRequestTimeout},
		{Options{BaseURL: "https://harness.test/api/v1/", RequestTimeout: time.Millisecond}, "https://harness.test", time.Millisecond},
		{Options{BaseURL: "https://harness.test/api/v1/api/v1", RequestTimeout: MaxRequestTimeout}, "https://harness.test/api/v1", MaxRequestTimeout},
		{Options{BaseURL: "https://harness.test/prefix//"}, "https://harness.test/prefix/", DefaultRequestTimeout},
		{Options{BaseURL: "http://10.0.0.5"}, "http://10.0.0.5", DefaultRequestTimeout}, // no credential, no rule
		{Options{BaseURL: "http://127.0.0.1:7420/api/v1", APIKey: "k", AllowInsecureHTTP: true}, "http://127.0.0.1:7420", DefaultRequestTimeout},
		{Options{BaseURL: "http://127.9.8.7", APIKey: "k", AllowInsecureHTTP: true}, "http://127.9.8.7", DefaultRequestTimeout},
		{Options{BaseURL: "http://localhost:1", APIKey: "k", AllowInsecureHTTP: true}, "http://localhost:1", DefaultRequestTimeout},
		{Options{BaseURL: "http://LOCALHOST", APIKey: "k", AllowInsecureHTTP: true}, "http://LOCALHOST", DefaultRequestTimeout},
		{Options{BaseURL: "http://[::1]:9", Cookie: "s=1", AllowInsecureHTTP: true}, "http://[::1]:9", DefaultRequestTimeout},
	} {
		c2, err := New(c.o)
		if err != nil {
			t.Errorf("New(%+v): %v", c.o, err)
			continue
		}
		if c2.BaseURL() != c.base || c2.RequestTimeout() != c.requestTO {
			t.Errorf("New(%+v): base %q timeout %v, want %q %v", c.o, c2.BaseURL(), c2.RequestTimeout(), c.base, c.requestTO)
		}
	}
}

func TestRequestSendsWhatItIsGiven(t *testing.T) {
	rec := newRecorder(t, routes{
		"POST /api/v1/hosts/drain": {200, `{"ok" : true, "z":1, "a":2}`, nil},
		"GET /health":              {200, `{"ok":true}`, nil},
		"DELETE /api/v1/x":         {204, ``, nil},
		"GET /api/v1/text":         {200, `not json`, nil},
	})
	c := client(t, rec, func(o *Options) { o.Cookie = "s=1" })
	resp, err := c.Request(bg, Request{Method: "POST", Path: "/hosts/drain", Body: []byte(`{"hostId":"h<1>"}`), Header: http.Header{"X-Extra": {"1"}, "Accept": {"text/plain"}}})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != `{"ok" : true, "z":1, "a":2}` || resp.Status != 200 {
		t.Errorf("answer %d %s, want the body as sent", resp.Status, resp.Body)
	}
	got := rec.requests()[0]
	if got.line() != `POST https://harness.test/api/v1/hosts/drain {"hostId":"h<1>"}` {
		t.Errorf("sent %s", got.line())
	}
	want := http.Header{"Accept": {"text/plain"}, "Authorization": {"Bearer k"}, "Content-Type": {"application/json"}, "Cookie": {"s=1"}, "X-Extra": {"1"}}
	if fmt.Sprint(got.Header) != fmt.Sprint(want) {
		t.Errorf("headers %v, want %v", got.Header, want)
	}

	// At the root: no credential; no body, no content type; GET by default.
	if _, err := c.Request(bg, Request{Path: "/health", AtRoot: true}); err != nil {
		t.Fatal(err)
	}
	got = rec.requests()[1]
	if got.line() != "GET https://harness.test/health" || fmt.Sprint(got.Header) != fmt.Sprint(http.Header{"Accept": {"application/json"}}) {
		t.Errorf("sent %s %v", got.line(), got.Header)
	}
	for path, method := range map[string]string{"/x": "DELETE", "/text": "GET"} {
		resp, err := c.Request(bg, Request{Method: method, Path: path})
		if err != nil || resp.Body != nil {
			t.Errorf("%s %s: %v, body %q; want no body", method, path, err, resp.Body)
		}
	}
	if _, err := c.Request(bg, Request{Path: "hosts"}); err == nil || err.Error() != `autoharness: request path "hosts" must begin with /` {
		t.Errorf("a relative path: %v", err)
	}
	if n := len(rec.requests()); n != 4 {
		t.Errorf("%d requests sent, want 4", n)
	}
}

func TestErrorCarriesTheServersFields(t *testing.T) {
	draining := `{"error":{"code":"DRAINING","message":"repository is draining for this principal","operationId":"drain-1","statusUrl":"/api/v1/repositories/repo-1/session-drains/drain-1","extra":[1,2]}}`
	for _, c := range []struct {
		name  string
		rep   reply
		want  Error
		extra string
	}{
		{"draining", reply{409, draining, http.Header{"Retry-After": {"7"}}}, Error{
			Status: 409, Code: "DRAINING", Message: "repository is draining for this principal", RetryAfter: "7",
			OperationID: "drain-1", StatusURL: "/api/v1/repositories/repo-1/session-drains/drain-1",
			Details: json.RawMessage(`{"code":"DRAINING","message":"repository is draining for this principal","operationId":"drain-1","statusUrl":"/api/v1/repositories/repo-1/session-drains/drain-1","extra":[1,2]}`),
		}, `{"operationId":"drain-1","statusUrl":"/api/v1/repositories/repo-1/session-drains/drain-1","extra":[1,2]}`},
		{"not JSON", reply{502, `<html>bad gateway</html>`, nil}, Error{Status: 502, Code: "HTTP_ERROR", Message: "Auto Harness request failed (502)"}, ""},
		{"empty", reply{500, ``, nil}, Error{Status: 500, Code: "HTTP_ERROR", Message: "Auto Harness request failed (500)"}, ""},
		{"error not an object", reply{400, `{"error":"bad"}`, nil}, Error{Status: 400, Code: "HTTP_ERROR", Message: "Auto Harness request failed (400)"}, ""},
		{"code only", reply{429, `{"error":{"code":"RATE_LIMITED"}}`, nil}, Error{Status: 429, Code: "RATE_LIMITED", Message: "Auto Harness request failed (429)", Details: json.RawMessage(`{"code":"RATE_LIMITED"}`)}, ""},
		{"dependencies", reply{409, `{"error":{"code":"CONFLICT","message":"cannot delete repository; referenced by 1 record","dependencies":[{"kind":"schedule","id":"s1"}]}}`, nil}, Error{
			Status: 409, Code: "CONFLICT", Message: "cannot delete repository; referenced by 1 record",
			Details: json.RawMessage(`{"code":"CONFLICT","message":"cannot delete repository; referenced by 1 record","dependencies":[{"kind":"schedule","id":"s1"}]}`),
		}, `{"dependencies":[{"kind":"schedule","id":"s1"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder(t, routes{"POST /api/v1/sessions": c.rep})
			_, err := client(t, rec).CreateSession(bg, SessionInput{RepositoryID: "r", Prompt: "p"})
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if fmt.Sprintf("%+v", *e) != fmt.Sprintf("%+v", c.want) {
				t.Errorf("error\n%+v\nwant\n%+v", *e, c.want)
			}
			if extra := e.Extra(); string(extra) != c.extra {
				t.Errorf("Extra %s, want %s", extra, c.extra)
			}
			if ErrorCode(err) != c.want.Code || !strings.HasSuffix(err.Error(), fmt.Sprintf(" (HTTP %d, %s)", c.want.Status, c.want.Code)) {
				t.Errorf("ErrorCode %q, Error() %q", ErrorCode(err), err)
			}
		})
	}
}

// everyMethod calls each method of the client once.
var everyMethod = map[string]func(*Client) error{
	"CreateSession": func(c *Client) error {
		_, err := c.CreateSession(bg, SessionInput{RepositoryID: "r", Prompt: "p", Target: &TargetRef{ProviderID: "p"}, Timeout: 60})
		return err
	},
	"GetSession":    func(c *Client) error { _, err := c.GetSession(bg, "s"); return err },
	"CancelSession": func(c *Client) error { _, err := c.CancelSession(bg, "s"); return err },
	"ResumeSession": func(c *Client) error { _, err := c.ResumeSession(bg, "s", nil); return err },
	"ListSessions":  func(c *Client) error { _, err := c.ListSessions(bg, SessionFilter{}); return err },
	"StartSessionDrain": func(c *Client) error {
		_, err := c.StartSessionDrain(bg, RepositoryByID("r"), "")
		return err
	},
	"GetSessionDrain":     func(c *Client) error { _, err := c.GetSessionDrain(bg, RepositoryByID("r"), "d"); return err },
	"ReleaseSessionDrain": func(c *Client) error { _, err := c.ReleaseSessionDrain(bg, RepositoryByID("r"), "d"); return err },
	"ListRepositories":    func(c *Client) error { _, err := c.ListRepositories(bg, PageOptions{}); return err },
	"PauseRepository":     func(c *Client) error { _, err := c.PauseRepository(bg, "r"); return err },
	"DrainRepository":     func(c *Client) error { _, err := c.DrainRepository(bg, "r"); return err },
	"ActivateRepository":  func(c *Client) error { _, err := c.ActivateRepository(bg, "r"); return err },
	"ListProviders":       func(c *Client) error { _, err := c.ListProviders(bg); return err },
	"ListCommands":        func(c *Client) error { _, err := c.ListCommands(bg); return err },
	"Request":             func(c *Client) error { _, err := c.Request(bg, Request{Path: "/hosts"}); return err },
}

// okay answers every request with a 200 record, slowly when it is told to.
var okay = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, `{"id":"x","items":[]}`)
})

// TestTimeoutOnEveryMethod: a transport that hangs before the headers, or
// in the middle of the body, and ignores cancellation, still ends every
// method in the timeout error after exactly one call: nothing is retried.
func TestTimeoutOnEveryMethod(t *testing.T) {
	for _, mode := range []int{hangHeaders, hangBody} {
		for name, call := range everyMethod {
			t.Run(fmt.Sprint(name, "/", map[int]string{hangHeaders: "headers", hangBody: "body"}[mode]), func(t *testing.T) {
				t.Parallel()
				rec := newRecorder(t, okay)
				rec.setMode(mode)
				err := call(client(t, rec, timeout(20*time.Millisecond)))
				var te *RequestTimeoutError
				if !errors.As(err, &te) || te.Timeout != 20*time.Millisecond || err.Error() != "Auto Harness request timed out after 20ms" || ErrorCode(err) != CodeRequestTimeout {
					t.Errorf("error %v (%T), want the 20ms timeout", err, err)
				}
				if n := len(rec.requests()); n != 1 {
					t.Errorf("%d transport calls, want 1", n)
				}
			})
		}
	}
}

// TestTimeoutCoversTheBody: against a real server that sends the headers
// and then stalls, the deadline still holds, and a well-behaved transport
// is cancelled by it.
func TestTimeoutCoversTheBody(t *testing.T) {
	stall := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		io.WriteString(w, `{"id":`)
		w.(http.Flusher).Flush()
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stall)
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", RequestTimeout: 50 * time.Millisecond, Transport: srv.Client().Transport})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSession(bg, "s")
	if ErrorCode(err) != CodeRequestTimeout {
		t.Errorf("error %v, want the timeout", err)
	}
}

func TestCallerContext(t *testing.T) {
	rec := newRecorder(t, okay)
	rec.setMode(hangHeaders)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := client(t, rec).GetSession(ctx, "s")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want the caller's cancellation", err)
	}
}

func TestRefusesAHugeBody(t *testing.T) {
	rec := newRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`"`))
		w.Write(make([]byte, maxBody))
	}))
	_, err := client(t, rec).Request(bg, Request{Path: "/hosts"})
	if err == nil || err.Error() != "the answer to GET /api/v1/hosts is longer than 67108864 bytes" {
		t.Errorf("error %v", err)
	}
}

func TestRedirects(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	note := func(s string) {
		mu.Lock()
		seen = append(seen, s)
		mu.Unlock()
	}
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note("other " + r.URL.Path + " auth=" + r.Header.Get("Authorization") + " cookie=" + r.Header.Get("Cookie"))
		io.WriteString(w, `{"id":"s"}`)
	}))
	defer other.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note("plain " + r.URL.Path)
	}))
	defer plain.Close()
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		note("same " + r.URL.Path + " auth=" + r.Header.Get("Authorization") + " cookie=" + r.Header.Get("Cookie"))
		switch r.URL.Path {
		case "/api/v1/sessions/a":
			http.Redirect(w, r, srv.URL+"/api/v1/sessions/b", http.StatusFound)
		case "/api/v1/sessions/b":
			io.WriteString(w, `{"id":"s"}`)
		case "/api/v1/sessions/c":
			http.Redirect(w, r, other.URL+"/api/v1/sessions/d", http.StatusFound)
		case "/api/v1/sessions/e":
			http.Redirect(w, r, plain.URL+"/api/v1/sessions/f", http.StatusFound)
		}
	}))
	defer srv.Close()
	// One transport trusting both TLS servers' certificates.
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.RootCAs.AddCert(other.Certificate())
	c, err := New(Options{BaseURL: srv.URL, APIKey: "k", Cookie: "s=1", Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSession(bg, "a"); err != nil {
		t.Fatal(err)
	}
	// Both test servers are 127.0.0.1, on other ports: another origin.
	if _, err := c.GetSession(bg, "c"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSession(bg, "e")
	if err == nil || !strings.Contains(err.Error(), "refusing a redirect from https to http://127.0.0.1:") {
		t.Errorf("a redirect to http: %v", err)
	}
	want := []string{
		"same /api/v1/sessions/a auth=Bearer k cookie=s=1",
		"same /api/v1/sessions/b auth=Bearer k cookie=s=1",
		"same /api/v1/sessions/c auth=Bearer k cookie=s=1",
		"other /api/v1/sessions/d auth= cookie=",
		"same /api/v1/sessions/e auth=Bearer k cookie=s=1",
	}
	if !slices.Equal(seen, want) {
		t.Errorf("the servers saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

func TestLogin(t *testing.T) {
	var read bool
	rec := newRecorder(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/api/v1/auth/login" || string(b) != `{"username":"admin","password":"p<&>w"}` {
			w.WriteHeader(401)
			return
		}
		w.Header().Add("Set-Cookie", "auto_harness_session=abc.def; HttpOnly; Secure; SameSite=Strict; Path=/")
		w.Header().Add("Set-Cookie", " other=1 ;Path=/")
		w.WriteHeader(200)
		io.WriteString(w, `{"principal":{"id":"admin:admin"}}`)
	}))
	o := Options{BaseURL: "https://harness.test/api/v1", APIKey: "ignored", Cookie: "ignored", Transport: bodySpy{rec, &read}}
	cookie, err := Login(bg, o, "admin", "p<&>w")
	if err != nil || cookie != "auto_harness_session=abc.def; other=1" {
		t.Errorf("Login: %q %v", cookie, err)
	}
	if read {
		t.Error("Login read the answer's body")
	}
	got := rec.requests()[0]
	if h := fmt.Sprint(got.Header); h != fmt.Sprint(http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}) {
		t.Errorf("login headers %s: no credential may ride along", h)
	}
	if _, err := Login(bg, o, "admin", "wrong"); err == nil || err.Error() != "admin login failed (HTTP 401)" {
		t.Errorf("a wrong password: %v", err)
	}
	for _, base := range []string{"http://harness.test", "http://192.168.1.10"} {
		_, err := Login(bg, Options{BaseURL: base, AllowInsecureHTTP: true, Transport: rec}, "admin", "p")
		if err == nil || err.Error() != insecure {
			t.Errorf("login over %s: %v", base, err)
		}
	}
	if n := len(rec.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (none over plain http)", n)
	}
	noCookie := newRecorder(t, okay)
	if _, err := Login(bg, Options{BaseURL: "https://h", Transport: noCookie}, "a", "p"); err == nil || err.Error() != "admin login answered HTTP 200 without a session cookie" {
		t.Errorf("no cookie: %v", err)
	}
}

// bodySpy notes whether anyone reads an answer's body.
type bodySpy struct {
	rt   http.RoundTripper
	read *bool
}

func (s bodySpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.rt.RoundTrip(r)
	if err == nil {
		resp.Body = spiedBody{resp.Body, s.read}
	}
	return resp, err
}

type spiedBody struct {
	io.ReadCloser
	read *bool
}

func (b spiedBody) Read(p []byte) (int, error) {
	*b.read = true
	return b.ReadCloser.Read(p)
}

func TestPathEscape(t *testing.T) {
	for in, want := range map[string]string{
		"abc-_.!~*'()XYZ09": "abc-_.!~*'()XYZ09",
		"a/b":               "a%2Fb",
		"service:1f":        "service%3A1f",
		"a b+c&d=e$f@g#h?i": "a%20b%2Bc%26d%3De%24f%40g%23h%3Fi",
		"%2e%2e":            "%252e%252e",
		"é":                 "%C3%A9",
		"..":                "..",
	} {
		if got := PathEscape(in); got != want {
			t.Errorf("PathEscape(%q) = %q, want %q", in, got, want)
		}
		// What it escapes decodes back to itself.
		if back, err := url.PathUnescape(PathEscape(in)); err != nil || back != in {
			t.Errorf("PathEscape(%q) does not round-trip: %q %v", in, back, err)
		}
	}
}
