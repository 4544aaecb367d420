package launcher

import (
	"strings"

	"github.com/metaharness/metaharness/attest"
)

// ClaimGate claims H12: imposed when the run's loopback proxy stands
// between the child and the network (w.ProxyAddr), else unavailable.
func ClaimGate(c *attest.Claim, spec *Spec, w *World) {
	if w.ProxyAddr == "" {
		c.Unavailable(attest.H12, "no egress gate: no loopback proxy stands between the child and the network (--credentials loopback, api-key, or none with --model-endpoint put one there)")
		return
	}
	c.Impose(attest.H12, gateHow(spec.AllowEgress))
}

// gateHow is the H12 claim of a proxied run: the child's proxy variables
// point at the egress gate, which lets through only the hosts named.
func gateHow(allowEgress []string) string {
	hosts := "none"
	if len(allowEgress) > 0 {
		hosts = strings.Join(allowEgress, ", ")
	}
	return "HTTPS_PROXY, HTTP_PROXY and ALL_PROXY point at the loopback proxy's egress gate; hosts allowed: " + hosts
}
