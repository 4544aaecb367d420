package loopback

import (
	"fmt"
	"strings"
)

// noProxy keeps the child's loopback traffic (the proxy itself, its MCP
// servers) direct.
const noProxy = "localhost,127.0.0.1,::1"

// GateEnv is what any child needs in its environment to reach hosts other
// than its upstream only through the egress gate: HTTPS_PROXY, HTTP_PROXY
// and ALL_PROXY (upper and lower case) pointing at the gate, and NO_PROXY
// covering loopback. On a unix socket, which no proxy variable can name, it
// is empty. What points a child's model traffic at BaseURL and hands it
// Placeholder is the kind's own (launcher/<kind>).
func (p *Proxy) GateEnv() (map[string]string, error) {
	if p.baseURL == "" {
		return nil, fmt.Errorf("the loopback proxy is not started; call Start before GateEnv")
	}
	env := map[string]string{}
	if p.cfg.Unix == "" {
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
			env[k] = p.gateURL
			env[strings.ToLower(k)] = p.gateURL
		}
		env["NO_PROXY"], env["no_proxy"] = noProxy, noProxy
	}
	return env, nil
}
