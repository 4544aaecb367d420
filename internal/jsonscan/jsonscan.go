// Package jsonscan walks the top level of a JSON object without decoding
// it: each member's key and the raw bytes of its value. A reader that needs
// a few header fields before it knows what to decode the line into takes
// them here, and leaves the one decode of the whole line to encoding/json.
//
// It is also the strict reader (Check, Decode) that every parser of JSON
// from outside the run goes through: encoding/json lets the last of a
// repeated key win and matches keys in any case, and the strict reader
// refuses both, naming the key and its path (strict.go).
//
// The walk checks structure (strings closed, brackets balanced, colons and
// commas in place, nothing after the object), not grammar: a number, a
// literal or an escape inside a value is not checked, so a value handed out
// may still be invalid JSON, which the decode that follows reports. Every
// well-formed object is walked, and its members are those encoding/json
// sees (FuzzMembers holds the two to each other).
package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// ErrSyntax is the walk's one error: obj is not shaped like a JSON object.
var ErrSyntax = errors.New("not shaped like a JSON object")

// Members calls visit with each member of obj in order: its key, decoded
// as encoding/json decodes it, and its value's raw bytes. Neither slice may
// be kept past the call; a key that needed decoding is a fresh copy.
func Members(obj []byte, visit func(key, val []byte)) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return ErrSyntax
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return atEnd(obj, i+1)
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return ErrSyntax
		}
		end, err := StringEnd(obj, i)
		if err != nil {
			return err
		}
		key := obj[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			var s string
			if json.Unmarshal(obj[i:end], &s) != nil {
				return ErrSyntax
			}
			key = []byte(s)
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return ErrSyntax
		}
		i = skipSpace(obj, i+1)
		if end, err = valueEnd(obj, i); err != nil {
			return err
		}
		visit(key, obj[i:end])
		i = skipSpace(obj, end)
		if i >= len(obj) {
			return ErrSyntax
		}
		switch obj[i] {
		case ',':
			i = skipSpace(obj, i+1)
		case '}':
			return atEnd(obj, i+1)
		default:
			return ErrSyntax
		}
	}
}

// String decodes a raw JSON string value as encoding/json does, without
// its machinery when the string holds no escape and no byte it would
// change.
func String(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		in := raw[1 : len(raw)-1]
		if plain(in) {
			return string(in), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// plain: no quote, backslash or control byte, and valid UTF-8.
func plain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

func atEnd(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return ErrSyntax
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// StringEnd is the index just past the string that opens at b[i], or
// ErrSyntax when it is not closed.
func StringEnd(b []byte, i int) (int, error) {
	j := i + 1
	for {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return 0, ErrSyntax
		}
		q += j
		// The quote closes the string unless an odd run of backslashes
		// stands before it.
		n := 0
		for k := q - 1; k > i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// valueEnd is the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, ErrSyntax
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, err := StringEnd(b, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, ErrSyntax
	case '}', ']', ',', ':':
		return 0, ErrSyntax
	}
	// A number or a literal runs to the next structural byte or space.
	j := i
	for ; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ':', '"', '{', '[', ' ', '\t', '\r', '\n':
			return j, nil
		}
	}
	return j, nil
}
