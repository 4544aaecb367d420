package jsonscan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

type inner struct {
	Op     string `json:"op"`
	Server string `json:"server,omitempty"`
}

type Embedded struct {
	Digest string `json:"digest"`
}

type outer struct {
	Embedded
	Name    string            `json:"name"`
	Ops     []inner           `json:"operations"`
	One     *inner            `json:"one"`
	ByName  map[string]inner  `json:"by_name"`
	Raw     json.RawMessage   `json:"raw"`
	Any     any               `json:"any"`
	Skipped string            `json:"-"`
	Plain   int               // no tag: the Go name is the key
	Nums    map[string]string `json:"nums"`
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		in      string
		opts    Options
		problem Problem
		path    string
		key     string
		msg     string
	}{
		{in: `{"name":"a","operations":[{"op":"x"}],"digest":"d","Plain":1}`},
		{in: `{"name":"a","name":"b"}`, problem: Duplicate, key: "name", msg: `the key "name" is given twice in the top-level object; give each key once`},
		{in: `{"name":"a","\u006eame":"b"}`, problem: Duplicate, key: "name"},
		{in: `{"operations":[{"op":"a"},{"op":"b","op":"c"}]}`, problem: Duplicate, path: "operations[1]", key: "op",
			msg: `the key "op" is given twice in operations[1]; give each key once`},
		{in: `{"raw":{"x":{"y":1,"y":2}}}`, problem: Duplicate, path: "raw.x", key: "y"},
		{in: `{"any":[{"k":1},[{"k":1,"k":1}]]}`, problem: Duplicate, path: "any[1][0]", key: "k"},
		{in: `{"by_name":{"a":{"op":"x"},"a":{"op":"y"}}}`, problem: Duplicate, path: "by_name", key: "a"},
		{in: `{"Name":"a"}`, problem: CaseVariant, key: "Name",
			msg: `the key "Name" in the top-level object is "name" spelled in another case; keys are case-sensitive`},
		{in: `{"name":"a","NAME":"b"}`, problem: CaseVariant, key: "NAME"},
		{in: `{"Digest":"d"}`, problem: CaseVariant, key: "Digest"},
		{in: `{"plain":1}`, problem: CaseVariant, key: "plain"},
		{in: `{"one":{"OP":"x"}}`, problem: CaseVariant, path: "one", key: "OP"},
		{in: `{"by_name":{"a":{"Op":"x"}}}`, problem: CaseVariant, path: "by_name.a", key: "Op"},
		{in: "{\"na\u212Ae\":1}", problem: 0}, // the Kelvin sign folds to k, not to m: no field
		{in: "{\"operations\":[{\"\u017Fer\u212Aer\":1}]}", problem: 0},
		{in: "{\"operations\":[{\"\u017Ferver\":1}]}", problem: CaseVariant, path: "operations[0]", key: "\u017Ferver"},
		{in: `{"x":1}`},
		{in: `{"x":1}`, opts: Options{RefuseUnknown: true}, problem: Unknown, key: "x",
			msg: `the key "x" in the top-level object is not one of its keys (digest, name, operations, one, by_name, raw, any, Plain, nums)`},
		{in: `{"operations":[{"op":"a","tool":"t"}]}`, opts: Options{RefuseUnknown: true}, problem: Unknown, path: "operations[0]", key: "tool",
			msg: `the key "tool" in operations[0] is not one of its keys (op, server)`},
		{in: `{"Skipped":"x"}`, opts: Options{RefuseUnknown: true}, problem: Unknown, key: "Skipped"},
		{in: `{"raw":{"anything":1},"nums":{"k":"v"}}`, opts: Options{RefuseUnknown: true}},
		{in: `{"format":"f","name":"a"}`, opts: Options{RefuseUnknown: true, Also: []string{"format"}}},
		{in: `{"Format":"f"}`, opts: Options{Also: []string{"format"}}, problem: CaseVariant, key: "Format"},
		{in: `{"one":{"format":"f"}}`, opts: Options{RefuseUnknown: true, Also: []string{"format"}}, problem: Unknown, path: "one", key: "format"},
	} {
		err := Check([]byte(c.in), &outer{}, c.opts)
		var ke *KeyError
		if c.problem == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.in, err)
			}
			continue
		}
		if !errors.As(err, &ke) {
			t.Errorf("%s: got %v, want a key error", c.in, err)
			continue
		}
		if ke.Problem != c.problem || ke.Path != c.path || ke.Key != c.key {
			t.Errorf("%s: got problem %d at %q key %q, want %d at %q key %q", c.in, ke.Problem, ke.Path, ke.Key, c.problem, c.path, c.key)
		}
		if c.msg != "" && err.Error() != c.msg {
			t.Errorf("%s: message %q, want %q", c.in, err, c.msg)
		}
	}
}

