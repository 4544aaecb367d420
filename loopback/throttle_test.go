package loopback

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// answers is an upstream that answers each request with the next of its
// answers, and the last one ever after.
type answers []struct {
	status  int
	body    string
	headers map[string]string
}

func (a answers) serve(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		i := min(int(n.Add(1))-1, len(a)-1)
		for k, v := range a[i].headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a[i].status)
		_, _ = io.WriteString(w, a[i].body)
	}))
	t.Cleanup(up.Close)
	return up, &n
}

// TestThrottleWaitedOut: a 429 that is no hard quota is waited out within
// the budget and sent again with the same body; the client sees only the
// answer that followed, the record names every wait (as asked, or the
// proxy's own backoff), OnThrottle is told of each as it begins, and the
// counters count the retries.
func TestThrottleWaitedOut(t *testing.T) {
	up, asked := answers{
		{429, anthropic429, map[string]string{"Retry-After": "0"}},
		{429, openAIRate, map[string]string{"Retry-After-Ms": "20"}},
		{429, "", nil},
		{200, `{"ok":true}`, nil},
	}.serve(t)
	var mu sync.Mutex
	var told []int
	p := start(t, up.URL, func(c *Config) {
		c.ThrottleBudget = 10 * time.Second
		c.OnThrottle = func(method, path string, retry int, th Throttle) {
			mu.Lock()
			defer mu.Unlock()
			if method != "POST" || path != "/v1/messages" {
				t.Errorf("OnThrottle(%s %s)", method, path)
			}
			told = append(told, retry)
		}
	})
	status, body := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{"model":"m"}`)
	if status != 200 || body != `{"ok":true}` {
		t.Fatalf("the client got %d %q, want the answer after the throttles", status, body)
	}
	_ = p.Close()
	if n := asked.Load(); n != 4 {
		t.Fatalf("the upstream was asked %d times, want 4", n)
	}
	rec := p.Records()[0]
	if rec.Quota != nil || rec.UpstreamStatus != 200 {
		t.Fatalf("record quota %+v upstream %d", rec.Quota, rec.UpstreamStatus)
	}
	want := []Throttle{
		{Status: 429, Type: "rate_limit_error", RetryAfter: "Retry-After 0", Waited: 0},
		{Status: 429, Type: "rate_limit_exceeded", RetryAfter: "retry-after-ms 20", Waited: 20 * time.Millisecond},
		{Status: 429, Waited: 4 * time.Second},
	}
	if len(rec.Throttled) != len(want) {
		t.Fatalf("throttled %+v", rec.Throttled)
	}
	for i := range want {
		if rec.Throttled[i] != want[i] {
			t.Errorf("throttle %d: %+v, want %+v", i, rec.Throttled[i], want[i])
		}
	}
	if c := p.Counters(); c.ThrottleRetries != 3 || c.UpstreamQuota != 0 || c.Forwarded != 1 {
		t.Errorf("counters %+v", c)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != 3 || told[0] != 1 || told[2] != 3 {
		t.Errorf("OnThrottle told of retries %v", told)
	}
}

// TestThrottleNotWaitedOut: what the proxy relays at once, as a quota the
// run stops on: a hard quota (insufficient_quota), a wait longer than the
// budget left, no budget at all, a budget spent by the waits before, and
// a body too large to send twice.
func TestThrottleNotWaitedOut(t *testing.T) {
	cases := []struct {
		name    string
		budget  time.Duration
		answers answers
		body    int
		asked   int32
	}{
		{"insufficient_quota", time.Minute, answers{{429, openAIQuota, nil}, {200, "{}", nil}}, 2, 1},
		{"a long wait", time.Minute, answers{{429, anthropic429, map[string]string{"Retry-After": "3600"}}, {200, "{}", nil}}, 2, 1},
		{"no budget", 0, answers{{429, anthropic429, nil}, {200, "{}", nil}}, 2, 1},
		{"the budget spent", 1500 * time.Millisecond, answers{{429, "", nil}, {429, "", map[string]string{"Retry-After": "1"}}, {200, "{}", nil}}, 2, 2},
		{"a body past what is held", time.Minute, answers{{429, anthropic429, nil}, {200, "{}", nil}}, maxHeld + 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up, asked := c.answers.serve(t)
			p := start(t, up.URL, func(cfg *Config) { cfg.ThrottleBudget = c.budget })
			body := make([]byte, c.body)
			status, _ := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, string(body))
			if status != 429 {
				t.Fatalf("the client got %d, want the 429 relayed", status)
			}
			_ = p.Close()
			if n := asked.Load(); n != c.asked {
				t.Fatalf("the upstream was asked %d times, want %d", n, c.asked)
			}
			rec := p.Records()[0]
			if rec.Quota == nil || rec.Quota.Status != 429 {
				t.Fatalf("record quota %+v, want the 429", rec.Quota)
			}
			if st := new(Stopper).Observe(rec); st == nil || st.Reason != StopQuota {
				t.Errorf("stop %+v, want a quota stop", st)
			}
		})
	}
}

// TestThrottleWaitEndsWithClient: a client that goes away while the proxy
// waits out a throttle ends the wait at once; nothing is sent again.
func TestThrottleWaitEndsWithClient(t *testing.T) {
	up, asked := answers{{429, anthropic429, map[string]string{"Retry-After": "30"}}}.serve(t)
	waiting := make(chan struct{})
	p := start(t, up.URL, func(c *Config) {
		c.ThrottleBudget = time.Minute
		c.OnThrottle = func(string, string, int, Throttle) { close(waiting) }
	})
	conn, err := net.Dial("tcp", p.BaseURL()[len("http://"):])
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: "+p.Placeholder()+"\r\nContent-Length: 2\r\n\r\n{}")
	<-waiting
	at := time.Now()
	_ = conn.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(at); took > 2*time.Second {
		t.Errorf("the proxy closed %v after the client left, still waiting", took)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the upstream was asked %d times", n)
	}
	if rec := p.Records()[0]; rec.Error == "" || len(rec.Throttled) != 0 {
		t.Errorf("record error %q throttled %+v", rec.Error, rec.Throttled)
	}
}

// TestThrottleWait: the waits, from the headers and the budget left.
func TestThrottleWait(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	soon := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name  string
		h     http.Header
		n     int
		left  time.Duration
		wait  time.Duration
		asked string
		ok    bool
	}{
		{"backoff", h(), 0, time.Minute, time.Second, "", true},
		{"backoff doubles", h(), 3, time.Minute, 8 * time.Second, "", true},
		{"backoff cut to the budget", h(), 5, 10 * time.Second, 10 * time.Second, "", true},
		{"seconds", h("Retry-After", "7"), 0, time.Minute, 7 * time.Second, "Retry-After 7", true},
		{"milliseconds first", h("Retry-After", "7", "Retry-After-Ms", "250"), 0, time.Minute, 250 * time.Millisecond, "retry-after-ms 250", true},
		{"asked past the budget", h("Retry-After", "61"), 0, time.Minute, 61 * time.Second, "Retry-After 61", false},
		{"a date", h("Retry-After", soon), 0, time.Minute, 0, "Retry-After " + soon, false},
		{"malformed is no ask", h("Retry-After", "soon"), 0, time.Minute, time.Second, "", true},
		{"no budget", h("Retry-After", "0"), 0, 0, 0, "", false},
		{"retries spent", h(), MaxThrottleRetries, time.Hour, 0, "", false},
	} {
		wait, asked, ok := ThrottleWait(c.h, c.n, c.left)
		if c.name == "a date" {
			wait = c.wait // its wait depends on the clock
		}
		if wait != c.wait || asked != c.asked || ok != c.ok {
			t.Errorf("%s: %v %q %v, want %v %q %v", c.name, wait, asked, ok, c.wait, c.asked, c.ok)
		}
	}
}

// TestStopper: which records stop a run, and why: a quota, a 401, a
// refusing answer at once; an unreachable upstream only MaxUnreachable
// times in a row (an answer between resets the count); refused requests,
// other routes and the vendor's own retriable answers never.
func TestStopper(t *testing.T) {
	rev := func(status int, errText string) Record {
		return Record{Route: RouteReverse, Method: "POST", Path: "/v1/messages", UpstreamStatus: status, Error: errText}
	}
	unreachable := rev(0, ErrUpstreamUnreachable+": dial tcp 127.0.0.1:9: connect: connection refused")
	var s Stopper
	for i, c := range []struct {
		rec  Record
		want StopReason
	}{
		{rev(200, ""), ""},
		{rev(529, ""), ""},
		{rev(500, ""), ""},
		{rev(400, ""), ""},
		{Record{Route: RouteReverse, Refused: RefusedWrongPlaceholder, Status: 401}, ""},
		{Record{Route: RouteConnect, Refused: RefusedEgress}, ""},
		{unreachable, ""},
		{unreachable, ""},
		{rev(200, ""), ""},
		{unreachable, ""},
		{unreachable, ""},
		{unreachable, StopUnreachable},
		{rev(401, ""), StopKeyRejected},
		{rev(404, ""), StopRefused},
		{rev(405, ""), StopRefused},
		{rev(403, ""), StopRefused},
		{Record{Route: RouteReverse, Method: "POST", Path: "/v1/messages", UpstreamStatus: 429, Quota: &Quota{Status: 429}}, StopQuota},
	} {
		got := s.Observe(c.rec)
		if (got == nil) != (c.want == "") || got != nil && got.Reason != c.want {
			t.Errorf("record %d (%d %q): stop %+v, want %q", i, c.rec.UpstreamStatus, c.rec.Error, got, c.want)
		}
	}
	for st, want := range map[*UpstreamStop]string{
		{StopKeyRejected, rev(401, "")}: "the model API answered POST /v1/messages with 401 Unauthorized",
		{StopUnreachable, unreachable}:  "3 requests in a row (the last POST /v1/messages) found no model API to answer them (dial tcp 127.0.0.1:9: connect: connection refused)",
		{StopQuota, Record{Method: "POST", Path: "/v1/responses", Quota: &Quota{Status: 429, Type: "insufficient_quota"}}}: "the model API answered POST /v1/responses with 429 Too Many Requests (insufficient_quota)",
	} {
		if got := st.What(); got != want {
			t.Errorf("%s: %q, want %q", st.Reason, got, want)
		}
	}
}

// FuzzThrottleWait: whatever an upstream puts in retry-after-ms and
// Retry-After, the wait is never negative, never past the budget left when
// it is taken, and no retry is sent past MaxThrottleRetries or with no
// budget left; what the record keeps of the upstream's words names the
// header it came from.
func FuzzThrottleWait(f *testing.F) {
	f.Add("", "2", 0, int64(time.Minute))
	f.Add("1500", "", 3, int64(time.Second))
	f.Add("-1", "Wed, 21 Oct 2015 07:28:00 GMT", 1, int64(time.Hour))
	f.Add("1e400", "99999999999", 7, int64(0))
	f.Fuzz(func(t *testing.T, ms, ra string, n int, left int64) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", ra)
		wait, asked, ok := ThrottleWait(h, n, time.Duration(left))
		if !ok {
			return
		}
		if wait < 0 || wait > time.Duration(left) || n >= MaxThrottleRetries || left <= 0 {
			t.Fatalf("wait %v with %v left at retry %d", wait, time.Duration(left), n)
		}
		if asked != "" && !strings.HasPrefix(asked, "retry-after-ms ") && !strings.HasPrefix(asked, "Retry-After ") {
			t.Fatalf("asked %q", asked)
		}
	})
}
