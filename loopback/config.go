package loopback

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/loopbackhost"
)

// Refusal names. Each is an *exit.Refusal from New or Start; none mentions a
// token or a placeholder value.
const (
	RefuseListenNotLoopback    exit.Name = "loopback-listen-not-loopback"
	RefuseListenFailed         exit.Name = "loopback-listen-failed"
	RefuseSocketPathTaken      exit.Name = "loopback-socket-path-taken"
	RefuseUpstreamNotHTTPS     exit.Name = "loopback-upstream-not-https"
	RefuseUpstreamMalformed    exit.Name = "loopback-upstream-malformed"
	RefuseUpstreamAuthUnknown  exit.Name = "loopback-upstream-auth-unknown"
	RefuseTokenMissing         exit.Name = "loopback-token-missing"
	RefuseTokenUnreadable      exit.Name = "loopback-token-unreadable"
	RefuseTokenSourceAmbiguous exit.Name = "loopback-token-source-ambiguous"
	RefuseEgressHostMalformed  exit.Name = "loopback-egress-host-malformed"
	RefuseModelAPIUnknown      exit.Name = "loopback-model-api-unknown"
	RefuseAllowPathMalformed   exit.Name = "loopback-allow-path-malformed"
	RefuseCredentialsUnknown   exit.Name = "loopback-credentials-unknown"
	RefuseTokenNotUsed         exit.Name = "loopback-token-not-used"
)

// HeaderStyle is the header the upstream reads the real token from.
type HeaderStyle string

const (
	// APIKeyHeader sends "x-api-key: <token>": the Anthropic API with an API
	// key (its Authorization: Bearer form is for OAuth tokens only).
	APIKeyHeader HeaderStyle = "x-api-key"
	// BearerHeader sends "Authorization: Bearer <token>": the OpenAI API.
	BearerHeader HeaderStyle = "bearer"
	// GoogAPIKeyHeader sends "x-goog-api-key: <token>": the Gemini API
	// (never the key=… query parameter it also takes).
	GoogAPIKeyHeader HeaderStyle = "x-goog-api-key"
)

// Credentials is what the proxy does with the credential of the child's
// requests.
type Credentials string

const (
	// AttachToken (the default): the child's key is the placeholder, in
	// x-api-key, x-goog-api-key, Authorization: Bearer or RunHeader; the
	// proxy takes it out and attaches the real token (Config.Token).
	AttachToken Credentials = "attach"
	// PassThrough: the child holds a key of its own; its x-api-key,
	// x-goog-api-key and Authorization go upstream unchanged, and it proves it is the run's
	// child with the placeholder in RunHeader.
	PassThrough Credentials = "pass-through"
	// NoCredential: the child's x-api-key, x-goog-api-key and
	// Authorization are taken out
	// and nothing is attached (an upstream that needs no key); RunHeader
	// as for PassThrough.
	NoCredential Credentials = "none"
)

// RunHeader carries the placeholder where the child's credential headers
// are its own (PassThrough, NoCredential): the proof that a request comes
// from the run's child (Claude Code sends it from ANTHROPIC_CUSTOM_HEADERS,
// codex from its provider's http_headers). It is compared in constant
// time, taken out before forwarding in every mode, and never logged or
// recorded.
const RunHeader = "X-Metaharness-Run"

// TokenSource names where the real token lives: exactly one of Env (an
// environment variable's name), File (a file whose trimmed content is the
// token) and FD (an inherited descriptor, 3 or above, the token arrives on).
// Each is read at New; File is read again after an upstream 401 (a
// rotated token is retried once), for nothing changes a process's own
// environment under it and a descriptor is read to its first newline or its
// end and closed. FD is the safest source: nothing of the token stays on
// disk, in an environment or open.
type TokenSource struct {
	Env  string
	File string
	FD   *int
	// Decode, when set, reads File's content instead: a file in a vendor's
	// own shape (codex's auth.json) whose token it returns, or a refusal
	// naming why it carries none.
	Decode func(data []byte) (string, error)
}

