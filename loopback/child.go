package loopback

import (
	"fmt"
	"strconv"
	"strings"
)

// The child kinds ChildEnv knows.
const (
	KindClaude = "claude"
	KindCodex  = "codex"
)

// Codex reaches the proxy through a model provider of this id, whose key
// it reads from CodexKeyEnv.
const (
	CodexProviderID = "metaharness_loopback"
	CodexKeyEnv     = "METAHARNESS_LOOPBACK_KEY"
)

// noProxy keeps the child's loopback traffic (the proxy itself, its MCP
// servers) direct.
const noProxy = "localhost,127.0.0.1,::1"

// ChildEnv is what a child of kind needs in its environment to reach the
// upstream only through this proxy and any other host only through the
// egress gate:
//
//   - claude: ANTHROPIC_BASE_URL (the proxy; Claude Code appends
//     /v1/messages), ANTHROPIC_AUTH_TOKEN = the placeholder (sent as
//     Authorization: Bearer; ANTHROPIC_API_KEY is left out so the child's
//     record does not report an API key it does not hold), and
//     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (its telemetry would only be
//     refused at the gate). On a unix socket: ANTHROPIC_UNIX_SOCKET too.
//   - codex: CodexKeyEnv = the placeholder; the provider entry is
//     CodexProviderTOML.
//
// Both get HTTPS_PROXY, HTTP_PROXY and ALL_PROXY (upper and lower case)
// pointing at the gate and NO_PROXY covering loopback, except on a unix
// socket, which no proxy variable can name. Codex cannot use a unix socket.
func (p *Proxy) ChildEnv(kind string) (map[string]string, error) {
	if p.baseURL == "" {
		return nil, fmt.Errorf("the loopback proxy is not started; call Start before ChildEnv")
	}
	env := map[string]string{}
	switch kind {
	case KindClaude:
		env["ANTHROPIC_BASE_URL"] = p.baseURL
		env["ANTHROPIC_AUTH_TOKEN"] = p.Placeholder()
		env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
		if p.cfg.Unix != "" {
			env["ANTHROPIC_UNIX_SOCKET"] = p.cfg.Unix
		}
	case KindCodex:
		if p.cfg.Unix != "" {
			return nil, fmt.Errorf("codex cannot reach a proxy on a unix socket; listen on 127.0.0.1 instead")
		}
		env[CodexKeyEnv] = p.Placeholder()
	default:
		return nil, fmt.Errorf("no child environment for kind %q; the loopback proxy serves claude and codex", kind)
	}
	if p.cfg.Unix == "" {
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
			env[k] = p.baseURL
			env[strings.ToLower(k)] = p.baseURL
		}
		env["NO_PROXY"], env["no_proxy"] = noProxy, noProxy
	}
	return env, nil
}

// CodexProviderTOML is the provider table for the scratch CODEX_HOME's
// config.toml. The launcher also writes, before any table,
// model_provider = "metaharness_loopback". No retries: SPEC §3.3 wants none
// silent, and a refused connection must fail at once.
func (p *Proxy) CodexProviderTOML() (string, error) {
	if p.baseURL == "" || p.cfg.Unix != "" {
		return "", fmt.Errorf("codex needs the loopback proxy started on 127.0.0.1, not a unix socket")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[model_providers.%s]\n", CodexProviderID)
	fmt.Fprintf(&b, "name = %s\n", strconv.Quote(CodexProviderID))
	fmt.Fprintf(&b, "base_url = %s\n", strconv.Quote(p.baseURL+"/v1"))
	b.WriteString("wire_api = \"responses\"\n")
	fmt.Fprintf(&b, "env_key = %s\n", strconv.Quote(CodexKeyEnv))
	b.WriteString("request_max_retries = 0\nstream_max_retries = 0\n")
	return b.String(), nil
}
