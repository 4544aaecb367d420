package kind

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
)

// The JSON a wire check compares: what the model sent (a tool call's
// input on the wire) against what a vendor's seam or record line shows of
// it, after the vendor's own parsing. Vendors read JSON differently —
// Claude Code with JavaScript (numbers are doubles, a later duplicate key
// wins), codex with serde (numbers kept exact) — so the comparison takes
// the number rule as a parameter (docs/wire-facts.md).

// DecodeJSON reads b as a JSON value with its numbers kept as written; a
// duplicate key keeps its last value, as both pinned vendors' parsers do.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// NumbersAsDoubles compares two numbers the way JavaScript reads them.
func NumbersAsDoubles(a, b json.Number) bool {
	x, errA := strconv.ParseFloat(string(a), 64)
	y, errB := strconv.ParseFloat(string(b), 64)
	return errA == nil && errB == nil && x == y
}

// NumbersExact compares two numbers as exact decimals (1.0e1 is 10).
func NumbersExact(a, b json.Number) bool {
	x, okA := new(big.Rat).SetString(string(a))
	y, okB := new(big.Rat).SetString(string(b))
	return okA && okB && x.Cmp(y) == 0
}

// EqualJSON reports whether two decoded values are the same value: objects
// by their members in any order, arrays in order, numbers by numbers.
func EqualJSON(a, b any, numbers func(a, b json.Number) bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !EqualJSON(v, w, numbers) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !EqualJSON(x[i], y[i], numbers) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numbers(x, y)
	}
	return a == b
}

// DropNulls is an object with its null members taken out, as mcp-serve's
// argument checks leave a call's input before it asks; anything else is
// returned as it was.
func DropNulls(b json.RawMessage) json.RawMessage {
	v, err := DecodeJSON(b)
	m, ok := v.(map[string]any)
	if err != nil || !ok {
		return b
	}
	for k, x := range m {
		if x == nil {
			delete(m, k)
		}
	}
	out, _ := json.Marshal(m)
	return out
}
