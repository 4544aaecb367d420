package loopback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxCanonicalDepth bounds the nesting Canonical follows; tool inputs are
// a few levels deep.
const maxCanonicalDepth = 256

// Canonical re-encodes the JSON value v in one form, so that two encodings
// of the same value compare equal byte for byte (a hook's tool input
// against the one the model sent on the wire, say): object members sorted
// by key (the bytes of the unescaped key), no insignificant whitespace,
// numbers kept exactly as written (1.0 stays 1.0), and strings re-escaped
// one way: `"`, `\` and the control characters escaped (\b \f \n \r \t,
// else \u00XX), everything else as UTF-8. An object holding a key twice
// (after unescaping) is an error, as are input that is not UTF-8, is not
// one JSON value, or nests deeper than 256 levels. An escaped lone
// surrogate reads as U+FFFD, as encoding/json reads it.
func Canonical(v json.RawMessage) (json.RawMessage, error) {
	if !utf8.Valid(v) {
		return nil, errors.New("canonical JSON: the input is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	out, err := canonicalValue(dec, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("canonical JSON: more than one value")
	}
	return out, nil
}

func canonicalValue(dec *json.Decoder, out []byte, depth int) ([]byte, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxCanonicalDepth {
			return nil, fmt.Errorf("nested deeper than %d levels", maxCanonicalDepth)
		}
		if t == '[' {
			out = append(out, '[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					out = append(out, ',')
				}
				if out, err = canonicalValue(dec, out, depth+1); err != nil {
					return nil, err
				}
			}
			if _, err := dec.Token(); err != nil { // ]
				return nil, err
			}
			return append(out, ']'), nil
		}
		return canonicalObject(dec, out, depth)
	case string:
		return appendJSONString(out, t), nil
	case json.Number:
		return append(out, t...), nil
	case bool:
		if t {
			return append(out, "true"...), nil
		}
		return append(out, "false"...), nil
	case nil:
		return append(out, "null"...), nil
	}
	return nil, fmt.Errorf("unexpected token %v", tok)
}

// canonicalObject reads an object's members (its '{' is read) and writes
// them sorted.
func canonicalObject(dec *json.Decoder, out []byte, depth int) ([]byte, error) {
	type member struct {
		key string
		val []byte
	}
	var members []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		val, err := canonicalValue(dec, nil, depth+1)
		if err != nil {
			return nil, err
		}
		members = append(members, member{key, val})
	}
	if _, err := dec.Token(); err != nil { // }
		return nil, err
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			if m.key == members[i-1].key {
				return nil, fmt.Errorf("the key %q appears twice in one object", m.key)
			}
			out = append(out, ',')
		}
		out = appendJSONString(out, m.key)
		out = append(out, ':')
		out = append(out, m.val...)
	}
	return append(out, '}'), nil
}

// appendJSONString writes s as a JSON string in Canonical's one form.
func appendJSONString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}
