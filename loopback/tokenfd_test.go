package loopback

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/exit"
)

// fdOf is a pipe's read end as a bare descriptor, with content written
// into its write end (closed after unless keepOpen), and that write end.
func fdOf(t *testing.T, content string, keepOpen bool) (int, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if keepOpen {
		t.Cleanup(func() { _ = w.Close() })
	} else {
		_ = w.Close()
	}
	// The proxy owns the descriptor from here: a copy, so r's finalizer
	// cannot close it under the test.
	fd, err := syscall.Dup(int(r.Fd()))
	_ = r.Close()
	if err != nil {
		t.Fatal(err)
	}
	return fd, w
}

// TestTokenFD: the token read from an inherited pipe, once, to its first
// newline, and the descriptor closed; nothing to re-read after a 401.
func TestTokenFD(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("hello"))
	defer up.Close()
	fd, w := fdOf(t, realToken+"\nignored after the newline", true)
	p := start(t, up.URL(), func(c *Config) { c.Token = TokenSource{FD: &fd}; c.LookupEnv = nil })
	status, _ := send(t, newClient(t), p, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{}`)
	if status != 200 || up.Requests()[0].Credential() != realToken {
		t.Fatalf("status %d, upstream credential %q", status, up.Requests()[0].Credential())
	}
	if _, err := w.WriteString("more"); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("writing after the token: %v, want EPIPE (the proxy closed its end)", err)
	}
	if tok, err := p.tokens.refresh(realToken); tok != "" || err != nil {
		t.Errorf("refresh after a 401: %q %v, want the 401 to stand", tok, err)
	}
}

// TestTokenFDRefusals: stdio, a descriptor that is not open, an empty
// stream and one on which nothing arrives are refused by name.
func TestTokenFDRefusals(t *testing.T) {
	saved := fdWait
	fdWait = 200 * time.Millisecond
	defer func() { fdWait = saved }()
	pipe := func(content string, keepOpen bool) func() int {
		return func() int { fd, _ := fdOf(t, content, keepOpen); return fd }
	}
	for _, c := range []struct {
		fd   func() int
		name exit.Name
		want string
	}{
		{func() int { return 1 }, RefuseTokenUnreadable, "descriptors 0, 1 and 2"},
		{func() int { fd := pipe("", false)(); _ = syscall.Close(fd); return fd }, RefuseTokenUnreadable, "is not an open descriptor"},
		{pipe("\n", false), RefuseTokenMissing, "carried no token"},
		{pipe("", true), RefuseTokenUnreadable, "no token arrived within"},
	} {
		fd := c.fd()
		_, err := New(Config{Upstream: "https://api.anthropic.com", Token: TokenSource{FD: &fd}})
		var r *exit.Refusal
		if !errors.As(err, &r) || r.Name != c.name || !strings.Contains(r.Message, c.want) {
			t.Errorf("fd %d: %v, want %s naming %q", fd, err, c.name, c.want)
		}
	}
	fd := 7
	_, err := New(Config{Upstream: "https://api.anthropic.com", Token: TokenSource{Env: "X", FD: &fd}})
	var r *exit.Refusal
	if !errors.As(err, &r) || r.Name != RefuseTokenSourceAmbiguous || !strings.Contains(r.Message, "--token-env X and --token-fd 7") {
		t.Errorf("two sources: %v", err)
	}
}

// TestServeAnotherListener: a listener opened elsewhere is served like the
// proxy's own model route, and closed with it.
func TestServeAnotherListener(t *testing.T) {
	up := scripted.NewAnthropicServer(scripted.Texts("hello"))
	defer up.Close()
	p := start(t, up.URL(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ServeModel(ln); err != nil {
		t.Fatal(err)
	}
	other := &Proxy{baseURL: "http://" + ln.Addr().String()}
	status, _ := send(t, newClient(t), other, "POST", "/v1/messages", map[string]string{"x-api-key": p.Placeholder()}, `{}`)
	if status != 200 || len(up.Requests()) != 1 {
		t.Fatalf("through the other listener: status %d, %d upstream requests", status, len(up.Requests()))
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		_ = c.Close()
		t.Error("the other listener still accepts after Close")
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := p.ServeModel(ln2); err == nil {
		t.Error("ServeModel after Close was accepted")
	}
}
