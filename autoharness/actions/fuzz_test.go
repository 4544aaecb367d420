package actions

import (
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/autoharness"
)

// seed adds the inputs of the vectors of parsers to f, besides the corpus
// checked in under testdata/fuzz; the few long ones (the size bounds')
// only slow the fuzzer's minimising down.
func seed(f *testing.F, parsers ...string) {
	for _, v := range vectors(f) {
		for _, p := range parsers {
			if v.Parser == p && len(v.Input) <= 1024 {
				f.Add(v.Input)
			}
		}
	}
}

// refusedWith fails unless err is a *DispatchError with one of codes and
// a message naming field.
func refusedWith(t *testing.T, err error, field string, codes ...string) {
	t.Helper()
	var de *DispatchError
	if !errors.As(err, &de) {
		t.Fatalf("error %#v is no DispatchError", err)
	}
	for _, c := range codes {
		if de.Code == c && strings.HasPrefix(de.Message, field) {
			return
		}
	}
	t.Fatalf("refusal %s %q, want one of %v naming %s", de.Code, de.Message, codes, field)
}

// exactlyOne fails unless ref names one thing by one non-empty string,
// and reads back as itself.
func exactlyOne(t *testing.T, ref autoharness.TargetRef) {
	t.Helper()
	n := 0
	for _, s := range []string{ref.ProviderID, ref.ProviderName, ref.CommandID, ref.CommandName} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("target %+v does not name exactly one thing", ref)
	}
	b, _ := json.Marshal(ref)
	again, err := ParseHarnessTarget(string(b), "")
	if err != nil || again != ref {
		t.Fatalf("target %+v, written as %s, reads back as %+v (%v)", ref, b, again, err)
	}
}

func FuzzParseHarnessTarget(f *testing.F) {
	seed(f, "target")
	f.Fuzz(func(t *testing.T, value string) {
		ref, err := ParseHarnessTarget(value, "")
		if err != nil {
			refusedWith(t, err, "HARNESS_TARGET", CodeInvalidTarget)
			return
		}
		exactlyOne(t, ref)
	})
}

func FuzzParseHarnessFallbacks(f *testing.F) {
	seed(f, "fallbacks", "target")
	f.Fuzz(func(t *testing.T, value string) {
		refs, err := ParseHarnessFallbacks(value, "")
		if err != nil {
			refusedWith(t, err, "HARNESS_FALLBACKS", CodeInvalidFallbacks, CodeInvalidTarget)
			return
		}
		if refs == nil {
			t.Fatal("nil fallbacks: none is an empty list")
		}
		for _, r := range refs {
			exactlyOne(t, r)
		}
	})
}

func FuzzParseMetadata(f *testing.F) {
	seed(f, "metadata")
	f.Fuzz(func(t *testing.T, value string) {
		m, err := ParseMetadata(value, "")
		if err != nil {
			refusedWith(t, err, "HARNESS_METADATA", CodeInvalidMetadata)
			return
		}
		// What is sent is a flat JSON object within the bound, and reads
		// back as itself.
		var obj map[string]any
		if json.Unmarshal(m, &obj) != nil || len(m) > maxMetadata {
			t.Fatalf("sends %q: not a JSON object within %d bytes", m, maxMetadata)
		}
		for k, v := range obj {
			switch v.(type) {
			case map[string]any, []any:
				t.Fatalf("sends %q with %s nested", m, k)
			}
		}
		again, err := ParseMetadata(string(m), "")
		if err != nil || string(again) != string(m) {
			t.Fatalf("sends %q, which reads back as %q (%v)", m, again, err)
		}
	})
}

func FuzzParseAPIOrigin(f *testing.F) {
	seed(f, "origin", "origin_http", "harness_origin")
	f.Fuzz(func(t *testing.T, raw string) {
		for _, allowHTTP := range []bool{false, true} {
			origin, err := ParseAPIOrigin(raw, OriginOptions{AllowHTTP: allowHTTP})
			if err != nil {
				refusedWith(t, err, "HARNESS_URL", CodeInvalidHarnessURL)
				continue
			}
			// The origin is what was written, less at most a /api/v1 tail,
			// with nothing but a scheme and a host, and is itself accepted.
			if !strings.HasPrefix(raw, origin) || !slices.Contains([]string{"", "/", "/api/v1", "/api/v1/"}, strings.TrimPrefix(raw, origin)) {
				t.Fatalf("%q gave %q", raw, origin)
			}
			u, err := url.Parse(origin)
			if err != nil || u.Host == "" || u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
				(u.Scheme != "https" && (!allowHTTP || u.Scheme != "http")) {
				t.Fatalf("%q gave %q, not an origin", raw, origin)
			}
			if again, err := ParseAPIOrigin(origin, OriginOptions{AllowHTTP: allowHTTP}); err != nil || again != origin {
				t.Fatalf("%q gave %q, which reads as %q (%v)", raw, origin, again, err)
			}
		}
	})
}
