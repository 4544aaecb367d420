package loopback

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// TestRoutesAreApart: the model route and the egress gate listen on ports
// of their own, and each refuses (421, recorded, never forwarded) what is
// for the other: a model request on the gate's port is one the vendor never
// makes and one its commands, which may reach the gate, must not; a proxy
// request on the model route belongs on the gate.
func TestRoutesAreApart(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("hello"))
	defer up.Close()
	p := start(t, up.URL(), func(c *Config) { c.AllowEgress = []string{"example.com"} })
	c := newClient(t)
	gate := &Proxy{baseURL: p.GateURL()}
	status, body := send(t, c, gate, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{}`)
	if status != http.StatusMisdirectedRequest || !strings.Contains(body, "not served on the egress gate") {
		t.Errorf("a model request on the gate: %d %s", status, body)
	}
	req, _ := http.NewRequest("GET", "http://example.com/x", nil)
	tr := &http.Transport{Proxy: http.ProxyURL(mustURL(t, p.BaseURL()))}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a proxy request on the model route: %d", resp.StatusCode)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("%d requests reached the upstream", n)
	}
	_ = p.Close()
	var refused []string
	for _, r := range p.Records() {
		refused = append(refused, r.Refused)
	}
	if strings.Join(refused, " ") != RefusedModelOnGate+" "+RefusedEgressOnModelRoute {
		t.Errorf("records refused %v", refused)
	}
	if c := p.Counters(); c.RefusedRequest != 2 || c.Forwarded != 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestAdmit: Admit is asked once per connection, with the addresses the
// proxy's end sees; a connection it refuses gets 403 on every request,
// placeholder or not, recorded as not the vendor with Admit's words, and
// nothing reaches the upstream; another connection it admits is served.
func TestAdmit(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("one", "two"))
	defer up.Close()
	var asked atomic.Int32
	var refuse atomic.Bool
	refuse.Store(true)
	p := start(t, up.URL(), func(c *Config) {
		c.Admit = func(local, remote net.Addr) error {
			asked.Add(1)
			if !strings.HasPrefix(local.String(), "127.0.0.1:") || !strings.HasPrefix(remote.String(), "127.0.0.1:") {
				t.Errorf("local %s remote %s", local, remote)
			}
			if refuse.Load() {
				return errors.New("its peer is pid 42, not the vendor's 7")
			}
			return nil
		}
	})
	hdr := map[string]string{"x-api-key": p.Placeholder()}
	c := newClient(t)
	for range 2 {
		if status, body := send(t, c, p, "POST", "/v1/messages", hdr, `{}`); status != http.StatusForbidden || !strings.Contains(body, "does not come from the run's vendor") {
			t.Fatalf("a refused peer: %d %s", status, body)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("Admit asked %d times for one connection", n)
	}
	refuse.Store(false)
	if status, _ := send(t, newClient(t), p, "POST", "/v1/messages", hdr, `{}`); status != 200 {
		t.Errorf("an admitted peer: %d", status)
	}
	if n := len(up.Requests()); n != 1 {
		t.Errorf("%d requests reached the upstream, want the admitted one", n)
	}
	_ = p.Close()
	recs := p.Records()
	if len(recs) != 3 || recs[0].Refused != RefusedNotVendor || !strings.Contains(recs[0].Error, "pid 42") || recs[2].Refused != "" {
		t.Errorf("records %+v", recs)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
