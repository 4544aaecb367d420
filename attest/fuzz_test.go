package attest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
)

// FuzzEvaluateStream feeds arbitrary bytes through the path a recorded
// stream takes: read, evaluate, report, document. Whatever the stream
// says, the floor never panics, judges every row, exits 0, 1 or 3, and
// ends the report with the three closing lines.
func FuzzEvaluateStream(f *testing.F) {
	golden, _ := filepath.Glob(filepath.Join("testdata", "golden", "*", "events.jsonl"))
	for _, p := range golden {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	launch := Launch{Kind: "claude", Hermetic: ModeStrict, Credentials: "api-key", PlannedCwd: "/w",
		PlannedMCPServers: []string{"metaharness"}, Pins: []string{"2.1.328"}, Plugins: []string{"p"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		lines, err := ReadStream(bytes.NewReader(data))
		if err != nil {
			return
		}
		e := Evaluate(lines, launch)
		if len(e.Rows) != len(Rows) {
			t.Fatalf("%d rows", len(e.Rows))
		}
		for _, audited := range []bool{false, true} {
			switch code := e.Exit(audited, nil); {
			case code == exit.Refused, code < 0, code > 3:
				t.Fatalf("exit %d", code)
			case !audited && code == exit.Gap:
				t.Fatal("an unaudited run exited 1")
			}
		}
		report := e.Report(nil, nil)
		tail := strings.Split(strings.TrimSuffix(report, "\n"), "\n")
		tail = tail[len(tail)-3:]
		if !strings.HasPrefix(tail[0], "child exit: ") || !strings.HasPrefix(tail[1], "control verdict: ") || !strings.HasPrefix(tail[2], "audit verdict: ") {
			t.Fatalf("closing lines %q", tail)
		}
		if _, err := json.Marshal(e.Document("claude", true, nil, nil)); err != nil {
			t.Fatal(err)
		}
	})
}
