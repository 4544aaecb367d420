package frame

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"
)

// canonical re-encodes one JSON value compactly with the keys of every
// object sorted by byte order, numbers as written, and strings escaping only
// what must be escaped: the quote, the backslash, and the control characters
// U+0000–U+001F and U+007F. That is what `jq -cS` writes, so a frame can be
// sealed by hand (docs/frames.md); encoding/json would also escape U+2028,
// U+2029 and, by default, <, > and &.
func canonical(raw []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return appendCanonical(nil, v), nil
}

func appendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case json.Number:
		return append(b, v...)
	case string:
		return appendString(b, v)
	case []any:
		b = append(b, '[')
		for i, x := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, x)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendCanonical(b, v[k])
		}
		return append(b, '}')
	}
	panic(fmt.Sprintf("frame: canonical: unexpected %T from the JSON decoder", v))
}

func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...) // the decoder already replaced these; keep the form stable
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			if c < 0x20 || c == 0x7f {
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				b = append(b, c)
			}
		}
		i++
	}
	return append(b, '"')
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RequestDigest is the correlation key's second half (rule 3): the SHA-256
// of the canonical JSON of {"call_id","input","name"}. Two presentations of
// one call_id are the same request exactly when their digests agree, however
// the vendor ordered the input's keys.
func RequestDigest(callID, name string, input json.RawMessage) string {
	in := input
	if len(bytes.TrimSpace(in)) == 0 {
		in = json.RawMessage("null")
	}
	raw, err := json.Marshal(map[string]any{"call_id": callID, "input": in, "name": name})
	if err == nil {
		if c, err := canonical(raw); err == nil {
			return sha256Hex(c)
		}
	}
	// The input is not JSON: digest the bytes as given, so that a second
	// presentation still compares exactly.
	return sha256Hex(append([]byte(callID+"\x00"+name+"\x00"), input...))
}
