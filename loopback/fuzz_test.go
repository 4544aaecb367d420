package loopback

import (
	"bufio"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/internal/loopbackhost"
)

// FuzzConfigParsers: the parsers of --upstream, --listen and --allow-egress
// never panic, and what they accept keeps the rules: an upstream is https
// or http on loopback and carries no credential, query or fragment; a
// listen address is a loopback IP; an egress rule is a bare host.
func FuzzConfigParsers(f *testing.F) {
	f.Add("https://api.anthropic.com", "127.0.0.1:0", "example.com")
	f.Add("http://[::1]:8080/prefix/", "localhost:8080", "[::1]:443")
	f.Add("http://127.1.2.3", "[::1]:0", "example.com:443")
	f.Add("https://u:p@h/?q#f", "0.0.0.0:0", "https://example.com/")
	f.Add("HTTP://LOCALHOST:1", ":0", "*.example.com")
	f.Fuzz(func(t *testing.T, upstream, listen, egress string) {
		if u, err := parseUpstream(upstream); err == nil {
			if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Host == "" {
				t.Fatalf("accepted upstream %q as %#v", upstream, u)
			}
			if u.Scheme != "https" && !(u.Scheme == "http" && loopbackhost.Is(u.Hostname())) {
				t.Fatalf("accepted upstream %q: scheme %q host %q", upstream, u.Scheme, u.Hostname())
			}
		}
		if addr, err := parseListen(listen); err == nil {
			host, _, err := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				t.Fatalf("accepted listen %q as %q", listen, addr)
			}
		}
		if rules, err := parseEgress([]string{egress}); err == nil {
			if len(rules) != 1 || rules[0].host == "" || strings.ContainsAny(rules[0].host, "/@?# ") {
				t.Fatalf("accepted egress %q as %+v", egress, rules)
			}
		}
	})
}

// FuzzAuthorized: whatever credential headers a request carries, it is let
// through only when each of them is exactly the placeholder.
func FuzzAuthorized(f *testing.F) {
	const ph = "mh-run-fuzz-0123456789abcdef01234567"
	f.Add(ph, "", true, false)
	f.Add("", "Bearer "+ph, false, true)
	f.Add(ph, "bearer "+ph, true, true)
	f.Add(ph, "Bearer x", true, true)
	f.Add(ph+" ", "", true, false)
	f.Add("", "Basic "+ph, false, true)
	f.Fuzz(func(t *testing.T, key, authz string, withKey, withAuthz bool) {
		p := &Proxy{placeholder: []byte(ph)}
		h := http.Header{}
		if withKey {
			h["X-Api-Key"] = []string{key}
		}
		if withAuthz {
			h["Authorization"] = []string{authz}
		}
		ok, why := p.authorized(h)
		if !ok {
			if withKey && key == ph && !withAuthz {
				t.Fatalf("the placeholder in x-api-key was refused (%s)", why)
			}
			return
		}
		if !withKey && !withAuthz {
			t.Fatal("a request without credentials was let through")
		}
		if withKey && key != ph {
			t.Fatalf("x-api-key %q was let through", key)
		}
		if withAuthz && !(len(authz) == 7+len(ph) && strings.EqualFold(authz[:7], "bearer ") && authz[7:] == ph) {
			t.Fatalf("Authorization %q was let through", authz)
		}
	})
}

// FuzzOutboundTarget: whatever request target the child sends, what the
// reverse endpoint forwards stays beneath the upstream's path prefix once
// the upstream resolves dot segments, and carries the placeholder nowhere
// in its path or query.
func FuzzOutboundTarget(f *testing.F) {
	const ph = "mh-run-fuzz-0123456789abcdef01234567"
	f.Add("/v1/messages?beta=true")
	f.Add("/../admin")
	f.Add("/v1/%2e%2e/%2E%2e/x")
	f.Add("/v1/..%5cadmin")
	f.Add("/v1/messages?k=" + ph)
	f.Add("/v1/%6dh-run-fuzz-0123456789abcdef01234567")
	f.Fuzz(func(t *testing.T, target string) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n")))
		if err != nil || r.URL.Host != "" || !strings.HasPrefix(r.URL.Path, "/") {
			return // the server refuses it, or it is the egress gate's
		}
		up, _ := url.Parse("https://api.example.com/prefix")
		p := &Proxy{placeholder: []byte(ph), upstream: up, cfg: Config{Header: APIKeyHeader}}
		if why, _ := p.checkTarget(r.URL); why != "" {
			return
		}
		out := p.outbound(r, "tok", nil, nil)
		resolved := path.Clean(strings.ReplaceAll(out.URL.Path, `\`, "/"))
		if resolved != "/prefix" && !strings.HasPrefix(resolved, "/prefix/") {
			t.Fatalf("%q was forwarded to %q, which resolves to %q outside the prefix", target, out.URL.String(), resolved)
		}
		for _, s := range []string{out.URL.Path, out.URL.RawPath, out.URL.RawQuery, out.URL.String()} {
			if p.holdsPlaceholder(s) {
				t.Fatalf("%q was forwarded with the placeholder in %q", target, s)
			}
		}
	})
}
