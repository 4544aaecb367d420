package autoharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/metaharness/metaharness/internal/loopbackhost"
)

// The bounds of Options.RequestTimeout.
const (
	DefaultRequestTimeout = 30 * time.Second
	MaxRequestTimeout     = 300 * time.Second
)

// maxBody bounds an answer's body: a control plane's largest answer (a page
// of 10,000 log lines) is far below it, and a body past it is refused
// rather than held.
const maxBody = 64 << 20

// Options configure a Client.
type Options struct {
	// BaseURL is the control plane's URL, with or without a trailing
	// /api/v1 (one trailing "/", then one trailing "/api/v1", are
	// stripped). Required.
	BaseURL string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// Cookie, when set, is sent as the Cookie header of every request: the
	// session an admin's Login returned, for a principal that has no key.
	Cookie string
	// RequestTimeout bounds each request, from connecting to the last byte
	// of its answer: 0 means DefaultRequestTimeout; otherwise at least 1ms
	// and at most MaxRequestTimeout.
	RequestTimeout time.Duration
	// AllowInsecureHTTP lets a credential travel over plain http, and only
	// to a loopback BaseURL (127.0.0.0/8, ::1, localhost).
	AllowInsecureHTTP bool
	// Transport carries the requests; nil is http.DefaultTransport.
	Transport http.RoundTripper
}

// Client calls one control plane. It is safe for concurrent use.
type Client struct {
	base    string // normalised, without /api/v1
	apiKey  string
	cookie  string
	timeout time.Duration
	http    *http.Client
}

// New checks o and makes a Client.
func New(o Options) (*Client, error) {
	if o.BaseURL == "" {
		return nil, errors.New("baseUrl is required")
	}
	timeout := o.RequestTimeout
	if timeout == 0 {
		timeout = DefaultRequestTimeout
	}
	if timeout < time.Millisecond || timeout > MaxRequestTimeout {
		return nil, fmt.Errorf("requestTimeout must be at least 1ms and at most %s, got %s", MaxRequestTimeout, o.RequestTimeout)
	}
	base, err := normalise(o.BaseURL)
	if err != nil {
		return nil, err
	}
	if o.APIKey != "" || o.Cookie != "" {
		if err := CheckTransport(base, o.AllowInsecureHTTP); err != nil {
			return nil, err
		}
	}
	transport := o.Transport
	if transport == nil {
		transport = http.DefaultTransport
	}
	return &Client{
		base:    base,
		apiKey:  o.APIKey,
		cookie:  o.Cookie,
		timeout: timeout,
		http:    &http.Client{Transport: transport, CheckRedirect: checkRedirect},
	}, nil
}

// BaseURL is the control plane's URL as the client uses it: without a
// trailing "/" or "/api/v1".
func (c *Client) BaseURL() string { return c.base }

// RequestTimeout is the deadline each request has.
func (c *Client) RequestTimeout() time.Duration { return c.timeout }

// normalise strips one trailing "/" and then one trailing "/api/v1" from
// raw, and refuses what is not an absolute http or https URL of a host.
func normalise(raw string) (string, error) {
	base := strings.TrimSuffix(strings.TrimSuffix(raw, "/"), "/api/v1")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", errors.New("baseUrl must be an absolute http or https URL, such as https://harness.example.com")
	}
	if u.User != nil {
		return "", errors.New("baseUrl must not carry a user or password; pass the key as APIKey")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(base, "#") {
		return "", errors.New("baseUrl must not have a query or a fragment")
	}
	return base, nil
}

// CheckTransport says whether a credential may be sent to baseURL: always
// over https; over plain http only with allowInsecureHTTP and to a loopback
// host, decided from the URL alone (no name is looked up).
func CheckTransport(baseURL string, allowInsecureHTTP bool) error {
	u, err := url.Parse(baseURL)
	if err == nil && u.Scheme == "https" {
		return nil
	}
	if err == nil && u.Scheme == "http" && allowInsecureHTTP && loopbackhost.Is(u.Hostname()) {
		return nil
	}
	return errors.New("baseUrl must use https when apiKey is set (allowInsecureHttp only permits plain HTTP to a loopback baseUrl, e.g. http://127.0.0.1 or http://localhost)")
}

