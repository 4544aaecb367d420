package b10x_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
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

// FuzzParseHooks: the caller's hooks file is outside input. Whatever it
// holds, ParseHooks refuses it or returns declarations the loop reads (a
// known point, an argv, a tools list only where it means something and
// never empty), which re-encode as a file ParseHooks reads the same way.
func FuzzParseHooks(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"hooks":[{"on":"before-call","tools":["file_write"],"command":["/g","--x"]},{"on":"stop","command":["t"]}]}`,
		`{"version":1,"hooks":[]}`, `{"version":1}`, `{"hooks":[]}`, `{"version":2,"hooks":[]}`,
		`{"version":1,"hooks":[{"on":"after-call","tools":[],"command":["x"]}]}`,
		`{"version":1,"hooks":[{"on":"transition","tools":["run"],"command":["x"]}]}`,
		`{"version":1,"hooks":[{"on":"before-call","command":["x"],"command":["y"]}]}`,
		`{"version":1,"Version":1,"hooks":[]}`, `{"version":1,"hooks":null}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hooks, err := b10x.ParseHooks(data)
		if err != nil {
			return
		}
		for i, h := range hooks {
			onCall := h.On == "before-call" || h.On == "after-call"
			if !slices.Contains(b10x.HookPoints, h.On) || len(h.Command) == 0 || (h.Tools != nil && (len(h.Tools) == 0 || !onCall)) {
				t.Fatalf("hook %d of %q: %+v", i+1, data, h)
			}
		}
		b, err := json.Marshal(b10x.HooksFile{Version: b10x.HooksVersion, Hooks: hooks})
		if err != nil {
			t.Fatal(err)
		}
		again, err := b10x.ParseHooks(b)
		if err != nil || !reflect.DeepEqual(again, hooks) && !(len(again) == 0 && len(hooks) == 0) {
			t.Fatalf("%q re-encodes as %s, read as %+v, %v", data, b, again, err)
		}
	})
}
