package loopback

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestOnRecordAsItHappens: each request's record reaches Config.OnRecord
// when the request ends, before the proxy closes and in the order the
// requests ended: a refused CONNECT, a refused reverse request, an
// upstream that cannot be reached (502). None carries a secret.
func TestOnRecordAsItHappens(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	got := make(chan Record, 8)
	p := start(t, dead, func(c *Config) { c.OnRecord = func(r Record) { got <- r } })
	next := func(what string) Record {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(backstop):
			t.Fatalf("no record for %s before the proxy closed", what)
			return Record{}
		}
	}

	c, err := net.Dial("tcp", strings.TrimPrefix(p.GateURL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	c.Close()
	if r := next("the CONNECT"); r.Route != RouteConnect || r.Refused != RefusedEgress || r.Path != "example.com:443" || r.Status != 403 {
		t.Fatalf("CONNECT record %+v", r)
	}

	cl := newClient(t)
	if status, _ := send(t, cl, p, "POST", "/v1/messages", map[string]string{"x-api-key": "not-it"}, `{}`); status != 401 {
		t.Fatalf("wrong placeholder: %d", status)
	}
	if r := next("the refused request"); r.Route != RouteReverse || r.Refused != RefusedWrongPlaceholder || r.Method != "POST" || r.Path != "/v1/messages" {
		t.Fatalf("reverse record %+v", r)
	}

	if status, _ := send(t, cl, p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{"a":1}`); status != 502 {
		t.Fatalf("dead upstream: %d", status)
	}
	r := next("the 502")
	if r.Status != 502 || !strings.HasPrefix(r.Error, ErrUpstreamUnreachable) || r.BytesIn != 7 || r.Duration <= 0 {
		t.Fatalf("502 record %+v", r)
	}
	if strings.Contains(fmt.Sprintf("%+v", r), p.Placeholder()) || strings.Contains(fmt.Sprintf("%+v", r), realToken) {
		t.Fatal("a record handed out carries a secret")
	}
	if r.Seq != 3 {
		t.Fatalf("seq %d, want 3", r.Seq)
	}
}
