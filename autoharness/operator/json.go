package operator

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/internal/jsonscan"
)

// Member is one member of a JSON object: its key and its value's bytes as
// they were sent.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Members are obj's members in order; an error when obj is not an object
// or gives a key twice anywhere (which member would count is a guess).
func Members(obj json.RawMessage) ([]Member, error) {
	if err := jsonscan.Check(obj, nil, jsonscan.Options{}); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	var out []Member
	err := jsonscan.Members(obj, func(key, val []byte) {
		out = append(out, Member{Key: string(key), Value: append(json.RawMessage(nil), val...)})
	})
	if err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return out, nil
}

// Object writes members as one compact JSON object, in order.
func Object(members []Member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(MustEncode(m.Key))
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// replace is obj with each member of set in place of the member of its
// key, or after the others when obj has none: JavaScript's {...obj, k: v}.
func replace(obj json.RawMessage, set ...Member) (json.RawMessage, error) {
	members, err := Members(obj)
	if err != nil {
		return nil, err
	}
	for _, s := range set {
		found := false
		for i := range members {
			if members[i].Key == s.Key {
				members[i].Value, found = s.Value, true
			}
		}
		if !found {
			members = append(members, s)
		}
	}
	return Object(members), nil
}

// MustEncode is Encode of a value that always encodes (strings, numbers,
// raw JSON, slices of them); it panics on any other.
func MustEncode(v any) json.RawMessage {
	b, err := autoharness.Encode(v)
	if err != nil {
		panic(err)
	}
	return b
}
