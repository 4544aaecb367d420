package actions

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// RequiredEnvironmentValue is env[key] trimmed, refused when that leaves
// nothing.
func RequiredEnvironmentValue(env map[string]string, key string) (string, error) {
	v := trim(env[key])
	if v == "" {
		return "", refuse(CodeMissingEnvironmentValue, key+" is required")
	}
	return v, nil
}

// maxSafeInteger is the largest integer a JavaScript number holds exactly.
const maxSafeInteger = 1<<53 - 1

// ParseInteger reads value, named key, as a whole number in decimal digits
// alone (no sign, point or space) of at least minimum and at most 2^53−1.
// An empty value is absent: ok is false.
func ParseInteger(value, key string, minimum int64) (n int64, ok bool, err error) {
	if value == "" {
		return 0, false, nil
	}
	kind := "a non-negative integer"
	if minimum > 0 {
		kind = "a positive integer"
	}
	bad := refuse(CodeInvalidInteger, key+" must be "+kind)
	if strings.TrimLeft(value, "0123456789") != "" {
		return 0, false, bad
	}
	n, err = strconv.ParseInt(value, 10, 64)
	if err != nil || n > maxSafeInteger || n < minimum {
		return 0, false, bad
	}
	return n, true, nil
}

// ParseRequiredLabels reads a JSON array of non-empty strings; an empty
// value is none. field names the value in a refusal ("" is
// HARNESS_REQUIRED_LABELS).
func ParseRequiredLabels(value, field string) ([]string, error) {
	field = orDefault(field, "HARNESS_REQUIRED_LABELS")
	labels := []string{}
	if value == "" {
		return labels, nil
	}
	if !json.Valid([]byte(value)) {
		return nil, refuse(CodeInvalidRequiredLabels, field+" must be valid JSON")
	}
	notStrings := refuse(CodeInvalidRequiredLabels, field+" must be a JSON array of strings")
	var items []json.RawMessage
	if json.Unmarshal([]byte(value), &items) != nil || items == nil {
		return nil, notStrings
	}
	for _, item := range items {
		var s string
		if item[0] != '"' || json.Unmarshal(item, &s) != nil || s == "" {
			return nil, notStrings
		}
		labels = append(labels, s)
	}
	return labels, nil
}

// ConcurrencyOptions say how ParseConcurrencyID reads its value.
type ConcurrencyOptions struct {
	// FieldName names the value in a refusal; "" is HARNESS_CONCURRENCY_ID.
	FieldName string
	// Optional makes an empty value absent instead of refused.
	Optional bool
	// AllowAnyCharacters takes any text of up to 2048 bytes instead of a
	// token of up to 128 characters.
	AllowAnyCharacters bool
}

