package decidehttp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/metaharness/metaharness/internal/decide"
	"github.com/metaharness/metaharness/record"
)

const token = "0123456789abcdef-run-token"

// readBody is a vendor's payload as the tests post it: {"id","tool"}.
func readBody(b []byte) (decide.Request, error) {
	var in struct{ ID, Tool string }
	if err := json.Unmarshal(b, &in); err != nil || in.ID == "" {
		return decide.Request{}, fmt.Errorf("not a payload: %q", b)
	}
	return decide.Request{Seam: record.SeamHook, CallID: in.ID, Tool: in.Tool}, nil
}

func writeDecision(d record.Decision) []byte {
	b, _ := json.Marshal(d)
	return b
}

type harness struct {
	t       *testing.T
	addr    string
	mu      sync.Mutex
	refused []decide.Refusal
	asked   []decide.Request
	admits  atomic.Int64
}

func (h *harness) faults() []decide.Fault {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []decide.Fault
	for _, r := range h.refused {
		out = append(out, r.Fault)
	}
	return out
}

func (h *harness) answered() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.asked)
}

// serve runs an endpoint with s's bounds (the package's when zero) until
// the test ends; admit, when set, is Endpoint.Admit and answer the decider
// (allow when nil).
func serve(t *testing.T, s *server, admit func(local, remote net.Addr) error, answer func(context.Context, decide.Request) record.Decision) *harness {
	t.Helper()
	h := &harness{t: t}
	if answer == nil {
		answer = func(context.Context, decide.Request) record.Decision { return record.AllowDecision() }
	}
	s.ep = Endpoint{
		Token: token, Read: readBody, Write: writeDecision,
		Admit: func(local, remote net.Addr) error {
			h.admits.Add(1)
			if admit == nil {
				return nil
			}
			return admit(local, remote)
		},
		Answer: func(ctx context.Context, req decide.Request) record.Decision {
			h.mu.Lock()
			h.asked = append(h.asked, req)
			h.mu.Unlock()
			return answer(ctx, req)
		},
		Refused: func(r decide.Refusal) {
			h.mu.Lock()
			h.refused = append(h.refused, r)
			h.mu.Unlock()
		},
	}
	if s.maxConns == 0 {
		s.maxConns, s.maxBody, s.read = decide.MaxConns, decide.MaxLine, decide.ReadTimeout
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

// post sends one request on c and reads its answer.
func post(t *testing.T, c net.Conn, path, auth, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://x"+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func decision(t *testing.T, body string) record.Decision {
	t.Helper()
	var d record.Decision
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("the answer %q is no decision: %v", body, err)
	}
	return d
}

// closed reports whether the server closed c: whatever it still sends is
// followed by EOF.
func closed(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.ReadAll(c)
	return err == nil
}

// TestVendorCallsOnOneConnection: the vendor's requests, one after another
// on the connection it keeps open, are each read, decided and answered; its
// connection is admitted once, and stays open past the read timeout while
// idle (closing it would race the vendor's next request).
func TestVendorCallsOnOneConnection(t *testing.T) {
	h := serve(t, &server{maxConns: 4, maxBody: 1 << 10, read: 200 * time.Millisecond}, nil, func(_ context.Context, req decide.Request) record.Decision {
		if req.Tool == "Bash" {
			return record.DenyDecision("no shell")
		}
		return record.AllowDecision()
	})
	c := dial(t, h.addr)
	for i, tool := range []string{"Read", "Bash", "Read"} {
		if i == 2 {
			time.Sleep(500 * time.Millisecond) // idle past the read timeout
		}
		resp, body := post(t, c, Path, "Bearer "+token, fmt.Sprintf(`{"id":"c%d","tool":%q}`, i, tool))
		d := decision(t, body)
		want := record.Allow
		if tool == "Bash" {
			want = record.Deny
		}
		if resp.StatusCode != 200 || d.Decision != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("call %d (%s): %d %q, want 200 %s", i, tool, resp.StatusCode, body, want)
		}
	}
	if n := h.admits.Load(); n != 1 {
		t.Errorf("Admit was asked %d times for one connection, want once", n)
	}
	if got := h.faults(); len(got) != 0 {
		t.Errorf("refusals %v for the vendor's own requests", got)
	}
}

