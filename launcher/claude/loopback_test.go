package claude

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/loopback"
)

// startProxy starts a loopback proxy (on a unix socket when sock is set) for
// the environment it gives a child; nothing is sent through it.
func startProxy(t *testing.T, sock string) *loopback.Proxy {
	t.Helper()
	p, err := loopback.New(loopback.Config{
		Upstream: "https://api.anthropic.com", Token: loopback.TokenSource{Env: "TOK"}, Unix: sock, RunID: "test",
		LookupEnv: func(k string) (string, bool) { return "sk-test-REAL", k == "TOK" },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestLoopbackEnv(t *testing.T) {
	p := startProxy(t, "")
	base, ph := p.BaseURL(), p.Placeholder()
	want := map[string]string{
		"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": ph, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"HTTPS_PROXY": base, "HTTP_PROXY": base, "ALL_PROXY": base, "https_proxy": base, "http_proxy": base, "all_proxy": base,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
	got, err := Kind{}.LoopbackEnv(p)
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Fatalf("claude env (-want +got): %s %v", d, err)
	}
	if _, ok := got["ANTHROPIC_API_KEY"]; ok || strings.Contains(ph, "sk-test-REAL") {
		t.Fatal("the child would report an API key, or hold the real one")
	}

	sock := filepath.Join(t.TempDir(), "proxy.sock")
	env, err := Kind{}.LoopbackEnv(startProxy(t, sock))
	if err != nil || env["ANTHROPIC_UNIX_SOCKET"] != sock || env["ANTHROPIC_BASE_URL"] != "http://localhost" || env["HTTPS_PROXY"] != "" {
		t.Fatalf("claude env on a socket: %v %v", env, err)
	}
}