var concurrencyToken = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9:._-]*$`)

// ParseConcurrencyID reads a concurrency identity, trimmed: by default a
// token of letters, digits and : . _ - (starting with a letter or digit)
// of at most 128 characters.
func ParseConcurrencyID(value string, o ConcurrencyOptions) (string, error) {
	field := orDefault(o.FieldName, "HARNESS_CONCURRENCY_ID")
	v := trim(value)
	switch {
	case v == "" && o.Optional:
		return "", nil
	case v == "":
		return "", refuse(CodeInvalidConcurrencyID, field+" is required")
	case o.AllowAnyCharacters && len(v) > 2048:
		return "", refuse(CodeInvalidConcurrencyID, field+" exceeds 2048 bytes")
	case o.AllowAnyCharacters:
		return v, nil
	case utf16Len(v) > 128:
		return "", refuse(CodeInvalidConcurrencyID, field+" exceeds 128 characters")
	case !concurrencyToken.MatchString(v):
		return "", refuse(CodeInvalidConcurrencyID, field+" contains unsupported characters")
	}
	return v, nil
}

// maxMetadata bounds the metadata as sent.
const maxMetadata = 8192

// ParseMetadata reads a JSON object whose values are each a string, a
// finite number, a boolean or null, of at most 8192 bytes as sent, and
// returns it as it is sent: compact, written the way JSON.stringify
// writes it (so its size is the size the Node Action measures). An empty
// value is {}. A key given twice is refused: which of the two was meant
// is not the Action's to guess. field names the value in a refusal (""
// is HARNESS_METADATA).
func ParseMetadata(value, field string) (json.RawMessage, error) {
	field = orDefault(field, "HARNESS_METADATA")
	if value == "" {
		return json.RawMessage("{}"), nil
	}
	data := []byte(value)
	if !json.Valid(data) {
		return nil, refuse(CodeInvalidMetadata, field+" must be valid JSON")
	}
	var b strings.Builder
	var bad error
	seen := map[string]bool{}
	err := jsonscan.Members(data, func(key, val []byte) {
		if bad != nil {
			return
		}
		k := string(key)
		if seen[k] {
			bad = refuse(CodeInvalidMetadata, fmt.Sprintf("%s gives the key %s twice; give each key once", field, jsString(k)))
			return
		}
		seen[k] = true
		v, ok := scalar(val)
		if !ok {
			bad = refuse(CodeInvalidMetadata, field+"."+k+" must be a string, finite number, boolean, or null")
			return
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsString(k) + ":" + v)
	})
	if err != nil {
		return nil, refuse(CodeInvalidMetadata, field+" must be a JSON object")
	}
	if bad != nil {
		return nil, bad
	}
	out := "{" + b.String() + "}"
	if len(out) > maxMetadata {
		return nil, refuse(CodeInvalidMetadata, fmt.Sprintf("%s exceeds %d bytes", field, maxMetadata))
	}
	return json.RawMessage(out), nil
}

// scalar is val (valid JSON) written as JSON.stringify writes it, when it
// is a string, a finite number, a boolean or null.
func scalar(val []byte) (string, bool) {
	switch val[0] {
	case '"':
		var s string
		if json.Unmarshal(val, &s) != nil {
			return "", false
		}
		return jsString(s), true
	case 't', 'f', 'n':
		return string(val), true
	case '{', '[':
		return "", false
	}
	// A number: 1e999 is valid JSON that JavaScript reads as Infinity.
	f, err := strconv.ParseFloat(string(val), 64)
	if err != nil || math.IsInf(f, 0) {
		return "", false
	}
	return jsNumber(f), true
}

// OriginOptions say how ParseAPIOrigin reads its value.
type OriginOptions struct {
	// FieldName names the value in a refusal; "" is HARNESS_URL.
	FieldName string
	// AllowHTTP takes http besides https.
	AllowHTTP bool
}

// ParseAPIOrigin reads the control plane's URL, which must be exactly an
// origin as a browser writes it (lower-case host, no default port, no
// user, query or fragment), optionally followed by "/", "/api/v1" or
// "/api/v1/", and returns the origin. Anything a browser would rewrite is
// refused rather than rewritten, so the URL used is the URL written.
func ParseAPIOrigin(raw string, o OriginOptions) (string, error) {
	field := orDefault(o.FieldName, "HARNESS_URL")
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") || (u.Opaque == "" && u.Hostname() == "") {
		return "", refuse(CodeInvalidHarnessURL, field+" must be a valid URL")
	}
	schemes := "https"
	if o.AllowHTTP {
		schemes = "http or https"
	}
	if u.Scheme != "https" && (!o.AllowHTTP || u.Scheme != "http") {
		return "", refuse(CodeInvalidHarnessURL, field+" must use "+schemes)
	}
	origin, canonical, valid := canonicalOrigin(u)
	if !valid {
		return "", refuse(CodeInvalidHarnessURL, field+" must be a valid URL")
	}
	if !canonical || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") ||
		(raw != origin && raw != origin+"/" && raw != origin+"/api/v1" && raw != origin+"/api/v1/") {
		return "", refuse(CodeInvalidHarnessURL, field+" must be an exact "+schemes+" origin, optionally suffixed with /api/v1")
	}
	return origin, nil
}

// ParseHarnessAPIOrigin is ParseAPIOrigin of env's HARNESS_URL (trimmed,
// required), https only.
func ParseHarnessAPIOrigin(env map[string]string) (string, error) {
	raw, err := RequiredEnvironmentValue(env, "HARNESS_URL")
	if err != nil {
		return "", err
	}
	return ParseAPIOrigin(raw, OriginOptions{FieldName: "HARNESS_URL"})
}

// canonicalOrigin is u's origin as a browser serialises it (valid false
// when a browser would not take u's host at all), and whether u's host and
// port are already written that way.
func canonicalOrigin(u *url.URL) (origin string, canonical, valid bool) {
	host, port := u.Hostname(), u.Port()
	if u.Opaque != "" {
		return "", false, true
	}
	if strings.HasPrefix(u.Host, "[") {
		ip := net.ParseIP(host)
		// An IPv6 address with an IPv4 tail is written in hex by a browser.
		if ip == nil || strings.Contains(host, ".") || ip.String() != host {
			return "", false, ip != nil
		}
		host = "[" + host + "]"
	} else if canonical, valid := hostname(host); !canonical {
		return "", false, valid
	}
	if strings.HasSuffix(u.Host, ":") {
		return "", false, true // an empty port, which a browser drops
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		def := map[string]int{"https": 443, "http": 80}[u.Scheme]
		if err != nil || n > 65535 || n == def || strconv.Itoa(n) != port {
			return "", false, err == nil && n <= 65535
		}
		host += ":" + port
	}
	return u.Scheme + "://" + host, true, true
}

// hostname reports whether h is a domain or an IPv4 address as a browser
// writes it (lower case, nothing it would encode, an address as four plain
// decimal parts), and whether a browser would take it at all: a host whose
// last label is a number is an IPv4 address to a browser, which reads
// 127.1 or 0x7f.0.0.1 as 127.0.0.1 and refuses h.123.
func hostname(h string) (canonical, valid bool) {
	labels := strings.Split(strings.ToLower(h), ".")
	if len(labels) > 1 && labels[len(labels)-1] == "" {
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if _, number := ipv4Number(last); number || last != "" && strings.Trim(last, "0123456789") == "" {
		ip, ok := ipv4(labels)
		return ok && ip == h, ok
	}
	return h != "" && strings.Trim(h, "abcdefghijklmnopqrstuvwxyz0123456789-._") == "", true
}

// ipv4 reads an IPv4 address as a browser does: up to four parts, each
// decimal, octal (a leading 0) or hex (0x), the last filling the bytes
// the others leave; it returns the address in four decimal parts.
func ipv4(parts []string) (string, bool) {
	if len(parts) > 4 {
		return "", false
	}
	var addr uint64
	for i, p := range parts {
		n, ok := ipv4Number(p)
		room := uint64(256)
		if i == len(parts)-1 {
			room = 1 << (8 * (5 - len(parts)))
		}
		if !ok || n >= room {
			return "", false
		}
		if i == len(parts)-1 {
			addr += n
		} else {
			addr += n << (8 * (3 - i))
		}
	}
	return fmt.Sprintf("%d.%d.%d.%d", addr>>24, addr>>16&255, addr>>8&255, addr&255), true
}

// ipv4Number reads one part of an IPv4 address as a browser does.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X"):
		base, s = 16, s[2:]
	case len(s) > 1 && s[0] == '0':
		base, s = 8, s[1:]
	}
	if s == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, err == nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
