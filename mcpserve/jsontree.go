package mcpserve

import (
	"bytes"
	"encoding/json"
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
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 || data[0] != '{' || !json.Valid(data) {
		return nil, false
	}
	r := &jsonReader{data: data, line: 1, b: treeBuilder{budget: MaxContractBytes}}
	v, ok = r.value()
	return v, ok
}

// jsonReader walks text json.Valid accepted, so it checks no grammar; line
// counts the newlines passed, which JSON allows only between tokens.
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
		case ' ', '\t', '\r':
		default:
			return
		}
		r.pos++
	}
}

// value reads the value at the next token, spending the budget as
// treeBuilder does for the YAML node of the same text.
func (r *jsonReader) value() (any, bool) {
	r.space()
	switch c := r.data[r.pos]; c {
	case '{':
		return r.object()
	case '[':
		return r.array()
	case '"':
		s, ok := r.str()
		return s, ok && r.b.spend(len(s)+2) == nil
	case 't':
		r.pos += len("true")
		return true, r.b.spend(len("true")+2) == nil
	case 'f':
		r.pos += len("false")
		return false, r.b.spend(len("false")+2) == nil
	case 'n':
		r.pos += len("null")
		return nil, r.b.spend(len("null")+2) == nil
	}
	start := r.pos
	for r.pos < len(r.data) && strings.IndexByte("+-.eE0123456789", r.data[r.pos]) >= 0 {
		r.pos++
	}
	n := Number(r.data[start:r.pos])
	return n, r.b.spend(len(n)+2) == nil
}

// str reads the string at r.pos.
func (r *jsonReader) str() (string, bool) {
	start := r.pos
	r.pos++
	for {
		q := bytes.IndexByte(r.data[r.pos:], '"') + r.pos
		backslashes := 0
		for k := q - 1; r.data[k] == '\\'; k-- {
			backslashes++
		}
		r.pos = q + 1
		if backslashes%2 == 0 {
			break
		}
	}
	s, err := jsonscan.String(r.data[start:r.pos])
	return s, err == nil
}

func (r *jsonReader) deeper() bool {
	r.b.depth++
	return r.b.depth <= maxDepth && r.b.spend(2) == nil
}

func (r *jsonReader) object() (any, bool) {
	obj := &Object{Line: r.line}
	if !r.deeper() {
		return nil, false
	}
	defer func() { r.b.depth-- }()
	r.pos++ // {
	seen := map[string]bool{}
	for {
		r.space()
		if r.data[r.pos] == '}' {
			r.pos++
			return obj, true
		}
		if r.data[r.pos] == ',' {
			r.pos++
			r.space()
		}
		k, ok := r.str()
		if !ok || seen[k] {
			return nil, false
		}
		seen[k] = true
		r.space()
		r.pos++ // :
		v, ok := r.value()
		if !ok || r.b.spend(len(k)+4) != nil {
			return nil, false
		}
		obj.Members = append(obj.Members, Member{Key: k, Value: v})
	}
}

func (r *jsonReader) array() (any, bool) {
	if !r.deeper() {
		return nil, false
	}
	defer func() { r.b.depth-- }()
	r.pos++ // [
	out := []any{}
	for {
		r.space()
		switch r.data[r.pos] {
		case ']':
			r.pos++
			return out, true
		case ',':
			r.pos++
		}
		v, ok := r.value()
		if !ok || r.b.spend(1) != nil {
			return nil, false
		}
		out = append(out, v)
	}
}
