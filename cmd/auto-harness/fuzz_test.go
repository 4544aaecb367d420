package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzAPIPath: whatever path api is given, it is refused as a usage error,
// or becomes a route below /api/v1 that begins with "/", carries no
// fragment and has no "." or ".." segment in any spelling (split at "/"
// and at "\"); a route without /api/v1, a fragment or dots is sent as
// given.
func FuzzAPIPath(f *testing.F) {
	for _, s := range []string{"/hosts", "api/v1/hosts?online=online", "/api/v1", "/sessions/%2E%2e/x", `/a\..\b`, "/a/b.c?x=..#frag", "..", "/api/v1x/..foo"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := apiPath(raw)
		if err != nil {
			var u *usageError
			if !errors.As(err, &u) {
				t.Fatalf("apiPath(%q): %v is no usage error", raw, err)
			}
			return
		}
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "#") {
			t.Fatalf("apiPath(%q) = %q", raw, p)
		}
		route, _, _ := strings.Cut(p, "?")
		for _, seg := range strings.FieldsFunc(route, func(r rune) bool { return r == '/' || r == '\\' }) {
			if slices.Contains(dotSegments, strings.ToLower(seg)) {
				t.Fatalf("apiPath(%q) = %q, which has the segment %q", raw, p, seg)
			}
		}
		if strings.HasPrefix(raw, "/") && !strings.HasPrefix(raw, "/api/v1") && !strings.Contains(raw, "#") && p != raw {
			t.Fatalf("apiPath(%q) = %q, not as given", raw, p)
		}
	})
}
