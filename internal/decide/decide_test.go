package decide

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/metaharness/metaharness/record"
)

var allow = func(context.Context, Request) record.Decision { return record.AllowDecision() }

var small = Request{Seam: record.SeamHook, CallID: "c", Tool: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}

// refusals collects what Options.Refused hears.
type refusals struct {
	mu  sync.Mutex
	got []Refusal
}

func (r *refusals) add(x Refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, x)
}

func (r *refusals) faults() []Fault {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Fault
	for _, x := range r.got {
		out = append(out, x.Fault)
	}
	return out
}

// serving runs a server with lim on a socket in a fresh directory and
// returns the socket's path; the server stops with the test.
func serving(t *testing.T, lim limits, answer func(context.Context, Request) record.Decision, refused *refusals) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "decisions.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- newServer(answer, Options{Refused: refused.add}, lim).serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return sock
}

// answerOn reads the one answer line a raw connection gets.
func answerOn(t *testing.T, c net.Conn) record.Decision {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := readLine(c, MaxLine, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	d, err := ParseDecision(line)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func wantDeny(t *testing.T, d record.Decision, says string) {
	t.Helper()
	if d.Decision != record.Deny || !strings.Contains(d.Reason, says) {
		t.Errorf("answer %+v, want a deny saying %q", d, says)
	}
}

func ask(t *testing.T, sock string, req Request) record.Decision {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := Dial(sock).Ask(ctx, req)
	if err != nil {
		t.Fatalf("ask: %v", err)
	}
	return d
}

// TestDeadline: an answerer that never answers is cut off
// at the asker's deadline and the call is denied.
func TestDeadline(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sock := filepath.Join(t.TempDir(), "slow.sock")
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ln, func(ctx context.Context, _ Request) record.Decision {
			<-ctx.Done()
			return record.AllowDecision()
		}, Options{})
	}()
	askCtx, askCancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer askCancel()
	_, err = Dial(sock).Ask(askCtx, Request{Seam: "owned_tool", CallID: "c", Tool: "t"})
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("want the deadline, got %v", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestAnySocketPath: the channel listens and is dialled at a path of any
// length, and through a symbolic link; the listener names the path it was
// given and its Close removes the socket. A relative path is refused.
func TestAnySocketPath(t *testing.T) {
	base := t.TempDir()
	deep := filepath.Join(base, strings.Repeat("d", 120), strings.Repeat("e", 100))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deep, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(deep, "decisions.sock")
	deeper := filepath.Join(deep, strings.Repeat("f", 100))
	if err := os.Mkdir(deeper, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sock, real string }{
		{long, long}, // 200+ bytes
		{filepath.Join(base, "link", "decisions.sock"), long},                                                           // short, through a link
		{filepath.Join(base, "link", filepath.Base(deeper), "decisions.sock"), filepath.Join(deeper, "decisions.sock")}, // long, through a link
	} {
		ln, err := Listen(c.sock)
		if err != nil {
			t.Fatalf("%d-byte path: %v", len(c.sock), err)
		}
		if ln.Addr().String() != c.sock {
			t.Errorf("Addr %s, want %s", ln.Addr(), c.sock)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- Serve(ctx, ln, allow, Options{}) }()
		if d := ask(t, c.sock, small); d.Decision != record.Allow {
			t.Errorf("%d-byte path: %+v", len(c.sock), d)
		}
		if d := ask(t, c.real, small); d.Decision != record.Allow {
			t.Errorf("the same socket by its real path: %+v", d)
		}
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := os.Lstat(c.real); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%d-byte path: the socket is left after Close: %v", len(c.sock), err)
		}
	}
	if len(long) < 200 {
		t.Fatalf("the long path is only %d bytes", len(long))
	}
	if _, err := Listen("decisions.sock"); err == nil || !strings.Contains(err.Error(), `the decision socket "decisions.sock" is not an absolute path`) {
		t.Errorf("relative listen: %v", err)
	}
	if _, err := Dial("run/decisions.sock").Ask(context.Background(), small); err == nil || !strings.Contains(err.Error(), `"run/decisions.sock" is not an absolute path`) {
		t.Errorf("relative dial: %v", err)
	}
	if _, err := Dial(filepath.Join(deep, "nothing.sock")).Ask(context.Background(), small); err == nil {
		t.Error("dialled a socket that is not there")
	}
}

// TestAnOverLongLineIsDenied: a request past MaxLine is answered deny
// naming the limit and heard of by Refused, and the channel goes on; the
// asker does not send one at all.
func TestAnOverLongLineIsDenied(t *testing.T) {
	var heard refusals
	sock := serving(t, defaultLimits, allow, &heard)
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = c.Write(bytes.Repeat([]byte("x"), MaxLine+1)) }()
	wantDeny(t, answerOn(t, c), "its line is longer than the decision channel's 16842752-byte limit")
	if d := ask(t, sock, small); d.Decision != record.Allow {
		t.Errorf("the channel did not go on: %+v", d)
	}
	if got := heard.faults(); len(got) != 1 || got[0] != FaultTooLong {
		t.Errorf("Refused heard %v, want one %s", got, FaultTooLong)
	}

	big := small
	big.Input = json.RawMessage(`{"content":"` + strings.Repeat("<", MaxLine) + `"}`)
	_, err = Dial(sock).Ask(context.Background(), big)
	if err == nil || !strings.Contains(err.Error(), "past the decision channel's 16842752-byte line limit, so it was not sent") {
		t.Errorf("an over-long ask: %v", err)
	}
	// The largest input a request is built for fits, unescaped.
	big.Input = json.RawMessage(`{"content":"` + strings.Repeat("<", MaxInput-64) + `"}`)
	if d := ask(t, sock, big); d.Decision != record.Allow {
		t.Errorf("a MaxInput request: %+v", d)
	}
}

