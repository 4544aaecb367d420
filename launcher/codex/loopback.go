package codex

import (
	"fmt"

	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
)

var _ kind.ModelProvider = Kind{}

// LoopbackEnv holds the placeholder under KeyEnv (when it is the child's
// key; else the provider entry sends it in the run header), beside the
// egress gate's variables; the provider entry (LoopbackProvider) names the
// proxy. Codex
// cannot reach a proxy on a unix socket.
func (Kind) LoopbackEnv(p *loopback.Proxy) (map[string]string, error) {
	if p.SocketPath() != "" {
		return nil, fmt.Errorf("codex cannot reach a proxy on a unix socket; listen on 127.0.0.1 instead")
	}
	env, err := p.GateEnv()
	if err != nil {
		return nil, err
	}
	if p.Credentials() == loopback.AttachToken {
		env[KeyEnv] = p.Placeholder()
	}
	return env, nil
}

// LoopbackProvider is the provider table a run's scratch config.toml holds,
// for an embedder's own CODEX_HOME; the config also needs, before any
// table, model_provider = "metaharness_loopback".
func (Kind) LoopbackProvider(p *loopback.Proxy) (string, string, error) {
	if p.BaseURL() == "" || p.SocketPath() != "" {
		return "", "", fmt.Errorf("codex needs the loopback proxy started on 127.0.0.1, not a unix socket")
	}
	var t toml
	providerTable(&t, provider{ProviderID, p.BaseURL(), KeyEnv, nil})
	return ProviderID, t.String()[1:], nil
}
