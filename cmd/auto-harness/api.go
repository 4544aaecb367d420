package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/autoharness"
)

// apiCmd is `auto-harness api METHOD PATH`: any route, sent as it is.
type apiCmd struct {
	Method   string  `arg:"" name:"METHOD" help:"GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS."`
	Path     string  `arg:"" name:"path" help:"The route, with or without its /api/v1 (/hosts, /api/v1/hosts), with its query."`
	Body     *string `name:"body" placeholder:"JSON" help:"The request's body, inline JSON."`
	BodyFile *string `name:"body-file" placeholder:"PATH|-" help:"The request's body from a file, or from stdin (-)."`
}

var apiMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

func (c *apiCmd) run(a *app) error {
	method := strings.ToUpper(c.Method)
	if !slices.Contains(apiMethods, method) {
		return usageErrorf("unsupported HTTP method %s; use one of %s", c.Method, strings.Join(apiMethods, ", "))
	}
	path, err := apiPath(c.Path)
	if err != nil {
		return err
	}
	if c.Body != nil && c.BodyFile != nil {
		return usageErrorf("--body and --body-file are mutually exclusive")
	}
	if c.BodyFile != nil && *c.BodyFile == "-" {
		a.stdinUse = "api --body-file -"
	}
	cfg, err := a.config()
	if err != nil {
		return err
	}
	var body []byte
	switch {
	case c.Body != nil:
		body = []byte(*c.Body)
	case c.BodyFile != nil:
		if body, err = a.readDocument("--body-file", *c.BodyFile); err != nil {
			return err
		}
	}
	if body != nil {
		var compact bytes.Buffer
		if err := json.Compact(&compact, body); err != nil {
			return usageErrorf("--body/--body-file must contain valid JSON")
		}
		body = compact.Bytes()
	}
	client, err := a.connect(cfg)
	if err != nil {
		return err
	}
	resp, err := client.Request(a.ctx, autoharness.Request{Method: method, Path: path, Body: body})
	if err != nil {
		return err
	}
	if resp.Body == nil {
		return nil
	}
	return printJSON(a.w.stdout, resp.Body)
}

// dotSegments are the spellings of a "." or ".." segment, lower-cased,
// that a server or a proxy may resolve to another route.
var dotSegments = []string{".", "..", "%2e", "%2e%2e", ".%2e", "%2e."}

// apiPath is raw as a route below /api/v1: a leading "/" added, a leading
// /api/v1 taken off, its fragment dropped; a "." or ".." segment, in any
// spelling or after a backslash, is refused.
func apiPath(raw string) (string, error) {
	p := raw
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if p == "/api/v1" || strings.HasPrefix(p, "/api/v1/") {
		p = strings.TrimPrefix(p, "/api/v1")
	}
	p, _, _ = strings.Cut(p, "#")
	route, _, _ := strings.Cut(p, "?")
	for _, seg := range strings.FieldsFunc(route, func(r rune) bool { return r == '/' || r == '\\' }) {
		if slices.Contains(dotSegments, strings.ToLower(seg)) {
			return "", usageErrorf("path must not contain \".\" or \"..\" segments: %s", raw)
		}
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return p, nil
}