// checkRedirect follows a redirect within what the credential allows: never
// from https to http, and to another origin without the credential.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	first := via[0].URL
	if first.Scheme == "https" && req.URL.Scheme != "https" {
		return fmt.Errorf("refusing a redirect from https to %s://%s", req.URL.Scheme, req.URL.Host)
	}
	if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		req.Header.Del("Authorization")
		req.Header.Del("Cookie")
	}
	return nil
}

// Request is one request of the control plane's API, sent as it is.
type Request struct {
	// Method is the HTTP method; "" is GET.
	Method string
	// Path is the route below /api/v1 with its query, beginning with "/":
	// "/hosts?online=online". Ids in it must be escaped (PathEscape).
	Path string
	// AtRoot puts Path below the site's root instead of /api/v1 (GET
	// /health) and sends no credential.
	AtRoot bool
	// Header is added to the request; Accept defaults to application/json,
	// and the credential's header always wins.
	Header http.Header
	// Body, when not nil, is sent as it is with Content-Type
	// application/json (unless Header sets one).
	Body []byte

	// unread leaves the answer's body unread (Login's, which carries the
	// principal and is nobody's to see).
	unread bool
}

// Response is the control plane's answer to a Request.
type Response struct {
	Status int
	Header http.Header
	// Body is the JSON body as the server sent it; nil for a 204, an empty
	// body or one that is not JSON.
	Body json.RawMessage
}

// Request sends r and reads its whole answer within the client's request
// timeout. An answer outside 2xx is an *Error; a passed deadline a
// *RequestTimeoutError.
func (c *Client) Request(ctx context.Context, r Request) (*Response, error) {
	return c.do(ctx, r, c.timeout)
}

// outcome is what the goroutine that sends a request hands back.
type outcome struct {
	resp *http.Response
	body []byte
	err  error
}

// do is Request with its own deadline. The deadline is kept twice: as the
// request's context, which a well-behaved transport obeys, and as a timer
// raced against the whole exchange, which holds when the transport does
// not.
func (c *Client) do(ctx context.Context, r Request, timeout time.Duration) (*Response, error) {
	if !strings.HasPrefix(r.Path, "/") {
		return nil, fmt.Errorf("autoharness: request path %q must begin with /", r.Path)
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	target := c.base + "/api/v1" + r.Path
	if r.AtRoot {
		target = c.base + r.Path
	}
	var body io.Reader
	if r.Body != nil {
		body = bytes.NewReader(r.Body)
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("autoharness: %s %s: %w", method, r.Path, err)
	}
	req.Header.Set("Accept", "application/json")
	for k, vs := range r.Header {
		req.Header[http.CanonicalHeaderKey(k)] = append([]string(nil), vs...)
	}
	if r.Body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if !r.AtRoot {
		if c.apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+c.apiKey)
		}
		if c.cookie != "" {
			req.Header.Set("Cookie", c.cookie)
		}
	}

	done := make(chan outcome, 1)
	go func() { done <- c.exchange(req, !r.unread) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var o outcome
	select {
	case o = <-done:
	case <-timer.C:
		return nil, &RequestTimeoutError{Timeout: timeout}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if o.err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(rctx.Err(), context.DeadlineExceeded) {
			return nil, &RequestTimeoutError{Timeout: timeout}
		}
		return nil, o.err
	}
	if o.resp.StatusCode < 200 || o.resp.StatusCode > 299 {
		return nil, errorFromAnswer(o.resp.StatusCode, o.resp.Header.Get("Retry-After"), o.body)
	}
	out := &Response{Status: o.resp.StatusCode, Header: o.resp.Header}
	if o.resp.StatusCode != http.StatusNoContent && len(o.body) > 0 && json.Valid(o.body) {
		out.Body = o.body
	}
	return out, nil
}

// exchange sends req and, when read, reads its whole answer, bounded by
// maxBody.
func (c *Client) exchange(req *http.Request, read bool) outcome {
	resp, err := c.http.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	if !read {
		return outcome{resp: resp}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return outcome{err: fmt.Errorf("reading the answer to %s %s: %w", req.Method, req.URL.Path, err)}
	}
	if len(b) > maxBody {
		return outcome{err: fmt.Errorf("the answer to %s %s is longer than %d bytes", req.Method, req.URL.Path, maxBody)}
	}
	return outcome{resp: resp, body: b}
}
