package attest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/metaharness/metaharness/exit"
)

// TestSummarySchemaMatchesTypes fails when schemas/run-summary.schema.json
// drifts from the Go types; run `go generate ./...` to regenerate.
func TestSummarySchemaMatchesTypes(t *testing.T) {
	want, err := SummarySchema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "schemas", "run-summary.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("schemas/run-summary.schema.json drifted from the types: run `go generate ./...`")
	}
}

// TestSummaryNamesEveryExitCode: each exit code a run can end with has an
// outcome and a retry meaning, and the schema's enums list exactly those.
func TestSummaryNamesEveryExitCode(t *testing.T) {
	b, _ := SummarySchema()
	for _, c := range []exit.Code{exit.OK, exit.Gap, exit.Refused, exit.Unknown, exit.Quota} {
		s := NewSummary("claude", c)
		if s.Outcome == "" || s.Retry == "" || s.ExitCode != int(c) {
			t.Errorf("exit %d: summary %+v", c, s)
		}
		for _, v := range []string{s.Outcome, s.Retry} {
			if !strings.Contains(string(b), `"`+v+`"`) {
				t.Errorf("exit %d: %q is not in the schema's enums", c, v)
			}
		}
	}
	if len(Outcomes) != 5 {
		t.Errorf("%d outcomes, want the five exit codes", len(Outcomes))
	}
}

// TestSummaryAnswerIsBounded: a long answer is cut on a character
// boundary and says so; the document stays inside a fleet's 256 KiB.
func TestSummaryAnswerIsBounded(t *testing.T) {
	s := NewSummary("claude", exit.OK)
	s.SetAnswer(strings.Repeat("é", MaxSummaryAnswer)) // two bytes each
	if !s.FinalAnswerTruncated || len(*s.FinalAnswer) > MaxSummaryAnswer || !utf8.ValidString(*s.FinalAnswer) {
		t.Errorf("cut to %d bytes (truncated %v, valid %v)", len(*s.FinalAnswer), s.FinalAnswerTruncated, utf8.ValidString(*s.FinalAnswer))
	}
	b, err := json.Marshal(s)
	if err != nil || len(b) > 256<<10 {
		t.Errorf("%d bytes (%v)", len(b), err)
	}
	short := NewSummary("claude", exit.OK)
	short.SetAnswer("done")
	if short.FinalAnswerTruncated || *short.FinalAnswer != "done" {
		t.Errorf("a short answer: %+v", short)
	}
}
