package loopback

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// A small scanner over JSON the upstream sent, for the wire view's hot
// path: it finds the few members an event needs without decoding the rest
// (an event's text stays escaped until a snapshot asks for it). It checks
// the structure it walks, not the grammar of every value: the upstream is
// the model API, and what it holds is decoded properly, by encoding/json,
// when it is read.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringLen is the length of the JSON string at the start of b (b[0] is
// its opening quote), quotes included; -1 when it does not end in b.
func stringLen(b []byte) int {
	for k := 1; k < len(b); {
		j := bytes.IndexByte(b[k:], '"')
		if j < 0 {
			return -1
		}
		k += j
		escapes := 0
		for m := k - 1; m > 0 && b[m] == '\\'; m-- {
			escapes++
		}
		if escapes%2 == 0 {
			return k + 1
		}
		k++
	}
	return -1
}

// valueLen is the length of the JSON value at the start of b; -1 when
// none is there or it does not end in b.
func valueLen(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	switch b[0] {
	case '"':
		return stringLen(b)
	case '{', '[':
		depth := 0
		for k := 0; k < len(b); k++ {
			switch b[k] {
			case '"':
				n := stringLen(b[k:])
				if n < 0 {
					return -1
				}
				k += n - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return k + 1
				}
			}
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	}
	k := 0
	for k < len(b) && !isSpace(b[k]) && b[k] != ',' && b[k] != '}' && b[k] != ']' {
		k++
	}
	return k
}

// members calls f with the raw key (between its quotes, escapes as sent)
// and the raw value of each member of the JSON object b, in order, until
// f returns false. It reports whether b held an object it could walk.
func members(b []byte, f func(key, val []byte) bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	if i = skipSpace(b, i+1); i < len(b) && b[i] == '}' {
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		n := stringLen(b[i:])
		if n < 0 {
			return false
		}
		key := b[i+1 : i+n-1]
		if i = skipSpace(b, i+n); i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if n = valueLen(b[i:]); n <= 0 {
			return false
		}
		if !f(key, b[i:i+n]) {
			return true
		}
		if i = skipSpace(b, i+n); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

// keyIs reports whether the raw key names name (an escaped key is
// unescaped first).
func keyIs(raw []byte, name string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == name
	}
	s, ok := unquote(raw)
	return ok && s == name
}

// content is the raw content of a JSON string value (between its quotes,
// still escaped); ok is false when v is not a string.
func content(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// unquote decodes the raw content of a JSON string as encoding/json does
// (invalid UTF-8 and lone surrogates read as U+FFFD).
func unquote(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), true
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	if json.Unmarshal(q, &s) != nil {
		return "", false
	}
	return s, true
}

// stringValue is a JSON string value decoded; "" for anything else (null
// included).
func stringValue(v []byte) string {
	raw, ok := content(v)
	if !ok {
		return ""
	}
	s, _ := unquote(raw)
	return s
}

// intValue is a JSON integer value; ok is false for anything else.
func intValue(v []byte) (int, bool) {
	n, err := strconv.Atoi(string(v))
	return n, err == nil
}
