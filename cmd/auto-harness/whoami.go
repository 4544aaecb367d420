package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/operator"
	"github.com/metaharness/metaharness/internal/jsonscan"
)

// whoamiCmd is `auto-harness whoami`.
type whoamiCmd struct {
	JSON switchFlag `name:"json" help:"Print the allowlisted fields as a JSON object."`
}

func (c *whoamiCmd) run(a *app) error {
	client, err := a.client()
	if err != nil {
		return err
	}
	me, err := whoami(a.ctx, client)
	if err != nil {
		return err
	}
	if c.JSON {
		return printJSON(a.w.stdout, operator.Object(me))
	}
	if len(me) == 0 {
		fmt.Fprintln(a.w.stdout, "(no fields returned)")
	}
	for _, m := range me {
		fmt.Fprintf(a.w.stdout, "%s: %s\n", m.Key, fieldText(m.Value))
	}
	return nil
}

// whoami reads the principal the client's credential is: its allowlisted
// fields only.
func whoami(ctx context.Context, c *autoharness.Client) ([]operator.Member, error) {
	raw, err := c.Decode(ctx, autoharness.Request{Path: "/auth/me"}, &json.RawMessage{})
	if err != nil {
		return nil, err
	}
	return operator.Allowlisted(raw, operator.PrincipalFields)
}

// field is the value of key among members, "" when absent.
func field(members []operator.Member, key string) string {
	for _, m := range members {
		if m.Key == key {
			return fieldText(m.Value)
		}
	}
	return ""
}

// fieldText is a value as a line shows it: a string's text, a list's
// entries joined by ", ", any other value's JSON.
func fieldText(raw json.RawMessage) string {
	if s, err := jsonscan.String(raw); err == nil {
		return s
	}
	var list []json.RawMessage
	if len(raw) > 0 && raw[0] == '[' && json.Unmarshal(raw, &list) == nil {
		parts := make([]string, len(list))
		for i, v := range list {
			parts[i] = fieldText(v)
		}
		return strings.Join(parts, ", ")
	}
	return string(raw)
}

// doctorCmd is `auto-harness doctor`: independent checks, each printed as
// it ends, exit 1 when any fails.
type doctorCmd struct{}

func (doctorCmd) run(a *app) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	failed := false
	check := func(result, name, format string, args ...any) {
		failed = failed || result == "fail"
		fmt.Fprintf(a.w.stdout, "%s %s: %s\n", result, name, fmt.Sprintf(format, args...))
	}
	checkURL(cfg, check)
	checkHealth(a, cfg, check)
	checkAuth(a, cfg, check)
	if failed {
		return reported{}
	}
	return nil
}

type checkFunc func(result, name, format string, args ...any)

// checkURL: the base URL parses, is https (or http with the flag), and is
// not a raw API Gateway URL, which bypasses CloudFront's ingress token.
func checkURL(cfg *config, check checkFunc) {
	scheme, host, ok := splitURL(cfg.baseURL)
	switch {
	case !ok:
		check("fail", "url", "%s is not a valid URL", cfg.baseURL)
	case scheme == "http" && !cfg.insecure:
		check("fail", "url", "baseUrl uses http:// (pass --allow-insecure-http only for local/loopback dev)")
	case apiGateway.MatchString(host):
		check("warn", "url", "raw API Gateway URL bypasses CloudFront, which injects the ingress token, so requests will be rejected; use the CloudFront WebUrl from the deploy output instead")
	default:
		check("ok", "url", "using %s", cfg.baseURL)
	}
}

// checkHealth: GET /health at the site's root answers 200 {"ok":true}.
func checkHealth(a *app, cfg *config, check checkFunc) {
	plain, err := autoharness.New(autoharness.Options{BaseURL: cfg.baseURL})
	if err != nil {
		check("fail", "reachability", "GET /health failed: %s", err)
		return
	}
	resp, err := plain.Request(a.ctx, autoharness.Request{Path: "/health", AtRoot: true})
	var refused *autoharness.Error
	switch {
	case errors.As(err, &refused):
		check("fail", "reachability", "GET /health returned HTTP %d", refused.Status)
		return
	case err != nil:
		check("fail", "reachability", "GET /health failed: %s", err)
		return
	}
	var health struct {
		OK bool `json:"ok"`
	}
	switch {
	case resp.Status != 200:
		check("fail", "reachability", "GET /health returned HTTP %d", resp.Status)
	case resp.Body == nil || json.Unmarshal(resp.Body, &health) != nil || !health.OK:
		check("fail", "reachability", `GET /health did not return {"ok":true}`)
	default:
		check("ok", "reachability", "control plane is reachable")
	}
}

// checkAuth: the credential is accepted (GET /auth/me); the admin's login
// happens here, so that the checks above print whatever the password.
func checkAuth(a *app, cfg *config, check checkFunc) {
	if cfg.apiKey == "" && !cfg.admin {
		check("warn", "auth", "no API key configured; only unauthenticated checks ran")
		return
	}
	client, err := a.connect(cfg)
	if err != nil {
		check("fail", "auth", "%s", err)
		return
	}
	me, err := whoami(a.ctx, client)
	switch {
	case operator.Refusal(err, 401) != nil && cfg.admin:
		check("fail", "auth", "the admin's session was rejected")
		return
	case operator.Refusal(err, 401) != nil:
		check("fail", "auth", "API key rejected")
		return
	case err != nil:
		check("fail", "auth", "GET /auth/me failed: %s", err)
		return
	}
	role, caps := field(me, "role"), field(me, "capabilities")
	if role == "" {
		role = "unknown"
	}
	if caps == "" {
		caps = "none"
	}
	if cfg.admin {
		user := field(me, "username")
		if user == "" {
			user = cfg.adminUser
		}
		check("ok", "auth", "authenticated as %s (role %s; capabilities: %s)", user, role, caps)
		return
	}
	check("ok", "auth", "authenticated as role %s (capabilities: %s)", role, caps)
}

// apiGateway matches a raw API Gateway host.
var apiGateway = regexp.MustCompile(`(?i)^[^.]+\.execute-api\.[^.]+\.amazonaws\.com$`)

// splitURL is raw's scheme and host when it is an absolute http or https
// URL of a host.
func splitURL(raw string) (scheme, host string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", "", false
	}
	return u.Scheme, u.Hostname(), true
}
