package attest

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/record"
)

var update = flag.Bool("update", false, "rewrite the golden reports, exit codes and documents from what the code produces")

// goldenCase is testdata/golden/<name>/case.json: the launch's declared
// facts, what the auditor said (when one ran) and how the child ended as
// the launcher saw it (when the stream's marker does not say).
type goldenCase struct {
	Launch    Launch          `json:"launch"`
	Auditor   *AuditorResult  `json:"auditor"`
	ChildExit *record.Process `json:"child_exit"`
}

// TestGoldenReports runs every case under testdata/golden: events.jsonl and
// case.json in; report.txt (the stderr report, empty when no audit is
// owed), exit (the run's exit code) and document.json (the attestation
// document) out. Run with -update to regenerate, then read the diff.
func TestGoldenReports(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "golden", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden cases under testdata/golden (%v)", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var c goldenCase
			readJSON(t, filepath.Join(dir, "case.json"), &c)
			f, err := os.Open(filepath.Join(dir, "events.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			lines, err := ReadStream(f)
			if err != nil {
				t.Fatal(err)
			}
			ev := Evaluate(lines, c.Launch)
			var report bytes.Buffer
			code, err := ev.Conclude(&report, c.Launch.AuditOwed(), c.Auditor, c.ChildExit)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := json.MarshalIndent(ev.Document(c.Launch.Kind, c.Launch.AuditOwed(), c.Auditor, c.ChildExit), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{
				"report.txt":    report.String(),
				"exit":          strconv.Itoa(int(code)) + "\n",
				"document.json": string(doc) + "\n",
			}
			for name, text := range got {
				path := filepath.Join(dir, name)
				if *update {
					if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./attest -run TestGoldenReports -update)", err)
				}
				if d := cmp.Diff(string(want), text); d != "" {
					t.Errorf("%s differs from the golden file (-want +got):\n%s", name, d)
				}
			}
			checkLayout(t, c.Launch.AuditOwed(), report.String())
		})
	}
}

// checkLayout holds every golden report to the layout rules of SPEC §9,
// independently of the golden text: exactly one withheld shape, one stream
// line, and the three closing lines last; none of it without an audit.
func checkLayout(t *testing.T, audited bool, report string) {
	t.Helper()
	if !audited {
		if report != "" {
			t.Errorf("a run that owes no audit printed a report:\n%s", report)
		}
		return
	}
	lines := strings.Split(strings.TrimSuffix(report, "\n"), "\n")
	count := func(prefix string) int {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				n++
			}
		}
		return n
	}
	for prefix, want := range map[string]int{
		"withheld: ": 1, "stream: ": 1, "decision census: ": 1, "  by seam": -1, "  by decider": -1,
		"child exit: ": 1, "control verdict: ": 1, "audit verdict: ": 1,
	} {
		if n := count(prefix); (want > 0 && n != want) || (want < 0 && n == 0) {
			t.Errorf("report has %d line(s) starting %q", n, prefix)
		}
	}
	if len(lines) < 3 {
		t.Fatalf("report too short:\n%s", report)
	}
	tail := lines[len(lines)-3:]
	for i, prefix := range []string{"child exit: ", "control verdict: ", "audit verdict: "} {
		if !strings.HasPrefix(tail[i], prefix) {
			t.Errorf("closing line %d is %q, want it to start %q", i+1, tail[i], prefix)
		}
	}
	rows := 0
	for _, l := range lines {
		if strings.HasPrefix(l, "  H") {
			rows++
		}
	}
	if rows != len(Rows) {
		t.Errorf("report has %d row lines, want %d", rows, len(Rows))
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
