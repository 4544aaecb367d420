package loopback

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
// a server resolves dot segments however it reads them (asServersRead),
// and carries the placeholder nowhere in its path or query.
func FuzzOutboundTarget(f *testing.F) {
	const ph = "mh-run-fuzz-0123456789abcdef01234567"
	f.Add("/v1/messages?beta=true")
	f.Add("/../admin")
	f.Add("/v1/%2e%2e/%2E%2e/x")
	f.Add("/v1/..%5cadmin")
	f.Add("/v1/messages?k=" + ph)
	f.Add("/v1/%6dh-run-fuzz-0123456789abcdef01234567")
	f.Add("/v1/%252e%252e/admin")
	f.Add("/v1/..;/admin")
	f.Add("/v1/%2e%2e;x=1/admin")
	f.Add("/v1/%25252e%25252e%25252f")
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
		resolved := path.Clean(asServersRead(out.URL.Path))
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

// asServersRead is a path as the most lenient server behind an upstream
// could read it: percent-decoded until nothing changes, a backslash taken
// for a slash, and each segment's ;parameters dropped.
func asServersRead(p string) string {
	for range 64 {
		next, changed := percentDecode(p)
		if !changed {
			break
		}
		p = next
	}
	segs := strings.Split(strings.ReplaceAll(p, `\`, "/"), "/")
	for i, s := range segs {
		segs[i], _, _ = strings.Cut(s, ";")
	}
	return strings.Join(segs, "/")
}

// fuzzWire: whatever a model API's upstream sends, as an event stream or
// a JSON body, however it is cut into chunks and whenever it is looked at,
// the view never panics, reads the same as when the body arrives whole,
// holds canonical inputs only where it says so, and counts no more than
// it holds. The seeds (testdata/fuzz/FuzzWire*) are the captured-style
// answers of testdata/wire.
func fuzzWire(f *testing.F, api string) {
	f.Fuzz(func(t *testing.T, body []byte, cut uint8, sse bool) {
		whole := feed(api, 200, sse, true, body).Responses()
		step := int(cut) + 1
		w := newWire(api, DefaultWireLimit)
		h := http.Header{"Content-Type": {"application/json"}}
		if sse {
			h.Set("Content-Type", "text/event-stream")
		}
		ws := w.begin(1, time.Time{}, "POST", "/v1/x", &http.Response{StatusCode: 200, Header: h, ContentLength: -1})
		for i := 0; i < len(body); i += step {
			piece := body[i:min(i+step, len(body))]
			ws.relay(len(piece))
			ws.write(piece)
			if i == step { // a look in the middle caches what is complete
				w.Responses()
			}
		}
		ws.end(true)
		pieces := w.Responses()
		if d := cmp.Diff(whole, pieces); d != "" {
			t.Fatalf("whole vs in pieces of %d (-whole +pieces):\n%s", step, d)
		}
		for _, r := range pieces {
			for _, it := range r.Items {
				if it.Call == nil {
					continue
				}
				if it.Call.InputForm == InputJSON || it.Call.InputForm == InputText {
					if c, err := Canonical(it.Call.Input); err != nil || !bytes.Equal(c, it.Call.Input) {
						t.Fatalf("input %s (%s) is not canonical: %s %v", it.Call.Input, it.Call.InputForm, c, err)
					}
				}
				if got, ok := w.Call(it.Call.ID); it.Call.ID != "" && (!ok || got.ID != it.Call.ID) {
					t.Fatalf("call %q is in the snapshot but Call finds %+v", it.Call.ID, got)
				}
			}
		}
		if st := w.Stats(); st.Held < 0 || st.Overflow != 0 || st.Held > int64(len(body))*2+responseCost+itemCost*int64(len(body)+1) {
			t.Fatalf("stats %+v for a body of %d bytes", st, len(body))
		}
	})
}

func FuzzWireAnthropic(f *testing.F) { fuzzWire(f, AnthropicMessages) }

func FuzzWireResponses(f *testing.F) { fuzzWire(f, OpenAIResponses) }

func FuzzWireGemini(f *testing.F) { fuzzWire(f, GeminiAPI) }

// FuzzCanonical: Canonical never panics, and what it returns is valid JSON
// that is its own canonical form and decodes to the same value.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.50,"\u00e9\n",null]}`, `{"a":1,"a":2}`, `"\ud83d\ude00"`, `[{"":{}}]`, ` 1e400 `, `{"x":"\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Canonical(in)
		if err != nil {
			return
		}
		if !json.Valid(c) {
			t.Fatalf("%q gave invalid JSON %q", in, c)
		}
		if again, err := Canonical(c); err != nil || !bytes.Equal(again, c) {
			t.Fatalf("%q: canonical %q is not its own canonical form: %q %v", in, c, again, err)
		}
		var a, b any
		da, db := json.NewDecoder(bytes.NewReader(in)), json.NewDecoder(bytes.NewReader(c))
		da.UseNumber()
		db.UseNumber()
		if da.Decode(&a) != nil || db.Decode(&b) != nil || !cmp.Equal(a, b) {
			t.Fatalf("%q and its canonical %q differ", in, c)
		}
	})
}

// FuzzRunHeader: where the child's credential is its own, a request is let
// through only when RunHeader is exactly the placeholder, whatever else it
// carries; under attach, a RunHeader that is not the placeholder refuses
// it.
func FuzzRunHeader(f *testing.F) {
	const ph = "mh-run-fuzz-0123456789abcdef01234567"
	f.Add(ph, "sk-own", true, true)
	f.Add(ph+"x", ph, true, false)
	f.Add("", ph, false, true)
	f.Add(ph, "", true, false)
	f.Fuzz(func(t *testing.T, run, key string, withRun, own bool) {
		p := &Proxy{placeholder: []byte(ph), cfg: Config{Credentials: AttachToken}}
		if own {
			p.cfg.Credentials = PassThrough
		}
		h := http.Header{"X-Api-Key": {key}}
		if withRun {
			h[RunHeader] = []string{run}
		}
		ok, _ := p.authorized(h)
		switch {
		case own && ok != (withRun && run == ph):
			t.Fatalf("pass-through, run header %q (given %v): authorized %v", run, withRun, ok)
		case !own && ok && (key != ph || withRun && run != ph):
			t.Fatalf("attach, key %q, run header %q (given %v) was let through", key, run, withRun)
		}
	})
}
