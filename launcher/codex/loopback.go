package codex

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/loopback"
)

var _ launcher.ModelProvider = Kind{}

// Codex reaches the proxy through a model provider of this id, whose key it
// reads from KeyEnv.
const (
	ProviderID = "metaharness_loopback"
	KeyEnv     = "METAHARNESS_LOOPBACK_KEY"
)

// LoopbackEnv holds the placeholder under KeyEnv, beside the egress gate's
// variables; the provider entry (LoopbackProvider) names the proxy. Codex
// cannot reach a proxy on a unix socket.
func (Kind) LoopbackEnv(p *loopback.Proxy) (map[string]string, error) {
	if p.SocketPath() != "" {
		return nil, fmt.Errorf("codex cannot reach a proxy on a unix socket; listen on 127.0.0.1 instead")
	}
	env, err := p.GateEnv()
	if err != nil {
		return nil, err
	}
	env[KeyEnv] = p.Placeholder()
	return env, nil
}

// LoopbackProvider is the provider table for the scratch CODEX_HOME's
// config.toml; the launch also writes, before any table,
// model_provider = "metaharness_loopback". No retries: SPEC §3.3 wants none
// silent, and a refused connection must fail at once.
func (Kind) LoopbackProvider(p *loopback.Proxy) (string, string, error) {
	if p.BaseURL() == "" || p.SocketPath() != "" {
		return "", "", fmt.Errorf("codex needs the loopback proxy started on 127.0.0.1, not a unix socket")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[model_providers.%s]\n", ProviderID)
	fmt.Fprintf(&b, "name = %s\n", strconv.Quote(ProviderID))
	fmt.Fprintf(&b, "base_url = %s\n", strconv.Quote(p.BaseURL()+"/v1"))
	b.WriteString("wire_api = \"responses\"\n")
	fmt.Fprintf(&b, "env_key = %s\n", strconv.Quote(KeyEnv))
	b.WriteString("request_max_retries = 0\nstream_max_retries = 0\n")
	return ProviderID, b.String(), nil
}
