package mcpserve

import (
	"strings"
	"testing"
)

func readEntry(t *testing.T) *Entry {
	t.Helper()
	c, err := ParseContract("t.yaml", []byte(`
format: metaharness.tool-contract/1
entries:
  - name: fs.read
    summary: Read.
    input:
      type: object
      properties: {path: {type: string}, max_bytes: {type: integer}, encoding: {type: string}}
      required: [path]
`))
	if err != nil {
		t.Fatal(err)
	}
	return c.Entries[0]
}

// TestCheckArguments is SPEC §7.3 on the raw argument bytes.
func TestCheckArguments(t *testing.T) {
	e := readEntry(t)
	for _, tc := range []struct {
		raw, want, field string // want: the checked JSON, or a fragment of the refusal
	}{
		{``, `path" is required and was left out`, "path"}, // absent reads as {}
		{`{}`, `path" is required and was left out`, "path"},
		{`null`, `takes its arguments as a JSON object, and got null`, ""},
		{`[1,2]`, `got a list`, ""},
		{`"str"`, `got a string`, ""},
		{`7`, `got a number`, ""},
		{`true`, `got a boolean`, ""},
		{`{"path":"a","bogus":1}`, `"bogus" is not one of its input fields (path, max_bytes, encoding)`, "bogus"},
		{`{"path":null}`, `"path" is required and was null`, "path"},
		{`{"path":"a","path":"b"}`, `"path" is given twice`, "path"},
		{`{"path":"a","\u0070ath":"b"}`, `"path" is given twice`, "path"},
		{`{"path":"a","Path":"b"}`, `"Path" is not one of its input fields`, "Path"},
		{`{"path":"a","encoding":{"k":1,"k":2}}`, `the key "k" is given twice in encoding`, ""},
		{`{"path":"a"} {}`, `not JSON`, ""},
		{`{"path":"a","max_bytes":null}`, `{"path":"a"}`, ""},
		{` {"max_bytes" : 10 , "path":"a/b"} `, `{"max_bytes":10,"path":"a/b"}`, ""},
		{`{"path":"a","max_bytes":123456789012345678901234567890}`, `{"path":"a","max_bytes":123456789012345678901234567890}`, ""},
	} {
		args, cerr := e.CheckArguments([]byte(tc.raw))
		if strings.HasPrefix(tc.want, "{") {
			if cerr != nil {
				t.Errorf("%s: %v", tc.raw, cerr)
			} else if got := string(args.JSON()); got != tc.want {
				t.Errorf("%s: checked to %s, want %s", tc.raw, got, tc.want)
			}
			continue
		}
		if cerr == nil {
			t.Errorf("%s: accepted as %s", tc.raw, args.JSON())
			continue
		}
		msg := cerr.Error()
		if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "fs.read: ") || cerr.Field != tc.field || !strings.HasSuffix(msg, "nothing was done") {
			t.Errorf("%s: %q (field %q), want %q naming the entry and field %q", tc.raw, msg, cerr.Field, tc.want, tc.field)
		}
	}
}
