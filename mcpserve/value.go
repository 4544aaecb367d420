package mcpserve

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// A tool contract is held as a tree in the JSON data model, whatever syntax
// it was written in: nil, bool, string, Number, []any and *Object. Objects
// keep their key order so that what is published (an entry's input schema)
// reads the way the caller wrote it.

// Number is a JSON number kept as its text, so that no precision is lost
// between the file, the scratch copy and what tools/list publishes.
type Number string

// Object is a JSON object with its keys in document order. Line is where it
// began in the source (0 when it was not read from YAML); it is not part of
// the value.
type Object struct {
	Members []Member
	Line    int
}

// Member is one key of an Object.
type Member struct {
	Key   string
	Value any
}

// Get returns the value under key and whether the key is present.
func (o *Object) Get(key string) (any, bool) {
	for _, m := range o.Members {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// jsonNumber is the JSON number grammar (RFC 8259 §6). A plain YAML scalar
// spelled this way is a number even where YAML's own resolution would read
// a string (1e400), so that a JSON file reads the same through either parser.
var jsonNumber = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`) })

// treeBuilder turns a yaml.Node document into the tree. It expands aliases
// itself, with a budget, because an alias is how a small YAML file names a
// very large document.
type treeBuilder struct {
	budget    int                 // bytes of JSON the expanded tree may still take
	expanding map[*yaml.Node]bool // alias targets being expanded (cycle check)
	depth     int
}

// maxDepth bounds nesting: the copy indents by depth, and no schema needs
// more.
const maxDepth = 64

var errBudget = errors.New("budget")

func (b *treeBuilder) spend(n int) error {
	b.budget -= n
	if b.budget < 0 {
		return errBudget
	}
	return nil
}

func (b *treeBuilder) deeper(n *yaml.Node) error {
	if b.depth++; b.depth > maxDepth {
		return nodeErr(n, "collections nested deeper than %d levels", maxDepth)
	}
	return nil
}

// treeError is a malformed construct at a line of the source.
type treeError struct {
	line int
	msg  string
}

func (e *treeError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("line %d: %s", e.line, e.msg)
	}
	return e.msg
}

func nodeErr(n *yaml.Node, format string, args ...any) error {
	return &treeError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

func (b *treeBuilder) value(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return b.value(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, nodeErr(n, "alias *%s names no anchor", n.Value)
		}
		if b.expanding[n.Alias] {
			return nil, nodeErr(n, "alias *%s refers to itself", n.Value)
		}
		b.expanding[n.Alias] = true
		defer delete(b.expanding, n.Alias)
		return b.value(n.Alias)
	case yaml.ScalarNode:
		return b.scalar(n)
	case yaml.SequenceNode:
		if err := b.deeper(n); err != nil {
			return nil, err
		}
		defer func() { b.depth-- }()
		if err := b.spend(2); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := b.value(c)
			if err != nil {
				return nil, err
			}
			if err := b.spend(1); err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if err := b.deeper(n); err != nil {
			return nil, err
		}
		defer func() { b.depth-- }()
		if err := b.spend(2); err != nil {
			return nil, err
		}
		obj := &Object{Line: n.Line, Members: make([]Member, 0, len(n.Content)/2)}
		seen := make(map[string]int, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := b.key(n.Content[i])
			if err != nil {
				return nil, err
			}
			if first, dup := seen[k]; dup {
				return nil, nodeErr(n.Content[i], "key %q appears twice in one mapping (first at line %d)", k, first)
			}
			seen[k] = n.Content[i].Line
			v, err := b.value(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			if err := b.spend(len(k) + 4); err != nil {
				return nil, err
			}
			obj.Members = append(obj.Members, Member{Key: k, Value: v})
		}
		return obj, nil
	}
	return nil, nodeErr(n, "unexpected YAML node")
}

// key reads a mapping key: a scalar (or an alias of one), taken as the text
// written. A merge key (<<) is refused rather than guessed at.
func (b *treeBuilder) key(n *yaml.Node) (string, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", nodeErr(n, "a mapping key must be a plain string, not a collection")
	}
	if n.ShortTag() == "!!merge" {
		return "", nodeErr(n, "merge keys (<<) are not part of a tool contract; write the keys out")
	}
	return n.Value, nil
}

func (b *treeBuilder) scalar(n *yaml.Node) (any, error) {
	if err := b.spend(len(n.Value) + 2); err != nil {
		return nil, err
	}
	if n.Style == 0 && jsonNumber().MatchString(n.Value) { // plain, untagged
		return Number(n.Value), nil
	}
	switch tag := n.ShortTag(); tag {
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, nodeErr(n, "%q is not a boolean", n.Value)
		}
		return v, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err == nil {
			return Number(strconv.FormatInt(i, 10)), nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return Number(strconv.FormatUint(u, 10)), nil
		}
		return b.float(n)
	case "!!float":
		return b.float(n)
	default:
		return nil, nodeErr(n, "the YAML tag %s has no meaning in a tool contract", tag)
	}
}

func (b *treeBuilder) float(n *yaml.Node) (any, error) {
	var f float64
	if err := n.Decode(&f); err != nil {
		return nil, nodeErr(n, "%q is not a number", n.Value)
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, nodeErr(n, "%q is not a finite number, and JSON has no other kind", n.Value)
	}
	return Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// equalValue reports whether two trees hold the same document; where they
// differ it names the first place, as a path like entries[2].summary.
func equalValue(a, b any, path string) (bool, string) {
	switch av := a.(type) {
	case nil:
		return b == nil, path
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv, path
	case string:
		bv, ok := b.(string)
		return ok && av == bv, path
	case Number:
		bv, ok := b.(Number)
		return ok && av == bv, path
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false, path
		}
		for i := range av {
			if eq, where := equalValue(av[i], bv[i], fmt.Sprintf("%s[%d]", path, i)); !eq {
				return false, where
			}
		}
		return true, ""
	case *Object:
		bv, ok := b.(*Object)
		if !ok || len(av.Members) != len(bv.Members) {
			return false, path
		}
		for i, m := range av.Members {
			sub := joinPath(path, m.Key)
			if bv.Members[i].Key != m.Key {
				return false, sub
			}
			if eq, where := equalValue(m.Value, bv.Members[i].Value, sub); !eq {
				return false, where
			}
		}
		return true, ""
	}
	return false, path
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// appendJSON writes v as JSON. With indent set it pretty-prints; with yamlSafe
// set every character YAML refuses raw or reads as a line break is a \u
// escape (SPEC §7.4), so that the text reads back the same through a YAML
// parser as through a JSON one.
func appendJSON(buf []byte, v any, indent string, yamlSafe bool) []byte {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...)
	case bool:
		return strconv.AppendBool(buf, v)
	case Number:
		return append(buf, v...)
	case string:
		return appendString(buf, v, yamlSafe)
	case []any:
		if len(v) == 0 {
			return append(buf, "[]"...)
		}
		buf = append(buf, '[')
		for i, e := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = newline(buf, indent, 1)
			buf = appendJSON(buf, e, deeper(indent), yamlSafe)
		}
		buf = newline(buf, indent, 0)
		return append(buf, ']')
	case *Object:
		if len(v.Members) == 0 {
			return append(buf, "{}"...)
		}
		buf = append(buf, '{')
		for i, m := range v.Members {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = newline(buf, indent, 1)
			buf = appendString(buf, m.Key, yamlSafe)
			buf = append(buf, ':')
			if indent != "" {
				buf = append(buf, ' ')
			}
			buf = appendJSON(buf, m.Value, deeper(indent), yamlSafe)
		}
		buf = newline(buf, indent, 0)
		return append(buf, '}')
	}
	panic(fmt.Sprintf("mcpserve: %T is not a contract value", v))
}

// indent is "" (compact) or "\n" followed by the current indentation.
func deeper(indent string) string {
	if indent == "" {
		return ""
	}
	return indent + "  "
}

func newline(buf []byte, indent string, extra int) []byte {
	if indent == "" {
		return buf
	}
	buf = append(buf, indent...)
	return append(buf, strings.Repeat("  ", extra)...)
}

const hexDigits = "0123456789abcdef"

func appendString(buf []byte, s string, yamlSafe bool) []byte {
	buf = append(buf, '"')
	// Most strings are printable ASCII with nothing to escape: as they are.
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		return append(append(buf, s...), '"')
	}
	for _, r := range s {
		switch {
		case r == '"':
			buf = append(buf, `\"`...)
		case r == '\\':
			buf = append(buf, `\\`...)
		case r == '\n':
			buf = append(buf, `\n`...)
		case r == '\r':
			buf = append(buf, `\r`...)
		case r == '\t':
			buf = append(buf, `\t`...)
		case r < 0x20, yamlSafe && yamlHostile(r):
			buf = append(buf, '\\', 'u',
				hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
		default:
			buf = utf8.AppendRune(buf, r)
		}
	}
	return append(buf, '"')
}

// yamlHostile reports a character that YAML refuses raw (outside its
// printable set) or reads as a line break or a byte-order mark.
func yamlHostile(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x2028, r == 0x2029, r == 0xfeff, r == 0xfffe, r == 0xffff:
		return true
	}
	return false
}
