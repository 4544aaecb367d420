package codex

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/loopback"
)

func startProxy(t *testing.T, sock string) *loopback.Proxy {
	t.Helper()
	p, err := loopback.New(loopback.Config{
		Upstream: "https://api.openai.com", Header: loopback.BearerHeader, Token: loopback.TokenSource{Env: "TOK"}, Unix: sock, RunID: "test",
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

func TestLoopbackEnvAndProvider(t *testing.T) {
	p := startProxy(t, "")
	base, ph := p.BaseURL(), p.Placeholder()
	want := map[string]string{
		KeyEnv:        ph,
		"HTTPS_PROXY": base, "HTTP_PROXY": base, "ALL_PROXY": base, "https_proxy": base, "http_proxy": base, "all_proxy": base,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
	got, err := Kind{}.LoopbackEnv(p)
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Fatalf("codex env (-want +got): %s %v", d, err)
	}
	id, toml, err := Kind{}.LoopbackProvider(p)
	wantTOML := fmt.Sprintf(`[model_providers.metaharness_loopback]
name = "metaharness_loopback"
base_url = "%s/v1"
wire_api = "responses"
env_key = "METAHARNESS_LOOPBACK_KEY"
request_max_retries = 0
stream_max_retries = 0
`, base)
	if d := cmp.Diff(wantTOML, toml); err != nil || id != ProviderID || d != "" {
		t.Fatalf("codex provider %s (-want +got): %s %v", id, d, err)
	}
	if strings.Contains(toml, ph) {
		t.Fatal("the provider table holds the placeholder; it belongs in the environment")
	}

	onSocket := startProxy(t, filepath.Join(t.TempDir(), "proxy.sock"))
	if _, err := (Kind{}).LoopbackEnv(onSocket); err == nil {
		t.Fatal("codex was given an environment for a unix socket")
	}
	if _, _, err := (Kind{}).LoopbackProvider(onSocket); err == nil {
		t.Fatal("codex was given a provider on a unix socket")
	}
}
