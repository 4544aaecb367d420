package claude

import (
	"maps"

	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
)

var _ kind.LoopbackClient = Kind{}

// LoopbackEnv points Claude Code at the proxy: ANTHROPIC_BASE_URL (it
// appends /v1/messages), ANTHROPIC_AUTH_TOKEN = the placeholder (sent as
// Authorization: Bearer; ANTHROPIC_API_KEY is left out so the child's record
// does not report an API key it does not hold) or, where the child's key is
// its own (pass-through, none), the placeholder in the run header
// (ANTHROPIC_CUSTOM_HEADERS), and
// CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 (its telemetry would only be
// refused at the gate); on a unix socket ANTHROPIC_UNIX_SOCKET too. The
// egress gate's variables come with it.
func (Kind) LoopbackEnv(p *loopback.Proxy) (map[string]string, error) {
	env, err := p.GateEnv()
	if err != nil {
		return nil, err
	}
	maps.Copy(env, map[string]string{
		"ANTHROPIC_BASE_URL":                       p.BaseURL(),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
	})
	if p.Credentials() == loopback.AttachToken {
		env["ANTHROPIC_AUTH_TOKEN"] = p.Placeholder()
	} else {
		// The child's credential is its own (or a stand-in); the
		// placeholder proves its requests the run's child's.
		env["ANTHROPIC_CUSTOM_HEADERS"] = loopback.RunHeader + ": " + p.Placeholder()
	}
	if s := p.SocketPath(); s != "" {
		env["ANTHROPIC_UNIX_SOCKET"] = s
	}
	return env, nil
}