// Config is one proxy. The zero values of the optional fields are the
// defaults named beside them.
type Config struct {
	// Upstream is the model API root, https (or http on a loopback host);
	// a path prefix is kept, so https://host/prefix + /v1/messages goes to
	// /prefix/v1/messages.
	Upstream string
	// Header is how the upstream wants the token (default APIKeyHeader).
	Header HeaderStyle
	Token  TokenSource
	// Credentials is what becomes of the child's credential (default
	// AttachToken; the verb's --child-key). PassThrough and NoCredential
	// attach no token: Token must then name no source.
	Credentials Credentials
	// ModelAPI, when set (AnthropicMessages or OpenAIResponses), makes the
	// proxy read the upstream's answers into its wire view (Proxy.Wire).
	// The proxy then asks the upstream for bodies without a content
	// encoding (Accept-Encoding: identity), since the view reads what it
	// relays.
	ModelAPI string
	// WireLimit bounds the content the wire view holds (default
	// DefaultWireLimit).
	WireLimit int64
	// AllowPaths, when not empty, are the only requests the reverse
	// endpoint forwards, each "METHOD /path": the path under the
	// upstream's prefix as the child sends it, with any query. Anything
	// else is answered 403 and recorded (RefusedPathNotAllowed), never
	// forwarded. Empty forwards any path; ModelAPIPaths gives the pinned
	// vendors' own.
	AllowPaths []string
	// Listen is a loopback host:port (default 127.0.0.1:0, an ephemeral
	// port). Unix, when set, is a socket path used instead; it must not exist.
	Listen string
	Unix   string
	// AllowEgress lists the hosts (HOST or HOST:PORT) the child may reach
	// through the egress gate; empty refuses all egress.
	AllowEgress []string
	// RunID goes into the placeholder so a stray one can be traced to its run.
	RunID string
	// Logger receives the proxy's diagnostics (default: none).
	Logger *zap.Logger
	// RootCAs verifies the upstream's certificate (default: the system roots).
	RootCAs *x509.CertPool
	// LookupEnv reads Token.Env (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// ShutdownGrace bounds how long Close waits for requests in flight
	// before cutting them (default 3s).
	ShutdownGrace time.Duration
	// Admit, when set, is asked once per connection to the model route, at
	// its first request, whether the connection's peer is the run's vendor
	// (local and remote as the proxy's end sees them): an error refuses
	// every request on that connection, whatever credential it carries (403,
	// RefusedNotVendor, the error's words in the record's Error). A run uses
	// it to tell the vendor's requests from its commands' where the kernel
	// does not keep the commands off the model route.
	Admit func(local, remote net.Addr) error
	// OnRecord, when set, is handed each request's Record (scrubbed, as
	// Records keeps it) as the request ends, on the request's own goroutine,
	// so it must not block: how a run puts the proxy's traffic into its
	// event stream as it happens.
	OnRecord func(Record)
	// ThrottleBudget is how long one request may wait out the upstream's
	// throttles (ThrottleWait): a 429 that is not a hard quota is waited
	// out and the request sent again, at most MaxThrottleRetries times,
	// while the waits fit in the budget. 0 (the default) waits none: the
	// first 429 is relayed.
	ThrottleBudget time.Duration
	// OnThrottle, when set, is told of each throttle as the proxy begins
	// to wait it out (retry counts from 1), on the request's goroutine.
	OnThrottle func(method, path string, retry int, th Throttle)
}

// egressRule is one allowlisted host, with its port when one was named.
type egressRule struct {
	host string // lower case, no brackets
	port string // "" = any port
}

func (r egressRule) allows(host, port string) bool {
	return strings.EqualFold(r.host, host) && (r.port == "" || r.port == port)
}

// pathRule is one allowlisted request: a method and a path in its
// escaped form, in which a * stands for any characters of its segment but
// a / (the model's name in a Gemini API path).
type pathRule struct{ method, path string }

// matches reports whether the escaped path ep is the rule's path.
func (r pathRule) matches(ep string) bool {
	if !strings.Contains(r.path, "*") {
		return ep == r.path
	}
	want, got := strings.Split(r.path, "/"), strings.Split(ep, "/")
	if len(want) != len(got) {
		return false
	}
	for i, w := range want {
		head, tail, wild := strings.Cut(w, "*")
		g := got[i]
		switch {
		case !wild && g != w:
			return false
		case wild && (len(g) <= len(head)+len(tail) || !strings.HasPrefix(g, head) || !strings.HasSuffix(g, tail)):
			return false
		}
	}
	return true
}

