package attest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
// outcome and a retry meaning, its default the first of its code; every
// outcome's name is one of a kind, and the schema's enums list exactly the
// names and retries the outcomes use.
func TestSummaryNamesEveryExitCode(t *testing.T) {
	b, _ := SummarySchema()
	var schema struct {
		Defs struct {
			Summary struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			}
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	names, retries := map[string]bool{}, map[string]bool{}
	for _, o := range Outcomes {
		if names[o.Name] {
			t.Errorf("outcome %q twice", o.Name)
		}
		names[o.Name], retries[o.Retry] = true, true
	}
	for field, used := range map[string]map[string]bool{"outcome": names, "retry": retries} {
		enum := schema.Defs.Summary.Properties[field].Enum
		if len(enum) != len(used) {
			t.Errorf("the schema's %s enum %v, the outcomes use %v", field, enum, used)
		}
		for _, v := range enum {
			if !used[v] {
				t.Errorf("the schema's %s enum has %q, which no outcome uses", field, v)
			}
		}
	}
	for _, c := range []exit.Code{exit.OK, exit.Gap, exit.Refused, exit.Unknown, exit.Quota} {
		s := NewSummary("claude", OutcomeOf(c))
		if s.Outcome == "" || s.Retry == "" || s.ExitCode != int(c) {
			t.Errorf("exit %d: summary %+v", c, s)
		}
	}
	if OutcomeOf(exit.Unknown) != OutcomeUnknown || OutcomeKeyRejected.LineName() != "key-rejected" {
		t.Error("exit 3's default is not unknown, or a line name is not the outcome's with - for _")
	}
}

// TestSummaryAnswerIsBounded: a long answer is cut on a character
// boundary and says so; the document stays inside a fleet's 256 KiB.
func TestSummaryAnswerIsBounded(t *testing.T) {
	s := NewSummary("claude", OutcomeOK)
	s.SetAnswer(strings.Repeat("é", MaxSummaryAnswer)) // two bytes each
	if !s.FinalAnswerTruncated || len(*s.FinalAnswer) > MaxSummaryAnswer || !utf8.ValidString(*s.FinalAnswer) {
		t.Errorf("cut to %d bytes (truncated %v, valid %v)", len(*s.FinalAnswer), s.FinalAnswerTruncated, utf8.ValidString(*s.FinalAnswer))
	}
	b, err := json.Marshal(s)
	if err != nil || len(b) > 256<<10 {
		t.Errorf("%d bytes (%v)", len(b), err)
	}
	short := NewSummary("claude", OutcomeOK)
	short.SetAnswer("done")
	if short.FinalAnswerTruncated || *short.FinalAnswer != "done" {
		t.Errorf("a short answer: %+v", short)
	}
}

// TestEmbeddingOutcomeTable: docs/embedding.md's table of how a run ends
// lists every outcome once, in the order of Outcomes, each with its exit
// code and retry.
func TestEmbeddingOutcomeTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "embedding.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Exit codes and outcomes\n")
	if !ok {
		t.Fatal("docs/embedding.md has no '### Exit codes and outcomes' section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	row := regexp.MustCompile("(?m)^\\| (\\d) \\| `([a-z_]+)` \\| `([a-z_]+)` \\|")
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) != len(Outcomes) {
		t.Fatalf("the table has %d rows, there are %d outcomes", len(rows), len(Outcomes))
	}
	for i, r := range rows {
		o := Outcomes[i]
		if want := []string{fmt.Sprint(int(o.Code)), o.Name, o.Retry}; !slices.Equal(r[1:], want) {
			t.Errorf("row %d is %v, Outcomes[%d] is %v", i, r[1:], i, want)
		}
	}
}
