package mcpserve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
)

// CallError is a tools/call answered with isError: nothing was performed.
// It names the entry and, when one is at fault, the field.
type CallError struct {
	Entry  string
	Field  string
	Reason string
}

func (e *CallError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: field %q %s; nothing was done", e.Entry, e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %s; nothing was done", e.Entry, e.Reason)
}

func callErr(entry, field, format string, args ...any) *CallError {
	return &CallError{Entry: entry, Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Arg is one argument of a call, its value as raw JSON.
type Arg struct {
	Name  string
	Value json.RawMessage
}

// Arguments are a call's checked arguments, in the order given, with the
// nulls of optional fields removed.
type Arguments []Arg

// Get returns the raw value of a field and whether it was given.
func (a Arguments) Get(name string) (json.RawMessage, bool) {
	for _, x := range a {
		if x.Name == name {
			return x.Value, true
		}
	}
	return nil, false
}

// JSON renders the arguments as one compact JSON object.
func (a Arguments) JSON() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, x := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(x.Name)
		b.Write(k)
		b.WriteByte(':')
		_ = json.Compact(&b, x.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// CheckArguments applies SPEC §7.3 to the raw bytes of params.arguments:
// they must be an object (absent reads as {}, which MCP allows; null, a
// list, a string or a number are refused), every key one of the entry's
// input fields and given once, every required field present and not null.
// An optional field given as null reads as absent and is removed.
func (e *Entry) CheckArguments(raw json.RawMessage) (Arguments, *CallError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if !json.Valid(raw) {
		return nil, callErr(e.Name, "", "got arguments that are not JSON")
	}
	if raw[0] != '{' {
		return nil, callErr(e.Name, "", "takes its arguments as a JSON object, and got %s", jsonKind(raw))
	}
	members, err := objectMembers(raw)
	if err != nil {
		var ke *jsonscan.KeyError
		if errors.As(err, &ke) && ke.Path == "" {
			return nil, callErr(e.Name, ke.Key, "is given twice")
		}
		return nil, callErr(e.Name, "", "got arguments that are not one JSON object (%v)", err)
	}
	for _, m := range members {
		if !contains(e.fields, m.Name) {
			return nil, callErr(e.Name, m.Name, "is not one of its input fields (%s)", fieldList(e.fields))
		}
	}
	for _, r := range e.required {
		v, ok := members.Get(r)
		if !ok {
			return nil, callErr(e.Name, r, "is required and was left out")
		}
		if isNull(v) {
			return nil, callErr(e.Name, r, "is required and was null")
		}
	}
	out := members[:0:0]
	for _, m := range members {
		if !isNull(m.Value) {
			out = append(out, m)
		}
	}
	return out, nil
}

// objectMembers splits one JSON object into its members without decoding
// the values, refusing (internal/jsonscan's strict reader) a key given
// twice anywhere in it, since two readers could each pick a different one.
func objectMembers(raw []byte) (Arguments, error) {
	if err := jsonscan.Check(raw, nil, jsonscan.Options{}); err != nil {
		return nil, err
	}
	var out Arguments
	err := jsonscan.Members(raw, func(key, val []byte) {
		out = append(out, Arg{Name: string(key), Value: bytes.Clone(val)})
	})
	return out, err
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

func jsonKind(raw []byte) string {
	switch raw[0] {
	case 'n':
		return "null"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

func fieldList(fields []string) string {
	if len(fields) == 0 {
		return "it takes none"
	}
	return strings.Join(fields, ", ")
}
