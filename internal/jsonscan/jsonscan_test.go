package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

// members walks obj into the map encoding/json would make of it: the last
// of a repeated key wins.
func members(obj []byte) (map[string]string, error) {
	m := map[string]string{}
	err := Members(obj, func(k, v []byte) { m[string(k)] = string(v) })
	return m, err
}

func TestMembers(t *testing.T) {
	for _, c := range []struct {
		in   string
		want map[string]string
	}{
		{`{}`, map[string]string{}},
		{` { } `, map[string]string{}},
		{`{"a":1}`, map[string]string{"a": "1"}},
		{`{"a" : "x\"}" , "b":[1,{"c":"]"}], "d":{"e":[]},"f":null,"g":true}`,
			map[string]string{"a": `"x\"}"`, "b": `[1,{"c":"]"}]`, "d": `{"e":[]}`, "f": "null", "g": "true"}},
		{`{"a\u0062":1,"ab":2}`, map[string]string{"ab": "2"}},
		{`{"k":"\\","l":"\\\""}`, map[string]string{"k": `"\\"`, "l": `"\\\""`}},
	} {
		got, err := members([]byte(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.in, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %q is %q, want %q", c.in, k, got[k], v)
			}
		}
	}
	for _, bad := range []string{``, `[]`, `"s"`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{"a":1}x`, `{"a":"1}`, `{"a":[1}`, `{1:2}`, `{"a":1 "b":2}`} {
		if _, err := members([]byte(bad)); err == nil {
			t.Errorf("%q was walked as an object", bad)
		}
	}
}

func TestString(t *testing.T) {
	for _, raw := range []string{`""`, `"plain"`, `"tab\there"`, `"\u00e9"`, "\"caf\xc3\xa9\"", "\"bad\xff\"", `"\ud800"`, `5`, `"unterminated`} {
		got, err := String([]byte(raw))
		var want string
		wantErr := json.Unmarshal([]byte(raw), &want)
		if (err == nil) != (wantErr == nil) || got != want {
			t.Errorf("String(%s) = %q, %v; encoding/json says %q, %v", raw, got, err, want, wantErr)
		}
	}
}

// FuzzMembers: the walk never panics, every object encoding/json accepts
// is walked, and its members are the ones encoding/json decodes.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"format":"metaharness.event/1","seq":1,"run":"r","event":"text","text":"a\"b"}`,
		`{"a":{"b":["}",{"c":"\\"}]},"a":2}`, `{"\u0066ormat":null}`, `{"a":tru}`, "{\"k\xff\":1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		got, err := members(obj)
		var want map[string]json.RawMessage
		if json.Unmarshal(obj, &want) != nil || bytes.HasPrefix(bytes.TrimSpace(obj), []byte("null")) {
			return
		}
		if err != nil {
			t.Fatalf("%q is a JSON object, and the walk refused it: %v", obj, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%q: walked %v, encoding/json has %d members", obj, got, len(want))
		}
		for k, v := range want {
			if got[k] != string(v) {
				t.Fatalf("%q: member %q walked as %q, encoding/json has %q", obj, k, got[k], v)
			}
		}
	})
}
