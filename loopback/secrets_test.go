package loopback

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// TestNoSecretInRecordsOrLogs drives every path a request can take —
// forwarded, refused without and with a wrong key, the placeholder and the
// token smuggled into paths and host names, an upstream 401 with a token
// rotation, an unreachable upstream, egress refused and allowed — with debug
// logging on, then looks for the real token (old and new) and the
// placeholder in every record, counter and log byte. It finds neither.
func TestNoSecretInRecordsOrLogs(t *testing.T) {
	log, logs := debugLogger()
	file := filepath.Join(t.TempDir(), "token")
	_ = os.WriteFile(file, []byte(realToken), 0o600)
	const rotated = "sk-test-ROTATED-fedcba9876543210"
	up := scripted.NewAnthropicServer(scripted.Texts("a", "b", "c"), scripted.RequireKey(rotated))
	defer up.Close()
	p := start(t, up.URL(), func(c *Config) {
		c.Logger, c.Token = log, TokenSource{File: file}
		c.AllowEgress = []string{strings.TrimPrefix(up.URL(), "http://")}
	})
	ph := p.Placeholder()
	c := newClient(t)

	send(t, c, p, "POST", "/v1/messages?k="+realToken, map[string]string{"x-api-key": ph}, `{}`) // 401 relayed: unchanged token
	_ = os.WriteFile(file, []byte(rotated), 0o600)
	send(t, c, p, "POST", "/v1/messages?t="+rotated, map[string]string{"x-api-key": ph}, `{"stream":true}`) // retried
	send(t, c, p, "POST", "/v1/messages?p="+ph, map[string]string{"x-api-key": ph}, `{}`)                   // refused: the placeholder in the query
	send(t, c, p, "POST", "/v1/"+ph, nil, `{}`)
	send(t, c, p, "POST", "/v1/"+realToken, map[string]string{"Authorization": "Bearer " + realToken}, `{}`)
	send(t, c, p, "GET", "/"+rotated, map[string]string{"x-api-key": rotated}, ``)

	// Through the gate: a CONNECT to a host named after the placeholder, an
	// absolute URL carrying the token, and an allowed one carrying both.
	base, _ := url.Parse(p.BaseURL())
	gc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(base)}}
	defer gc.CloseIdleConnections()
	for _, u := range []string{
		"https://" + ph + ".example.com/",
		"http://example.com/" + realToken,
		up.URL() + "/v1/messages/" + ph + "/" + rotated,
	} {
		if resp, err := gc.Get(u); err == nil {
			resp.Body.Close()
		}
	}

	// An unreachable upstream, with the same logger.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/" + realToken // an operator who put the key in the path
	ln.Close()
	p2 := start(t, dead, func(c *Config) { c.Logger = log })
	send(t, c, p2, "POST", "/v1/messages", map[string]string{"x-api-key": p2.Placeholder()}, `{}`)

	_ = p.Close()
	_ = p2.Close()
	recs, _ := json.Marshal(append(p.Records(), p2.Records()...))
	counters, _ := json.Marshal([]Counters{p.Counters(), p2.Counters()})
	if len(p.Records()) != 9 || len(p2.Records()) != 1 {
		t.Fatalf("records: %s", recs)
	}
	if p.Counters().RefreshRetried != 1 {
		t.Fatalf("the rotation path was not taken: %s", counters)
	}
	for name, text := range map[string]string{"records": string(recs), "counters": string(counters), "logs": logs.String()} {
		for secret, what := range map[string]string{realToken: "the token", rotated: "the rotated token", ph: "the placeholder", p2.Placeholder(): "the second placeholder"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contain %s:\n%s", name, what, text)
			}
		}
	}
	if !strings.Contains(logs.String(), "[redacted]") {
		t.Errorf("nothing was scrubbed from the logs, so the test did not reach what it means to:\n%s", logs)
	}
}
