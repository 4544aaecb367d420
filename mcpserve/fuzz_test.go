package mcpserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/metaharness/metaharness/exit"
)

// FuzzParseContract: any bytes are a contract or one of the loader's
// refusals, never a panic; a contract's scratch copy reads back identical.
func FuzzParseContract(f *testing.F) {
	files, _ := filepath.Glob("testdata/contracts/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(testContract))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseContract("fuzz.yaml", data)
		if err != nil {
			var r *exit.Refusal
			if !errors.As(err, &r) || (r.Name != RefuseUnreadable && r.Name != RefuseNotToolContract && r.Name != RefuseMalformed) {
				t.Fatalf("not a loader refusal: %v", err)
			}
			return
		}
		copyBytes := c.CopyBytes()
		if len(copyBytes) > MaxContractBytes {
			return // refused as catalogue-malformed by WriteCopy
		}
		back, err := ParseContract("copy", copyBytes)
		if err != nil {
			// A key past YAML's implicit-key limit cannot be carried;
			// WriteCopy refuses it as catalogue-malformed.
			return
		}
		if eq, where := c.Equal(back); !eq {
			t.Fatalf("the copy reads back different at %s:\n%s", where, copyBytes)
		}
		for _, e := range c.Entries {
			if !json.Valid(e.InputSchema()) {
				t.Fatalf("%s publishes an input schema that is not JSON: %s", e.Name, e.InputSchema())
			}
		}
	})
}

// FuzzCheckArguments: any argument bytes are refused with a message naming
// the entry, or checked into an object of the entry's fields, every
// required one present and not null, no null left, and checking that again
// changes nothing.
func FuzzCheckArguments(f *testing.F) {
	for _, s := range []string{``, `null`, `[]`, `"x"`, `{}`, `{"path":"a"}`, `{"path":null}`, `{"path":"a","max_bytes":null}`,
		`{"path":"a","path":"b"}`, `{"path":"a","bogus":1}`, `{"path":"a"} x`, `{"path":"\u0000","encoding":[1,{"a":null}]}`, `{"max_bytes":1e999,"path":""}`,
		`{"path":"a","\u0070ath":"b"}`, `{"path":"a","Path":"b"}`, `{"path":"a","encoding":{"k":1,"k":2}}`} {
		f.Add([]byte(s))
	}
	c, err := ParseContract("t.yaml", []byte(testContract))
	if err != nil {
		f.Fatal(err)
	}
	e := c.Entries[0]
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, cerr := e.CheckArguments(raw)
		if cerr != nil {
			if cerr.Entry != e.Name {
				t.Fatalf("refusal names %q, not the entry", cerr.Entry)
			}
			return
		}
		out := args.JSON()
		if !json.Valid(out) {
			t.Fatalf("checked arguments are not JSON: %s", out)
		}
		for _, a := range args {
			if !contains(e.Fields(), a.Name) || isNull(a.Value) {
				t.Fatalf("checked arguments keep %q=%s", a.Name, a.Value)
			}
		}
		for _, r := range e.Required() {
			if _, ok := args.Get(r); !ok {
				t.Fatalf("required %q missing from %s", r, out)
			}
		}
		again, cerr := e.CheckArguments(out)
		if cerr != nil || string(again.JSON()) != string(out) {
			t.Fatalf("checking %s again gave %v %s", out, cerr, again.JSON())
		}
	})
}

// FuzzJSONTreeMatchesYAML: whatever jsonTree reads, the YAML path reads
// the same (values, key order, each object's line), wherever the YAML path
// reads it at all; it refuses a few JSON texts jsonTree takes faithfully
// (a key past 1024 characters, an escaped surrogate pair, a raw NEL).
func FuzzJSONTreeMatchesYAML(f *testing.F) {
	files, _ := filepath.Glob("testdata/contracts/*")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f.Add(b)
		if c, err := ParseContract(p, b); err == nil {
			f.Add(c.CopyBytes())
		}
	}
	for _, s := range []string{`{}`, "\n\n {\"a\":{}}", `{"a":tru}`, `{"a":1,}`, `{"a":[1,]}`, `{"a":01}`, `{"a":"\x"}`, `{"a":1} {}`, `{"a":1e400,"b":-0.0,"c":[true,false,null,[]]}`, "{\n\"a\"\t:\n{\"b\":\"\\u00e9\\n\\\"\"},\n\"c\":{}}",
		`{"a":1,"a":2}`, `{"a":"\ud83d\ude00"}`, `{"<<":{"a":1}}`, `{"a":[{"b":{}}]} x`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, ok := jsonTree(data)
		if !ok {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("jsonTree read %q, which is not JSON", data)
		}
		y, err := yamlTree(data)
		if err != nil {
			return
		}
		if eq, where := equalValue(j, y, ""); !eq {
			t.Fatalf("JSON and YAML read %q differently at %q", data, where)
		}
		if where := lineDiff(j, y, ""); where != "" {
			t.Fatalf("JSON and YAML place the object at %q on different lines in %q", where, data)
		}
	})
}

// lineDiff names the first object whose Line differs between two equal
// trees, "" when none does.
func lineDiff(a, b any, path string) string {
	switch av := a.(type) {
	case []any:
		for i := range av {
			if w := lineDiff(av[i], b.([]any)[i], fmt.Sprintf("%s[%d]", path, i)); w != "" {
				return w
			}
		}
	case *Object:
		bv := b.(*Object)
		if av.Line != bv.Line {
			return orRoot(path)
		}
		for i, m := range av.Members {
			if w := lineDiff(m.Value, bv.Members[i].Value, joinPath(path, m.Key)); w != "" {
				return w
			}
		}
	}
	return ""
}
