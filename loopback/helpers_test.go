package loopback

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// realToken stands for the operator's real key in every test.
const realToken = "sk-test-REAL-0123456789abcdef"

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// syncBuffer is a log sink the proxy's goroutines may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// debugLogger logs everything, at debug level, into the returned buffer.
func debugLogger() (*zap.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(buf), zapcore.DebugLevel)
	return zap.New(core), buf
}

// start builds and starts a proxy in front of upstream whose token is
// realToken in $TOK; mod adjusts the config first.
func start(t testing.TB, upstream string, mod func(*Config)) *Proxy {
	t.Helper()
	cfg := Config{Upstream: upstream, Token: TokenSource{Env: "TOK"}, LookupEnv: lookup(map[string]string{"TOK": realToken}), RunID: "test"}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// send makes one request to the proxy's reverse endpoint with the given
// headers and returns the status and the whole body.
func send(t testing.TB, c *http.Client, p *Proxy, method, path string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, p.BaseURL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

// newClient is a client with its own connections, closed at cleanup.
func newClient(t testing.TB) *http.Client {
	tr := &http.Transport{Proxy: nil}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
