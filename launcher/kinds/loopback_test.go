package kinds

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/launcher/codex"
	"github.com/metaharness/metaharness/launcher/gemini"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
)

// startProxy starts a loopback proxy (on a unix socket when sock is set) for
// the environment it gives a child; nothing is sent through it.
func startProxy(t *testing.T, sock string) *loopback.Proxy {
	t.Helper()
	p, err := loopback.New(loopback.Config{
		Upstream: "https://api.example.com", Token: loopback.TokenSource{Env: "TOK"}, Unix: sock, RunID: "test",
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

// TestLoopbackEnvs: each kind's child reaches its model through the proxy
// under the vendor's own variables, beside the egress gate's, and holds the
// placeholder and never the real token; on a unix socket only a kind that
// can use one gets an environment.
func TestLoopbackEnvs(t *testing.T) {
	p := startProxy(t, "")
	base, ph, g := p.BaseURL(), p.Placeholder(), p.GateURL()
	gate := map[string]string{
		"HTTPS_PROXY": g, "HTTP_PROXY": g, "ALL_PROXY": g, "https_proxy": g, "http_proxy": g, "all_proxy": g,
		"NO_PROXY": "localhost,127.0.0.1,::1", "no_proxy": "localhost,127.0.0.1,::1",
	}
	with := func(own map[string]string) map[string]string {
		for k, v := range gate {
			own[k] = v
		}
		return own
	}
	want := map[string]map[string]string{
		"claude": with(map[string]string{"ANTHROPIC_BASE_URL": base, "ANTHROPIC_AUTH_TOKEN": ph, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}),
		"codex":  with(map[string]string{codex.KeyEnv: ph}),
		"gemini": with(map[string]string{gemini.KeyEnv: ph, "GOOGLE_GEMINI_BASE_URL": base}),
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	onSocket := startProxy(t, sock)
	for _, k := range table {
		name := k.Descriptor().Name
		lc, ok := k.(kind.LoopbackClient)
		if !ok {
			if want[name] != nil {
				t.Errorf("%s has no loopback environment", name)
			}
			continue
		}
		got, err := lc.LoopbackEnv(p)
		if d := cmp.Diff(want[name], got); err != nil || d != "" {
			t.Errorf("%s env (-want +got): %s %v", name, d, err)
		}
		for k, v := range got {
			if strings.Contains(v, "sk-test-REAL") {
				t.Errorf("%s: %s holds the real token", name, k)
			}
		}
		env, err := lc.LoopbackEnv(onSocket)
		switch name {
		case "claude":
			if err != nil || env["ANTHROPIC_UNIX_SOCKET"] != sock || env["ANTHROPIC_BASE_URL"] != "http://localhost" || env["HTTPS_PROXY"] != "" {
				t.Errorf("claude env on a socket: %v %v", env, err)
			}
		case "codex", "gemini":
			if err == nil {
				t.Errorf("%s was given an environment for a unix socket", name)
			}
		}
	}
}

// TestCodexProvider: the provider table codex's config reaches the proxy
// by, with bounded retries and no placeholder in it.
func TestCodexProvider(t *testing.T) {
	p := startProxy(t, "")
	id, toml, err := codex.Kind{}.LoopbackProvider(p)
	want := fmt.Sprintf(`[model_providers.metaharness_loopback]
name = "metaharness_loopback"
base_url = "%s/v1"
wire_api = "responses"
env_key = "METAHARNESS_LOOPBACK_KEY"
request_max_retries = 0
stream_max_retries = 1
stream_idle_timeout_ms = 300000
`, p.BaseURL())
	if d := cmp.Diff(want, toml); err != nil || id != codex.ProviderID || d != "" {
		t.Fatalf("codex provider %s (-want +got): %s %v", id, d, err)
	}
	if strings.Contains(toml, p.Placeholder()) {
		t.Fatal("the provider table holds the placeholder; it belongs in the environment")
	}
	if _, _, err := (codex.Kind{}).LoopbackProvider(startProxy(t, filepath.Join(t.TempDir(), "p.sock"))); err == nil {
		t.Fatal("codex was given a provider on a unix socket")
	}
}
