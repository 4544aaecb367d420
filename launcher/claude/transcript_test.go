package claude

import (
	"bytes"
	"os"
	"testing"

	"github.com/metaharness/metaharness/record"
)

// FuzzReader: no vendor line makes the reader panic, every non-blank line
// yields at least one event (nothing is dropped), and every event encodes.
func FuzzReader(f *testing.F) {
	if b, err := os.ReadFile("../../conformance/testdata/c2/claude/catalogue-under-a-frame.in.jsonl"); err == nil {
		for _, l := range bytes.Split(b, []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"type":"assistant","message":{"id":"m","content":[{"type":"server_tool_use"}]}}`))
	f.Add([]byte(`{"type":"result","is_error":true,"result":"Please run /login"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var r Reader
		items := r.Read(line)
		if len(bytes.TrimSpace(bytes.TrimRight(line, "\r\n"))) > 0 && len(items) == 0 {
			t.Fatalf("line dropped: %q", line)
		}
		for _, it := range items {
			if _, err := record.EncodeEvent(1, "r", nil, it.Event); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
		}
	})
}

func TestCloseReason(t *testing.T) {
	f, tr := false, true
	budget := "error_max_budget_usd"
	for _, c := range []struct {
		t    *record.SessionEnded
		want string
	}{
		{nil, record.ReasonError},
		{&record.SessionEnded{IsError: &f}, record.ReasonCompleted},
		{&record.SessionEnded{IsError: &tr}, record.ReasonError},
		{&record.SessionEnded{IsError: &tr, Subtype: &budget}, record.ReasonBudget},
		{&record.SessionEnded{}, record.ReasonError},
	} {
		if got := CloseReason(c.t); got != c.want {
			t.Errorf("CloseReason(%+v) = %s, want %s", c.t, got, c.want)
		}
	}
}
