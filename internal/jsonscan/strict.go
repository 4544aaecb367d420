package jsonscan

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The strict reader. encoding/json lets the last of a repeated key win and
// matches a key to a field without regard to case, so one document can be
// read two ways: a digest or a policy that walks the bytes sees the first
// "operations", the decoder the last; "Command" reaches the field
// "command". Every parser of JSON from outside the run checks a document
// here before it decodes it, so that such a document is refused, naming
// the key and where it is, instead of being read one way by one reader and
// another way by the next.

// Problem is what is wrong with a key.
type Problem int

const (
	// Duplicate: the object gives the key twice.
	Duplicate Problem = iota + 1
	// CaseVariant: the key is one of the object's keys spelled in another
	// case, which encoding/json would read as that key.
	CaseVariant
	// Unknown: the key is none of the object's keys (Options.RefuseUnknown).
	Unknown
)

// KeyError is a key the strict reader refuses.
type KeyError struct {
	// Path is where the object holding the key is, from the document's
	// root: "" for the root itself, else as in operations[0].op.
	Path string
	// Key is the key as the document spells it (decoded).
	Key     string
	Problem Problem
	// Known are the keys the object takes, spelled as the format spells
	// them: the one meant for a CaseVariant, all of them for an Unknown.
	Known []string
}

func (e *KeyError) Error() string {
	where := "the top-level object"
	if e.Path != "" {
		where = e.Path
	}
	switch e.Problem {
	case Duplicate:
		return fmt.Sprintf("the key %q is given twice in %s; give each key once", e.Key, where)
	case CaseVariant:
		return fmt.Sprintf("the key %q in %s is %q spelled in another case; keys are case-sensitive", e.Key, where, e.Known[0])
	}
	return fmt.Sprintf("the key %q in %s is not one of its keys (%s)", e.Key, where, strings.Join(e.Known, ", "))
}

// Options says how strict Check is beyond duplicates and case variants,
// which it always refuses.
type Options struct {
	// RefuseUnknown refuses a key that names no field of the struct the
	// object decodes into. Objects decoded into a map, an interface or a
	// json.RawMessage take any key (given once).
	RefuseUnknown bool
	// Also are keys the top-level object carries besides the fields of
	// v's type (a line's header keys, read apart from its payload).
	Also []string
}

// maxDepth is encoding/json's own nesting bound: a document past it does
// not decode either.
const maxDepth = 10000

// Check walks data, one JSON value, along the type of v (a pointer or a
// value; nil checks duplicates alone) and refuses, with a *KeyError, a key
// given twice in one object, a key that names a struct field only in
// another case, and with opts.RefuseUnknown a key that names no field. A
// value that is not shaped like JSON is ErrSyntax; Decode reports the
// decoder's own error for it instead.
func Check(data []byte, v any, opts Options) error {
	w := walker{b: data, opts: opts}
	var t reflect.Type
	if v != nil {
		t = reflect.TypeOf(v)
	}
	end, err := w.value(skipSpace(data, 0), t, true)
	if err != nil {
		return err
	}
	return atEnd(data, end)
}

// Decode is json.Unmarshal after Check: data decodes into v only when no
// key in it is given twice, spelled in another case, or (with
// opts.RefuseUnknown) unknown.
func Decode(data []byte, v any, opts Options) error {
	if err := Check(data, v, opts); err != nil {
		if !errors.Is(err, ErrSyntax) {
			return err
		}
		if jerr := json.Unmarshal(data, v); jerr != nil {
			return jerr
		}
		return err
	}
	return json.Unmarshal(data, v)
}

// Unmarshal is Decode with no options beyond the strict reader's own:
// json.Unmarshal for a reader of another program's output (a vendor's
// record, a model's answer), which may carry keys the reader does not
// take, but never one given twice or in another case.
func Unmarshal(data []byte, v any) error { return Decode(data, v, Options{}) }

type walker struct {
	b     []byte
	opts  Options
	path  []seg
	depth int
}

// seg is one step of a path: a key, or an index when index >= 0. The key
// is a slice of the document (or of its decoded copy), turned into a
// string only when a path is reported.
type seg struct {
	key   []byte
	index int
}

