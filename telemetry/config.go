package telemetry

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/loopbackhost"
)

// Refusal names of the export's configuration (exit 2, before anything
// starts).
const (
	RefuseOTLPEndpoint exit.Name = "otlp-endpoint"
	RefuseOTLPProtocol exit.Name = "otlp-protocol"
	RefuseOTLPHeaders  exit.Name = "otlp-headers"
)

// The standard variables of the OTLP exporters, read from metaharness's
// own environment (never the child's, which gets none of them), and the
// GenAI conventions' opt-in to message content.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	EnvCaptureContent = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
)

// The OTLP protocols the exporters speak.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// FlushBound is the most the end of a run waits for its spans to go out;
// a run that was stopped waits StoppedFlushBound, inside the four seconds
// an embedder is promised.
const (
	FlushBound        = 2 * time.Second
	StoppedFlushBound = 500 * time.Millisecond
)

// Config is where and how to export.
type Config struct {
	// Endpoint is the collector's base URL, as OTEL_EXPORTER_OTLP_ENDPOINT
	// gives it: HTTP/protobuf posts to its path + /v1/traces, gRPC dials
	// its host and port.
	Endpoint string
	Protocol string
	// Headers go with every export (a collector's API key): never
	// recorded, never printed.
	Headers map[string]string
	// Content adds prompts, texts, tool inputs and results (bounded).
	Content bool
}

// Resolve is the export a verb was asked for: flag (--otlp-endpoint)
// before OTEL_EXPORTER_OTLP_ENDPOINT, with the protocol and headers of
// env; nil when neither names an endpoint. An endpoint must be https,
// except on a loopback host (SPEC §3.3), and carry no user info (headers
// carry credentials).
func Resolve(flag string, env map[string]string) (*Config, error) {
	from, endpoint := "--otlp-endpoint", flag
	if endpoint == "" {
		from, endpoint = "$"+EnvEndpoint, env[EnvEndpoint]
	}
	if endpoint == "" {
		return nil, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" || u.Hostname() == "" {
		return nil, exit.Refuse(RefuseOTLPEndpoint, "%s %q is not an absolute URL; give the collector's base URL, such as http://127.0.0.1:4318", from, redact(endpoint))
	}
	switch {
	case u.User != nil:
		return nil, exit.Refuse(RefuseOTLPEndpoint, "%s carries user info; put the collector's credentials in $%s instead, which is never recorded", from, EnvHeaders)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, exit.Refuse(RefuseOTLPEndpoint, "%s %s carries a query or fragment; give the collector's base URL alone", from, redact(endpoint))
	case u.Scheme == "http" && !loopbackhost.Is(u.Hostname()):
		return nil, exit.Refuse(RefuseOTLPEndpoint, "%s %s is plain http to a host that is not loopback; use https, or a collector on 127.0.0.1", from, u.Redacted())
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, exit.Refuse(RefuseOTLPEndpoint, "%s %s: the scheme must be https (or http on a loopback host)", from, u.Redacted())
	}
	if p := u.Port(); p != "" {
		if _, err := net.LookupPort("tcp", p); err != nil {
			return nil, exit.Refuse(RefuseOTLPEndpoint, "%s %s: %q is not a port", from, u.Redacted(), p)
		}
	}
	cfg := &Config{Endpoint: strings.TrimSuffix(u.String(), "/"), Protocol: ProtocolHTTP}
	switch p := env[EnvProtocol]; p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		cfg.Protocol = ProtocolGRPC
	default:
		return nil, exit.Refuse(RefuseOTLPProtocol, "$%s is %q; metaharness exports over %s or %s (http/json is not one the Go exporters speak)", EnvProtocol, p, ProtocolHTTP, ProtocolGRPC)
	}
	if cfg.Headers, err = parseHeaders(env[EnvHeaders]); err != nil {
		return nil, exit.Within(RefuseOTLPHeaders, err, "$%s %v; give key=value pairs separated by commas, each value URL-encoded", EnvHeaders, err)
	}
	switch strings.ToLower(env[EnvCaptureContent]) {
	case "true", "1":
		cfg.Content = true
	}
	return cfg, nil
}

// parseHeaders reads the W3C-style list OTEL_EXPORTER_OTLP_HEADERS holds.
// Its errors name the entry by position, never its value.
func parseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return nil, fmt.Errorf("entry %d is not key=value", i+1)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil || strings.ContainsAny(val, "\r\n") {
			return nil, fmt.Errorf("entry %d (%s) has a value that is not URL-encoded text", i+1, k)
		}
		out[k] = val
	}
	return out, nil
}

// HeaderNames lists the headers' names, for a record (never the values).
func (c *Config) HeaderNames() []string {
	var out []string
	for k := range c.Headers {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// redact cuts an unparsable endpoint short, so a token pasted into it is
// not echoed whole.
func redact(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}