// TestAnIdleConnectionIsDropped: a connection that sends no whole line
// within the read limit is answered deny and dropped.
func TestAnIdleConnectionIsDropped(t *testing.T) {
	var heard refusals
	lim := defaultLimits
	lim.read = 100 * time.Millisecond
	sock := serving(t, lim, allow, &heard)
	for _, partial := range []string{"", `{"seam":`} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(partial))
		wantDeny(t, answerOn(t, c), "no whole request line arrived within 100ms")
		c.Close()
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.Write([]byte(`{"seam":`))
	_ = c.(*net.UnixConn).CloseWrite()
	wantDeny(t, answerOn(t, c), "the connection ended before a whole request line")
	c.Close()
	if got := heard.faults(); len(got) != 3 || got[0] != FaultTimeout || got[1] != FaultTimeout || got[2] != FaultIncomplete {
		t.Errorf("Refused heard %v", got)
	}
}

// TestConnectionBound: past the bound the oldest connection still sending
// is cut off and a real request gets its answer; when every connection is
// waiting for its answer, the new one is refused at once.
func TestConnectionBound(t *testing.T) {
	var heard refusals
	lim := defaultLimits
	lim.conns = 4
	release := make(chan struct{})
	sock := serving(t, lim, func(ctx context.Context, req Request) record.Decision {
		if req.CallID == "wait" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return record.AllowDecision()
	}, &heard)
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	time.Sleep(50 * time.Millisecond) // accepted, in order
	if d := ask(t, sock, small); d.Decision != record.Allow {
		t.Errorf("a request past the bound of idle connections: %+v", d)
	}
	wantDeny(t, answerOn(t, idle[0]), "more than 4 connections to the decision channel were open at once")

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := small
			w.CallID = "wait"
			for ask(t, sock, w).Decision != record.Allow { // cut off while sending: again
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Until the four are all waiting, this one may still be cut off
		// as the oldest sending.
		if d := ask(t, sock, small); strings.Contains(d.Reason, "4 requests were already waiting for their answers") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("four waiting requests never filled the channel")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if d := ask(t, sock, small); d.Decision != record.Allow {
		t.Errorf("after the waits: %+v", d)
	}
}

// TestBudget: lines held across connections past the budget are refused,
// each to the connection that would pass it, and a small request still
// gets its answer.
func TestBudget(t *testing.T) {
	var heard refusals
	lim := defaultLimits
	lim.budget = 256 << 10
	sock := serving(t, lim, allow, &heard)
	var conns []net.Conn
	var over int
	for range 8 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
		if _, err := c.Write(bytes.Repeat([]byte("x"), 100<<10)); err != nil {
			over++ // already refused and closed
		}
	}
	time.Sleep(100 * time.Millisecond)
	if d := ask(t, sock, small); d.Decision != record.Allow {
		t.Errorf("a small request beside the held lines: %+v", d)
	}
	for _, f := range heard.faults() {
		if f == FaultBudget {
			over++
		}
	}
	if over == 0 {
		t.Fatalf("8 lines of 100 KiB fit a 256 KiB budget; Refused heard %v", heard.faults())
	}
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if line, err := readLine(c, MaxLine, nil); err == nil {
			if d, _ := ParseDecision(line); !strings.Contains(d.Reason, "the request lines held at once would pass the decision channel's 262144-byte budget") {
				t.Errorf("answer %+v", d)
			}
		}
	}
}

