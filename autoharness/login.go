package autoharness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Login signs in to the control plane as a user with a password (the admin
// of a fleet that has no API key yet) and returns the session cookie to
// pass as Options.Cookie. It uses o's BaseURL, AllowInsecureHTTP,
// RequestTimeout and Transport, and holds the password to the same
// transport rule as a key. The answer's body, which describes the
// principal, is never read; any status but 200 is "admin login failed
// (HTTP <status>)", which says nothing of the password.
func Login(ctx context.Context, o Options, username, password string) (string, error) {
	c, err := New(Options{BaseURL: o.BaseURL, RequestTimeout: o.RequestTimeout, Transport: o.Transport})
	if err != nil {
		return "", err
	}
	if err := CheckTransport(c.base, o.AllowInsecureHTTP); err != nil {
		return "", err
	}
	body, err := Encode(struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}{username, password})
	if err != nil {
		return "", err
	}
	resp, err := c.Request(ctx, Request{Method: "POST", Path: "/auth/login", Body: body, unread: true})
	var refused *Error
	switch {
	case errors.As(err, &refused):
		return "", fmt.Errorf("admin login failed (HTTP %d)", refused.Status)
	case err != nil:
		return "", err
	case resp.Status != http.StatusOK:
		return "", fmt.Errorf("admin login failed (HTTP %d)", resp.Status)
	}
	var parts []string
	for _, sc := range resp.Header.Values("Set-Cookie") {
		name, _, _ := strings.Cut(sc, ";")
		if name = strings.TrimSpace(name); name != "" {
			parts = append(parts, name)
		}
	}
	if len(parts) == 0 {
		return "", errors.New("admin login answered HTTP 200 without a session cookie")
	}
	return strings.Join(parts, "; "), nil
}
