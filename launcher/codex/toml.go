package codex

import (
	"fmt"
	"sort"
	"strings"
)

// toml renders the small subset of TOML the scratch config.toml needs: top
// level keys, then tables, each key a string, a bool, an int or a list of
// strings. Keys are written in the order given.
type toml struct {
	b strings.Builder
}

// kv is one key and its value.
type kv struct {
	key string
	val any
}

func (t *toml) comment(text string) {
	for _, l := range strings.Split(text, "\n") {
		t.b.WriteString("# " + l + "\n")
	}
}

func (t *toml) keys(kvs ...kv) {
	for _, p := range kvs {
		fmt.Fprintf(&t.b, "%s = %s\n", p.key, tomlValue(p.val))
	}
}

func (t *toml) table(name string, kvs ...kv) {
	fmt.Fprintf(&t.b, "\n[%s]\n", name)
	t.keys(kvs...)
}

func (t *toml) String() string { return t.b.String() }

func tomlValue(v any) string {
	switch x := v.(type) {
	case string:
		return tomlString(x)
	case bool:
		return fmt.Sprint(x)
	case int:
		return fmt.Sprint(x)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = tomlString(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]string: // an inline table, keys in order
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = tomlString(k) + " = " + tomlString(x[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	panic(fmt.Sprintf("toml: no rendering for %T", v))
}

// tomlString is a TOML basic string: quote and backslash escaped, every
// control character as \uXXXX (TOML has no \x or \a escapes).
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
