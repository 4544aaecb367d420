package gemini

import (
	"fmt"
	"maps"

	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
)

var _ kind.LoopbackClient = Kind{}

// LoopbackEnv points Gemini CLI at the proxy: GOOGLE_GEMINI_BASE_URL (it
// appends /v1beta/models/MODEL:…), and GEMINI_API_KEY the placeholder
// (sent as x-goog-api-key) or, where the child's key is its own
// (pass-through, none), the placeholder in the run header
// (GEMINI_CLI_CUSTOM_HEADERS). The egress gate's variables come with it.
// Gemini CLI cannot reach a proxy on a unix socket.
func (Kind) LoopbackEnv(p *loopback.Proxy) (map[string]string, error) {
	if p.SocketPath() != "" {
		return nil, fmt.Errorf("gemini cannot reach a proxy on a unix socket; listen on 127.0.0.1 instead")
	}
	env, err := p.GateEnv()
	if err != nil {
		return nil, err
	}
	maps.Copy(env, map[string]string{"GOOGLE_GEMINI_BASE_URL": p.BaseURL()})
	if p.Credentials() == loopback.AttachToken {
		env[KeyEnv] = p.Placeholder()
	} else {
		env["GEMINI_CLI_CUSTOM_HEADERS"] = loopback.RunHeader + ": " + p.Placeholder()
	}
	return env, nil
}
