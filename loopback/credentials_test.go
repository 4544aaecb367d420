package loopback

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// TestCredentialModes: under pass-through the child's own key goes
// upstream unchanged, under none it is taken out; in both the child proves
// it is the run's with the placeholder in RunHeader, which never goes
// upstream; without it, or with a wrong one, the request is answered 401
// and not forwarded. Under attach, RunHeader alone proves the child too.
func TestCredentialModes(t *testing.T) {
	const own = "sk-own-key-of-the-child"
	cases := []struct {
		mode       Credentials
		hdr        func(ph string) map[string]string
		status     int
		refused    string
		key, authz string // what the upstream sees
	}{
		{PassThrough, func(ph string) map[string]string { return map[string]string{"x-api-key": own, RunHeader: ph} }, 200, "", own, ""},
		{PassThrough, func(ph string) map[string]string {
			return map[string]string{"Authorization": "Bearer " + own, RunHeader: ph}
		}, 200, "", "", "Bearer " + own},
		{PassThrough, func(ph string) map[string]string { return map[string]string{"x-api-key": own} }, 401, RefusedNoPlaceholder, "", ""},
		{PassThrough, func(ph string) map[string]string { return map[string]string{"x-api-key": ph} }, 401, RefusedNoPlaceholder, "", ""},
		{PassThrough, func(ph string) map[string]string { return map[string]string{"x-api-key": own, RunHeader: ph + "x"} }, 401, RefusedWrongPlaceholder, "", ""},
		// The placeholder as the key: taken out, never sent on.
		{PassThrough, func(ph string) map[string]string { return map[string]string{"x-api-key": ph, RunHeader: ph} }, 200, "", "", ""},
		{NoCredential, func(ph string) map[string]string {
			return map[string]string{"x-api-key": own, "Authorization": "Bearer " + own, RunHeader: ph}
		}, 200, "", "", ""},
		{NoCredential, func(ph string) map[string]string { return map[string]string{} }, 401, RefusedNoPlaceholder, "", ""},
		{AttachToken, func(ph string) map[string]string { return map[string]string{RunHeader: ph} }, 200, "", realToken, ""},
		{AttachToken, func(ph string) map[string]string { return map[string]string{"x-api-key": ph, RunHeader: "nope"} }, 401, RefusedWrongPlaceholder, "", ""},
	}
	for i, c := range cases {
		up := scripted.NewAnthropicServer(scripted.Texts("x"))
		p := start(t, up.URL(), func(cfg *Config) {
			cfg.Credentials = c.mode
			if c.mode != AttachToken {
				cfg.Token = TokenSource{}
			}
		})
		ph := p.Placeholder()
		status, body := send(t, newClient(t), p, "POST", "/v1/messages", c.hdr(ph), `{}`)
		_ = p.Close()
		up.Close()
		if status != c.status {
			t.Errorf("case %d (%s): status %d, body %s", i, c.mode, status, body)
			continue
		}
		reqs := up.Requests()
		rec := p.Records()[0]
		if c.status == 401 {
			want := "x-api-key, x-goog-api-key or Authorization: Bearer"
			if c.mode != AttachToken {
				want = RunHeader
			}
			if len(reqs) != 0 || rec.Refused != c.refused || !strings.Contains(body, "this run's placeholder in "+want+"; it was not forwarded") {
				t.Errorf("case %d (%s): %d requests forwarded, record %+v, body %s", i, c.mode, len(reqs), rec, body)
			}
			continue
		}
		h := reqs[0].Header
		if h.Get("X-Api-Key") != c.key || h.Get("Authorization") != c.authz || h.Get(RunHeader) != "" {
			t.Errorf("case %d (%s): upstream saw x-api-key %q authorization %q run header %q", i, c.mode, h.Get("X-Api-Key"), h.Get("Authorization"), h.Get(RunHeader))
		}
		recs, _ := json.Marshal(p.Records())
		if strings.Contains(string(recs), ph) || strings.Contains(string(recs), own) || strings.Contains(string(recs), RunHeader) {
			t.Errorf("case %d (%s): records %s", i, c.mode, recs)
		}
		if c.mode == PassThrough && c.hdr(ph)["x-api-key"] == ph && strings.Join(rec.Scrubbed, ",") != "header X-Api-Key" {
			t.Errorf("case %d: the placeholder as a pass-through key was not recorded as taken out: %v", i, rec.Scrubbed)
		}
	}
}

// TestPassThrough401NotRetried: a 401 to the child's own key is relayed
// as it is; there is no token to re-read.
func TestPassThrough401NotRetried(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("x"), scripted.RequireKey("the-right-one"))
	defer up.Close()
	p := start(t, up.URL(), func(c *Config) { c.Credentials, c.Token = PassThrough, TokenSource{} })
	status, _ := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": "a-wrong-one", RunHeader: p.Placeholder()}, `{}`)
	_ = p.Close()
	if r := p.Records()[0]; status != http.StatusUnauthorized || r.Refresh != "" || len(up.Requests()) != 1 {
		t.Fatalf("status %d, record %+v, %d upstream requests", status, r, len(up.Requests()))
	}
}