// TestAMalformedRequestIsDenied: a request the strict reader refuses is
// answered deny naming the key, and Refused hears of it.
func TestAMalformedRequestIsDenied(t *testing.T) {
	var heard refusals
	sock := serving(t, defaultLimits, allow, &heard)
	for line, says := range map[string]string{
		`{"seam":"hook","call_id":"c","tool":"Bash","tool":"Read"}`:     `the key "tool" is given twice in the top-level object`,
		`{"seam":"hook","call_id":"c","tool":"Bash","Tool":"Read"}`:     `the key "Tool" in the top-level object is "tool" spelled in another case`,
		`{"seam":"hook","call_id":"c","tool":"Bash","decided":"allow"}`: `the key "decided" in the top-level object is not one of its keys`,
		`{"seam":"hook","tool":"Bash"}`:                                 `lacks seam, call_id or tool`,
	} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write([]byte(line + "\n"))
		wantDeny(t, answerOn(t, c), says)
		c.Close()
	}
	if got := heard.faults(); len(got) != 4 || got[0] != FaultMalformed {
		t.Errorf("Refused heard %v", got)
	}
}

// TestStrictAnswers: an answer line with a key given twice, in another
// case or unknown is no decision, so the asker's caller denies.
func TestStrictAnswers(t *testing.T) {
	for line, says := range map[string]string{
		`{"decision":"deny","reason":"no","decision":"allow"}`: `the key "decision" is given twice`,
		`{"decision":"deny","Decision":"allow","reason":"x"}`:  `the key "Decision" in the top-level object is "decision" spelled in another case`,
		`{"decision":"allow","scope":"all"}`:                   `the key "scope" in the top-level object is not one of its keys (decision, reason, input)`,
	} {
		if _, err := ParseDecision([]byte(line)); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v", line, err)
		}
	}
}

// FuzzLines: the decision channel's two line parsers take any
// bytes without a panic, and what they accept is valid.
func FuzzLines(f *testing.F) {
	for _, s := range []string{`{"decision":"allow"}`, `{"decision":"deny","reason":"no"}`, `{"decision":"replace","input":{"path":"x"}}`,
		`{"decision":"deny"}`, `{"decision":"allow","x":1}`, `{"seam":"owned_tool","call_id":"c","tool":"t","entry":"fs.read","operation":"file.read","subjects":["file:a"],"input":{}}`, `null`,
		`{"decision":"deny","reason":"no","decision":"allow"}`, `{"decision":"allow","Decision":"deny"}`,
		`{"seam":"hook","call_id":"c","tool":"Bash","tool":"Read"}`, `{"seam":"hook","call_id":"c","Call_Id":"d","tool":"Bash"}`,
		`{"seam":"hook","call_id":"c","tool":"Bash","input":{"command":"ls","command":"rm -rf /"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if d, err := ParseDecision(line); err == nil {
			if err := d.Validate(); err != nil {
				t.Fatalf("accepted an invalid decision %s: %v", line, err)
			}
		}
		if req, err := ParseRequest(line); err == nil && (req.Seam == "" || req.CallID == "" || req.Tool == "") {
			t.Fatalf("accepted a request without seam, call_id or tool: %s", line)
		}
	})
}
