package kind

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"

	"github.com/metaharness/metaharness/attest"
)

// SortedEnv renders an environment map as sorted KEY=VALUE entries, the
// form exec wants and C1 vectors pin.
func SortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// ShellQuote quotes s for a POSIX shell, for command strings a vendor runs
// through sh (the Claude hook command).
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ChildPath is the PATH a child gets: the caller's ~/.local/bin, then the
// system directories. The vendor binary is looked up on it, so what runs is
// what the caller installed, never whatever their shell PATH finds first.
func ChildPath(callerHome string) string {
	if callerHome == "" {
		return "/usr/local/bin:/usr/bin:/bin"
	}
	return filepath.Join(callerHome, ".local/bin") + ":/usr/local/bin:/usr/bin:/bin"
}

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

// JSONFile is a launch file of v as indented JSON, readable by the child's
// user alone.
func JSONFile(path string, v any) File {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // the settings' maps of strings, numbers and slices always marshal
	}
	return File{Path: path, Mode: 0o600, Content: string(b) + "\n"}
}
