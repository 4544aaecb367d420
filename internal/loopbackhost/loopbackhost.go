// Package loopbackhost is SPEC §3.3's one rule for what counts as loopback:
// 127.0.0.0/8, ::1 or "localhost". Private-network addresses do not. The
// loopback proxy, the model endpoint check and mcp-serve --http all hold
// the addresses they dial or listen on to it, without depending on each
// other for one predicate.
package loopbackhost

import (
	"net"
	"strings"
)

// Is reports whether h (a host, bracketed or not, without a port) is a
// genuine loopback host.
func Is(h string) bool {
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