// TestCheckUntyped: with no target only repeated keys are refused, and a
// map target takes any key once.
func TestCheckUntyped(t *testing.T) {
	if err := Check([]byte(`{"a":1,"A":2,"b":{"c":[1,{"d":null}]}}`), nil, Options{RefuseUnknown: true}); err != nil {
		t.Errorf("untyped: %v", err)
	}
	var m map[string]any
	if err := Check([]byte(`{"a":1,"A":2}`), &m, Options{RefuseUnknown: true}); err != nil {
		t.Errorf("map: %v", err)
	}
	if err := Check([]byte(`{"a":1,"a":2}`), &m, Options{}); err == nil {
		t.Error("a repeated key of a map was taken")
	}
	big := `{`
	for i := range 40 {
		big += `"k` + strconv.Itoa(i) + `":1,`
	}
	if err := Check([]byte(big+`"k7":2}`), nil, Options{}); err == nil || !strings.Contains(err.Error(), `"k7" is given twice`) {
		t.Errorf("a repeat past the small-object list: %v", err)
	}
}

// TestDecode: what passes is decoded as encoding/json decodes it; a
// document that is not JSON gets encoding/json's error.
func TestDecode(t *testing.T) {
	var o outer
	if err := Decode([]byte(`{"name":"a","operations":[{"op":"x"}]}`), &o, Options{RefuseUnknown: true}); err != nil || o.Name != "a" || o.Ops[0].Op != "x" {
		t.Errorf("decode: %+v, %v", o, err)
	}
	err := Decode([]byte(`{"name":`), &o, Options{})
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("not JSON: %v (%T), want encoding/json's syntax error", err, err)
	}
	var ut *json.UnmarshalTypeError
	if err := Decode([]byte(`{"name":1}`), &o, Options{}); !errors.As(err, &ut) {
		t.Errorf("wrong type: %v", err)
	}
	if err := Decode([]byte(strings.Repeat("[", maxDepth+1)+strings.Repeat("]", maxDepth+1)), new(any), Options{}); err == nil {
		t.Error("nesting past encoding/json's bound was decoded")
	}
}

// repeated finds a repeated key with encoding/json's tokenizer, apart
// from the walk.
func repeated(data []byte) (bool, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a number past float64 is still JSON
	type frame struct {
		obj    bool
		seen   map[string]bool
		expect bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.expect {
			if s, ok := tok.(string); ok {
				if top.seen[s] {
					return true, nil
				}
				top.seen[s] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.obj {
			top.expect = true // a value ends here or starts a nested one
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, seen: map[string]bool{}, expect: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// FuzzCheck: the walk never panics; on JSON it never reports a syntax
// error, and it refuses a repeated key exactly when encoding/json's
// tokenizer sees one; a typed walk accepts no more than an untyped one.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"a":1,"\u0061":2}`, `{"name":"x","Name":"y"}`,
		`{"operations":[{"op":"a"},{"op":"a","OP":"b"}]}`, `[1,{"x":[]}]`, `{"a":"\"}"}`, "{\"k\xff\":1,\"k\xfe\":2}", `{"digest":"d","Digest":"e"}`, `"s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data, nil, Options{})
		typed := Check(data, &outer{}, Options{RefuseUnknown: true})
		if err != nil && typed == nil {
			t.Fatalf("%q: the typed walk took what the untyped one refused (%v)", data, err)
		}
		if !json.Valid(data) {
			return
		}
		if errors.Is(err, ErrSyntax) {
			t.Fatalf("%q is JSON, and the walk says %v", data, err)
		}
		dup, terr := repeated(data)
		if terr != nil {
			t.Fatalf("%q: the tokenizer: %v", data, terr)
		}
		var ke *KeyError
		if got := errors.As(err, &ke) && ke.Problem == Duplicate; got != dup {
			t.Fatalf("%q: the walk says %v, the tokenizer finds a repeated key: %v", data, err, dup)
		}
	})
}

// BenchmarkStrictReader: what the strict check adds to a decode, side by
// side with encoding/json's decode of the same line (compare the two).
func BenchmarkStrictReader(b *testing.B) {
	type line struct {
		Format string          `json:"format"`
		Seq    int             `json:"seq"`
		CallID string          `json:"call_id"`
		Name   string          `json:"name"`
		Input  json.RawMessage `json:"input"`
	}
	for name, data := range map[string][]byte{
		"small": []byte(`{"format":"metaharness.event/1","seq":3,"call_id":"toolu_1","name":"Bash","input":{"command":"ls -la","description":"list"}}`),
		"large": []byte(`{"format":"metaharness.event/1","seq":3,"call_id":"toolu_1","name":"Write","input":{"file_path":"a.go","content":"` +
			strings.Repeat(`package main\nfunc main() { println(\"hi\") }\n`, 4000) + `"}}`),
	} {
		b.Run(name+"/check", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := Check(data, &line{}, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/unmarshal", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var l line
				if err := json.Unmarshal(data, &l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
