package mcpserve

import (
	"encoding/json"
	"errors"
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
