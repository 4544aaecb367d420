package loopback

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestGateEnv(t *testing.T) {
	p := start(t, "https://api.anthropic.com", nil)
	base, gate, ph := p.BaseURL(), p.GateURL(), p.Placeholder()
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasPrefix(gate, "http://127.0.0.1:") || gate == base ||
		!strings.HasPrefix(ph, "mh-run-test-") || len(ph) != len("mh-run-test-")+24 {
		t.Fatalf("base %q gate %q placeholder shape %d", base, gate, len(ph))
	}
	want := map[string]string{
		"HTTPS_PROXY": gate, "HTTP_PROXY": gate, "ALL_PROXY": gate, "https_proxy": gate, "http_proxy": gate, "all_proxy": gate,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
	got, err := p.GateEnv()
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Fatalf("gate env (-want +got): %s %v", d, err)
	}
	// Two proxies never share a placeholder.
	if q := start(t, "https://api.anthropic.com", nil); q.Placeholder() == ph {
		t.Fatal("placeholders repeat")
	}
}

// TestCloseIsBounded: a stream that would never end is cut once the grace
// runs out; Close returns and nothing is left running.
func TestCloseIsBounded(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	started := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer up.Close()
	p, err := New(Config{Upstream: up.URL, Token: TokenSource{Env: "TOK"}, LookupEnv: lookup(map[string]string{"TOK": realToken}),
		ShutdownGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", p.BaseURL()+"/v1/messages", strings.NewReader("{}"))
	req.Header.Set("x-api-key", p.Placeholder())
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wait(t, started, "the stream to start")
	closed := make(chan error, 1)
	go func() { closed <- p.Close() }()
	select {
	case <-closed:
	case <-time.After(backstop):
		t.Fatal("Close did not return")
	}
	if rec := p.Records(); len(rec) != 1 || rec[0].Error == "" {
		t.Fatalf("the cut stream was not recorded as cut: %+v", rec)
	}
}