// TestNotTheVendor: a request without the run's token (none, another, a
// second header beside the right one, another scheme), or on a connection
// Admit refuses (the right token notwithstanding), is answered 401 or 403
// with nothing of why, its connection closed, and told to Refused; nothing
// is decided.
func TestNotTheVendor(t *testing.T) {
	for _, tc := range []struct {
		name   string
		admit  error
		header []string
		status int
		fault  decide.Fault
	}{
		{"no token", nil, nil, 401, decide.FaultToken},
		{"another token", nil, []string{"Bearer " + token + "x"}, 401, decide.FaultToken},
		{"a prefix of it", nil, []string{"Bearer " + token[:10]}, 401, decide.FaultToken},
		{"two headers", nil, []string{"Bearer " + token, "Bearer other"}, 401, decide.FaultToken},
		{"another scheme", nil, []string{"Basic " + token}, 401, decide.FaultToken},
		{"not the vendor's connection", errors.New("pid 7 holds no descriptor of its socket"), []string{"Bearer " + token}, 403, decide.FaultNotVendor},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := serve(t, &server{}, func(net.Addr, net.Addr) error { return tc.admit }, nil)
			c := dial(t, h.addr)
			req, _ := http.NewRequest(http.MethodPost, "http://x"+Path, strings.NewReader(`{"id":"c1","tool":"Bash"}`))
			for _, v := range tc.header {
				req.Header.Add("Authorization", v)
			}
			_ = req.Write(c)
			resp, err := http.ReadResponse(bufio.NewReader(c), req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status || strings.Contains(string(b), "pid") {
				t.Errorf("answered %d %q, want %d and nothing of why", resp.StatusCode, b, tc.status)
			}
			if !closed(c) {
				t.Error("the refused connection was left open")
			}
			if got := h.faults(); len(got) != 1 || got[0] != tc.fault {
				t.Errorf("refusals %v, want [%s]", got, tc.fault)
			}
			if h.answered() != 0 {
				t.Error("a request that was not the vendor's was decided")
			}
		})
	}
}