func (w *walker) where() string {
	var b strings.Builder
	for _, s := range w.path {
		if s.index >= 0 {
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(s.key)
	}
	return b.String()
}

var (
	unmarshaler     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shape is the type a value decodes into, as far as keys go: nil when any
// key goes (an interface, a json.RawMessage, a type that decodes itself).
func shape(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		if t.Implements(unmarshaler) || t.Implements(textUnmarshaler) {
			return nil
		}
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return t
	}
	return nil
}

func (w *walker) value(i int, t reflect.Type, top bool) (int, error) {
	if i >= len(w.b) {
		return 0, ErrSyntax
	}
	switch w.b[i] {
	case '{':
		return w.object(i, shape(t), top)
	case '[':
		return w.array(i, shape(t))
	}
	return valueEnd(w.b, i)
}

func (w *walker) deeper() error {
	if w.depth++; w.depth > maxDepth {
		return ErrSyntax
	}
	return nil
}

// after reads past a member or element that ends at end: a comma, with
// more to come (done false), or close, which ends the container.
func (w *walker) after(end int, close byte) (i int, done bool, err error) {
	i = skipSpace(w.b, end)
	switch {
	case i >= len(w.b):
		return 0, false, ErrSyntax
	case w.b[i] == ',':
		return skipSpace(w.b, i+1), false, nil
	case w.b[i] == close:
		return i + 1, true, nil
	}
	return 0, false, ErrSyntax
}

func (w *walker) array(i int, t reflect.Type) (int, error) {
	if err := w.deeper(); err != nil {
		return 0, err
	}
	defer func() { w.depth-- }()
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	b := w.b
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for n := 0; ; n++ {
		w.path = append(w.path, seg{index: n})
		end, err := w.value(i, elem, false)
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = w.after(end, ']'); err != nil || done {
			return i, err
		}
	}
}

func (w *walker) object(i int, t reflect.Type, top bool) (int, error) {
	if err := w.deeper(); err != nil {
		return 0, err
	}
	defer func() { w.depth-- }()
	var fields *structFields
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	var also []string
	if top {
		also = w.opts.Also
	}
	b := w.b
	var seen keySet
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, ErrSyntax
		}
		end, err := StringEnd(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
			var s string
			if json.Unmarshal(b[i:end], &s) != nil {
				return 0, ErrSyntax
			}
			key = []byte(s)
		}
		if seen.add(key) {
			return 0, &KeyError{Path: w.where(), Key: string(key), Problem: Duplicate}
		}
		ft := elem
		if fields != nil {
			var err *KeyError
			ft, err = fields.lookup(key, also, w.opts.RefuseUnknown)
			if err != nil {
				err.Path = w.where()
				return 0, err
			}
		} else if len(also) > 0 {
			if _, err := noFields.lookup(key, also, false); err != nil {
				err.Path = w.where()
				return 0, err
			}
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrSyntax
		}
		w.path = append(w.path, seg{key: key, index: -1})
		end, err = w.value(skipSpace(b, i+1), ft, false)
		w.path = w.path[:len(w.path)-1]
		if err != nil {
			return 0, err
		}
		var done bool
		if i, done, err = w.after(end, '}'); err != nil || done {
			return i, err
		}
	}
}

// keySet holds an object's keys: a list while the object is small, a map
// past that.
type keySet struct {
	small [16][]byte
	n     int
	set   map[string]struct{}
}

// add reports whether key was there already, and adds it.
func (s *keySet) add(key []byte) bool {
	if s.set != nil {
		if _, ok := s.set[string(key)]; ok {
			return true
		}
		s.set[string(key)] = struct{}{}
		return false
	}
	for _, k := range s.small[:s.n] {
		if bytes.Equal(k, key) {
			return true
		}
	}
	if s.n < len(s.small) {
		s.small[s.n] = key
		s.n++
		return false
	}
	s.set = make(map[string]struct{}, 2*len(s.small))
	for _, k := range s.small {
		s.set[string(k)] = struct{}{}
	}
	s.set[string(key)] = struct{}{}
	return false
}

// structFields are the keys a struct decodes, as encoding/json finds them:
// tags, embedded structs promoted, the shallowest (or the one tagged) of a
// name winning, and a name left ambiguous at one depth dropped.
type structFields struct {
	names []string
	types []reflect.Type
}

// noFields stands for a top-level object that is not a struct's: only
// the Also keys are checked for their case.
var noFields = &structFields{}

// lookup finds key: the field's type, or nil when the key is one of also;
// an error for a case variant of either, and with refuseUnknown for a key
// that is neither.
func (f *structFields) lookup(key []byte, also []string, refuseUnknown bool) (reflect.Type, *KeyError) {
	for i, n := range f.names {
		if n == string(key) {
			return f.types[i], nil
		}
	}
	if slices.Contains(also, string(key)) {
		return nil, nil
	}
	for _, n := range append(f.names[:len(f.names):len(f.names)], also...) {
		if bytes.EqualFold([]byte(n), key) {
			return nil, &KeyError{Key: string(key), Problem: CaseVariant, Known: []string{n}}
		}
	}
	if refuseUnknown {
		return nil, &KeyError{Key: string(key), Problem: Unknown, Known: append(f.names[:len(f.names):len(f.names)], also...)}
	}
	return nil, nil
}

var fieldCache sync.Map // reflect.Type -> *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := typeFields(t)
	fieldCache.Store(t, f)
	return f
}

type candidate struct {
	name   string
	typ    reflect.Type
	depth  int
	tagged bool
}

func typeFields(t reflect.Type) *structFields {
	var found []candidate
	visited := map[reflect.Type]bool{}
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		if visited[t] {
			return
		}
		visited[t] = true
		defer delete(visited, t)
		for i := range t.NumField() {
			sf := t.Field(i)
			ft := sf.Type
			if sf.Anonymous {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if !sf.IsExported() && ft.Kind() != reflect.Struct {
					continue
				}
			} else if !sf.IsExported() {
				continue
			}
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" && ft.Kind() == reflect.Struct {
				walk(ft, depth+1)
				continue
			}
			tagged := name != ""
			if !tagged {
				name = sf.Name
			}
			found = append(found, candidate{name: name, typ: sf.Type, depth: depth, tagged: tagged})
		}
	}
	walk(t, 0)
	out := &structFields{}
	for _, c := range found {
		if slices.Contains(out.names, c.name) {
			continue
		}
		win, ok := dominant(found, c.name)
		if !ok {
			continue
		}
		out.names = append(out.names, win.name)
		out.types = append(out.types, win.typ)
	}
	return out
}

// dominant is encoding/json's rule for several fields of one name: the
// shallowest wins; at one depth a single tagged field wins; else none.
func dominant(found []candidate, name string) (candidate, bool) {
	var best []candidate
	for _, c := range found {
		if c.name != name {
			continue
		}
		switch {
		case len(best) == 0 || c.depth < best[0].depth:
			best = []candidate{c}
		case c.depth == best[0].depth:
			best = append(best, c)
		}
	}
	if len(best) == 1 {
		return best[0], true
	}
	var tagged []candidate
	for _, c := range best {
		if c.tagged {
			tagged = append(tagged, c)
		}
	}
	if len(tagged) == 1 {
		return tagged[0], true
	}
	return candidate{}, false
}