// parseAllowPaths reads the allowlist: "METHOD /path", the method upper
// case, the path plain (no query, fragment, escape or dot segment), at
// most one * in a segment.
func parseAllowPaths(rules []string) ([]pathRule, error) {
	var out []pathRule
	for _, r := range rules {
		method, path, ok := strings.Cut(r, " ")
		plain := strings.ReplaceAll(path, "*", "x")
		var why string
		switch {
		case !ok || method == "" || strings.Trim(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "":
			why = "is not an upper-case method, one space and a path"
		case !strings.HasPrefix(path, "/"):
			why = "has a path that does not start with /"
		case strings.ContainsAny(path, "?#%\\ \t"):
			why = "has a path with a query, fragment, percent-escape, backslash or space; name the plain path (any query is allowed)"
		case hasDotSegment(path):
			why = "has a . or .. segment in its path"
		case (&url.URL{Path: plain}).EscapedPath() != plain:
			why = "has a path with characters a URL must escape"
		case slices.ContainsFunc(strings.Split(path, "/"), func(seg string) bool { return strings.Count(seg, "*") > 1 }):
			why = "has more than one * in a segment"
		}
		if why != "" {
			return nil, exit.Refuse(RefuseAllowPathMalformed, "--allow-path %q %s; give METHOD /PATH, for example \"POST /v1/messages\"", r, why)
		}
		out = append(out, pathRule{method, path})
	}
	return out, nil
}

// parseListen checks a listen address and returns the one to bind.
func parseListen(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", exit.Refuse(RefuseListenNotLoopback, "--listen %q is not HOST:PORT (%v); use 127.0.0.1:0", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", exit.Refuse(RefuseListenNotLoopback, "--listen %q has no valid port; use 127.0.0.1:0 for an ephemeral one", addr)
	}
	if host == "" || !loopbackhost.Is(host) {
		return "", exit.Refuse(RefuseListenNotLoopback,
			"--listen %q is not a loopback address: the proxy holds the real token and must be reachable from this machine only; use 127.0.0.1:0 or a --unix socket", addr)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// parseUpstream checks the upstream root: https, or http on a loopback host
// only; no credentials, query or fragment in it.
func parseUpstream(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return nil, exit.Refuse(RefuseUpstreamMalformed, "--upstream %q is not an absolute URL like https://api.anthropic.com", raw)
	}
	if u.User != nil {
		return nil, exit.Refuse(RefuseUpstreamMalformed,
			"--upstream carries user information; a credential never goes in a URL, name it with --token-env or --token-file")
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, exit.Refuse(RefuseUpstreamMalformed, "--upstream %q has a query or fragment; give the API root only", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !loopbackhost.Is(u.Hostname()) {
			return nil, exit.Refuse(RefuseUpstreamNotHTTPS,
				"--upstream %q is plain http to a host that is not loopback; the token would cross the network in clear, use https", raw)
		}
	default:
		return nil, exit.Refuse(RefuseUpstreamNotHTTPS, "--upstream %q: scheme %q is not https (or http on a loopback host)", raw, u.Scheme)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u, nil
}

// parseEgress reads the allowlist: HOST or HOST:PORT, no scheme or path.
func parseEgress(hosts []string) ([]egressRule, error) {
	var out []egressRule
	for _, h := range hosts {
		if strings.ContainsAny(h, "/@?#* \t") {
			return nil, exit.Refuse(RefuseEgressHostMalformed, "--allow-egress %q is not a host name; give HOST or HOST:PORT without scheme or path", h)
		}
		r := egressRule{host: h}
		if host, port, err := net.SplitHostPort(h); err == nil {
			r.host, r.port = host, port
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return nil, exit.Refuse(RefuseEgressHostMalformed, "--allow-egress %q has no valid port; give HOST or HOST:PORT", h)
			}
		}
		r.host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(r.host, "["), "]"))
		if r.host == "" || strings.Contains(r.host, ":") && net.ParseIP(r.host) == nil {
			return nil, exit.Refuse(RefuseEgressHostMalformed, "--allow-egress %q is not a host name; give HOST or HOST:PORT without scheme or path", h)
		}
		out = append(out, r)
	}
	return out, nil
}

// newPlaceholder is mh-run-<run id>-<24 hex digits>: traceable to its run,
// unguessable, and not shaped like any vendor's key.
func newPlaceholder(runID string) (string, error) {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '-'
	}, runID)
	if len(clean) > 40 {
		clean = clean[:40]
	}
	if clean == "" {
		clean = "run"
	}
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", err
	}
	return "mh-run-" + clean + "-" + hex.EncodeToString(nonce[:]), nil
}