// TestVendorFaults: the vendor's own request that is not one (another
// path or method, a body past the bound, a body that is no payload, a body
// that does not arrive in time), or that the decider answers with no valid
// decision, is answered with a deny naming the fault, or 404 for what is
// not the endpoint; the fault is told to Refused, and a body left unread
// closes the connection.
func TestVendorFaults(t *testing.T) {
	bad := func(context.Context, decide.Request) record.Decision { return record.Decision{Decision: "maybe"} }
	for _, tc := range []struct {
		name, method, path, body string
		slow                     bool
		answer                   func(context.Context, decide.Request) record.Decision
		status                   int
		fault                    decide.Fault // "" none
		reason                   string
	}{
		{name: "another path", method: "POST", path: "/other", body: `{"id":"c1"}`, status: 404, fault: decide.FaultMalformed},
		{name: "GET", method: "GET", path: Path, status: 404, fault: decide.FaultMalformed},
		{name: "too long", method: "POST", path: Path, body: `{"id":"c1","tool":"` + strings.Repeat("x", 2000) + `"}`, status: 200, fault: decide.FaultTooLong, reason: "1024-byte limit"},
		{name: "no payload", method: "POST", path: Path, body: `[1,2]`, status: 200, fault: decide.FaultMalformed, reason: "not a payload"},
		{name: "slow body", method: "POST", path: Path, body: `{"id":"c1","tool":"Read"}`, slow: true, status: 200, fault: decide.FaultTimeout, reason: "no whole body arrived"},
		{name: "no valid decision", method: "POST", path: Path, body: `{"id":"c1","tool":"Read"}`, answer: bad, status: 200, reason: "no valid decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := serve(t, &server{maxConns: 4, maxBody: 1 << 10, read: 300 * time.Millisecond}, nil, tc.answer)
			c := dial(t, h.addr)
			var resp *http.Response
			var body string
			if tc.slow {
				// The headers promise a body that never comes whole.
				_, _ = fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s", tc.path, token, len(tc.body), tc.body[:5])
				var err error
				resp, err = http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				body = string(b)
			} else {
				req, _ := http.NewRequest(tc.method, "http://x"+tc.path, strings.NewReader(tc.body))
				req.Header.Set("Authorization", "Bearer "+token)
				_ = req.Write(c)
				r, err := http.ReadResponse(bufio.NewReader(c), req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(r.Body)
				resp, body = r, string(b)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("answered %d %q, want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 200 {
				if d := decision(t, body); d.Decision != record.Deny || !strings.Contains(d.Reason, tc.reason) {
					t.Errorf("answered %+v, want a deny naming %q", d, tc.reason)
				}
			}
			got := h.faults()
			if tc.fault == "" && len(got) != 0 || tc.fault != "" && (len(got) != 1 || got[0] != tc.fault) {
				t.Errorf("refusals %v, want [%s]", got, tc.fault)
			}
		})
	}
}

// TestConnectionBound: past MaxConns connections open at once, the next is
// closed unread and told to Refused; the vendor's own, open before, still
// gets its answer.
func TestConnectionBound(t *testing.T) {
	h := serve(t, &server{maxConns: 2, maxBody: 1 << 10, read: 5 * time.Second}, nil, nil)
	first := dial(t, h.addr)
	_ = dial(t, h.addr)
	third := dial(t, h.addr)
	if !closed(third) {
		t.Fatal("a connection past the bound was kept")
	}
	if got := h.faults(); len(got) != 1 || got[0] != decide.FaultTooMany {
		t.Errorf("refusals %v, want [%s]", got, decide.FaultTooMany)
	}
	if resp, body := post(t, first, Path, "Bearer "+token, `{"id":"c1","tool":"Read"}`); resp.StatusCode != 200 || decision(t, body).Decision != record.Allow {
		t.Errorf("the first connection's request: %d %q", resp.StatusCode, body)
	}
}

// TestStopWaitsForAnswers: Serve returns once its context ends, after the
// answer in flight: the decider's context is cancelled, and its deny is
// the last word.
func TestStopWaitsForAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan struct{})
	var ended atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, Endpoint{Token: token, Read: readBody, Write: writeDecision,
			Answer: func(ctx context.Context, _ decide.Request) record.Decision {
				close(asked)
				<-ctx.Done()
				time.Sleep(50 * time.Millisecond)
				ended.Store(true)
				return record.DenyDecision("the run ended")
			}})
	}()
	c := dial(t, ln.Addr().String())
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://x"+Path, strings.NewReader(`{"id":"c1","tool":"Read"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		_ = req.Write(c)
	}()
	<-asked
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !ended.Load() {
		t.Error("Serve returned before the answer in flight")
	}
}

// TestEndpointNeedsAToken: an endpoint without a token, or without a part,
// is refused before it listens.
func TestEndpointNeedsAToken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := Serve(context.Background(), ln, Endpoint{Read: readBody, Write: writeDecision, Answer: func(context.Context, decide.Request) record.Decision { return record.AllowDecision() }}); err == nil {
		t.Error("an endpoint without a token served")
	}
}

// TestMain: no test leaves a goroutine of the server's behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConnectionWithoutARequest: a connection that ends without a request
// reaching the endpoint (garbage net/http answers 400 itself, or nothing
// at all within the read timeout) is told to Refused, so that the record
// shows someone knocked.
func TestConnectionWithoutARequest(t *testing.T) {
	for name, send := range map[string]string{"garbage": "NOT HTTP AT ALL\r\n\r\n", "silence": ""} {
		t.Run(name, func(t *testing.T) {
			h := serve(t, &server{maxConns: 4, maxBody: 1 << 10, read: 200 * time.Millisecond}, nil, nil)
			c := dial(t, h.addr)
			_, _ = io.WriteString(c, send)
			if !closed(c) {
				t.Fatal("the connection was kept")
			}
			deadline := time.Now().Add(5 * time.Second)
			for len(h.faults()) == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if got := h.faults(); len(got) != 1 || got[0] != decide.FaultIncomplete {
				t.Errorf("refusals %v, want [%s]", got, decide.FaultIncomplete)
			}
		})
	}
}
