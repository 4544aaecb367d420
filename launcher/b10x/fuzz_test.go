package b10x_test

import (
	"bytes"
	"testing"

	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/record"
)

// FuzzReader: the loop's record is outside input. Whatever lines arrive,
// the reader never panics, every event it makes encodes, a record has at
// most one terminal, and the end speaks only when there was none.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		`{"kind":"started","model":"m","published_tools":["file_read"],"withheld":[{"tool":"run","reason":"no"}],"mcp":[{"connection":"gh"}],"credential_source":"none","cwd":"/w"}`,
		`{"kind":"finished","stop":{"kind":"completed"},"turns":2}` + "\n" + `{"kind":"finished","turns":1}`,
		`{"kind":"hook-ran","point":"stop","decision":{"kind":"failed","program":"x"}}`,
		`{"kind":"cost","model":"m","micro_usd":18446744073709551615}` + "\n" + `{"kind":"cost","model":"m","micro_usd":5}`,
		`{"kind":"refused","reason":"no"}`, `not json`, `{"kind":7}`, `[]`, `{"kind":"turn-started","turn":-1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &b10x.Reader{Model: "m"}
		ended := 0
		for _, line := range bytes.Split(data, []byte("\n")) {
			for _, it := range r.Read(line) {
				if _, ok := it.Event.(*record.SessionEnded); ok {
					ended++
				}
				if _, err := record.EncodeEvent(1, "fuzz", nil, it.Event); err != nil {
					t.Fatalf("%T does not encode: %v", it.Event, err)
				}
			}
		}
		if ended > 1 {
			t.Fatalf("%d terminal records", ended)
		}
		end := r.End()
		if (r.Terminal() != nil) == (len(end) > 0) || len(end) > 1 {
			t.Fatalf("terminal %v, end %v", r.Terminal(), end)
		}
	})
}
