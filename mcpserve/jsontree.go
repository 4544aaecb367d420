package mcpserve

import (
	"bytes"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// jsonTree reads a contract written as JSON into the tree without the YAML
// parser, which costs tens of milliseconds on a thousand entries: a run
// hands its server the scratch copy, which is JSON, and the vendor starts
// that server for every session. It builds what the YAML path builds from
// the same text (the same values, key order, object lines, depth bound and
// budget; FuzzJSONTreeMatchesYAML holds the two together). ok is false for
// anything it does not read that way (not JSON, a key given twice, too deep,
// past the budget): the YAML path then reads it and says what is wrong.
func jsonTree(data []byte) (v any, ok bool) {
	r := &jsonReader{data: data, line: 1, b: treeBuilder{budget: MaxContractBytes}}
	if r.space(); !r.at('{') {
		return nil, false
	}
	if v, ok = r.value(); !ok {
		return nil, false
	}
	r.space()
	return v, r.pos == len(data)
}

// jsonReader reads JSON text token by token, checking its grammar as it
// goes; line counts the line breaks passed (LF, CR LF, or CR alone, as
// YAML counts them), which JSON allows only between tokens.
type jsonReader struct {
	data []byte
	pos  int
	line int
	b    treeBuilder
}

func (r *jsonReader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case '\n':
			r.line++
		case '\r':
			// A CR alone breaks a line for YAML, whose line numbers these
			// must match; a CR LF is one break, counted at its LF.
			if r.pos+1 == len(r.data) || r.data[r.pos+1] != '\n' {
				r.line++
			}
		case ' ', '\t':
		default:
			return
		}
		r.pos++
	}
}

func (r *jsonReader) at(c byte) bool { return r.pos < len(r.data) && r.data[r.pos] == c }

// value reads the value at the next token, spending the budget as
// treeBuilder does for the YAML node of the same text.
func (r *jsonReader) value() (any, bool) {
	r.space()
	if r.pos >= len(r.data) {
		return nil, false
	}
	switch r.data[r.pos] {
	case '{':
		return r.object()
	case '[':
		return r.array()
	case '"':
		s, ok := r.str()
		return s, ok && r.b.spend(len(s)+2) == nil
	}
	for _, lit := range []struct {
		word string
		v    any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(r.data[r.pos:], []byte(lit.word)) {
			r.pos += len(lit.word)
			return lit.v, r.b.spend(len(lit.word)+2) == nil
		}
	}
	start := r.pos
	for r.pos < len(r.data) && strings.IndexByte("+-.eE0123456789", r.data[r.pos]) >= 0 {
		r.pos++
	}
	n := Number(r.data[start:r.pos])
	return n, jsonNumber().MatchString(string(n)) && r.b.spend(len(n)+2) == nil
}

// str reads the string at r.pos: closed, and decoding as JSON.
func (r *jsonReader) str() (string, bool) {
	end, err := jsonscan.StringEnd(r.data, r.pos)
	if err != nil {
		return "", false
	}
	s, err := jsonscan.String(r.data[r.pos:end])
	r.pos = end
	return s, err == nil
}

func (r *jsonReader) deeper() bool {
	r.b.depth++
	return r.b.depth <= maxDepth && r.b.spend(2) == nil
}

func (r *jsonReader) object() (any, bool) {
	obj := &Object{Line: r.line, Members: make([]Member, 0, 4)}
	if !r.deeper() {
		return nil, false
	}
	defer func() { r.b.depth-- }()
	r.pos++ // {
	r.space()
	if r.at('}') {
		r.pos++
		return obj, true
	}
	var seen map[string]bool // made past a few keys; below, the members are searched
	for {
		r.space()
		if !r.at('"') {
			return nil, false
		}
		k, ok := r.str()
		if !ok || r.seen(obj, seen, k) {
			return nil, false
		}
		if len(obj.Members) == 8 {
			seen = map[string]bool{}
			for _, m := range obj.Members {
				seen[m.Key] = true
			}
		}
		if seen != nil {
			seen[k] = true
		}
		if r.space(); !r.at(':') {
			return nil, false
		}
		r.pos++
		v, ok := r.value()
		if !ok || r.b.spend(len(k)+4) != nil {
			return nil, false
		}
		obj.Members = append(obj.Members, Member{Key: k, Value: v})
		r.space()
		switch {
		case r.at(','):
			r.pos++
		case r.at('}'):
			r.pos++
			return obj, true
		default:
			return nil, false
		}
	}
}

// seen reports whether obj already has key k: in seen once it is made,
// else among its few members.
func (r *jsonReader) seen(obj *Object, seen map[string]bool, k string) bool {
	if seen != nil {
		return seen[k]
	}
	for _, m := range obj.Members {
		if m.Key == k {
			return true
		}
	}
	return false
}

func (r *jsonReader) array() (any, bool) {
	if !r.deeper() {
		return nil, false
	}
	defer func() { r.b.depth-- }()
	r.pos++ // [
	out := []any{}
	r.space()
	if r.at(']') {
		r.pos++
		return out, true
	}
	for {
		v, ok := r.value()
		if !ok || r.b.spend(1) != nil {
			return nil, false
		}
		out = append(out, v)
		r.space()
		switch {
		case r.at(','):
			r.pos++
		case r.at(']'):
			r.pos++
			return out, true
		default:
			return nil, false
		}
	}
}
