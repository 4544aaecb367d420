package conformance

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
)

// TestCheckRunsEveryVectorOnDisk: the suite built into the binary is the
// one the tests check, vector for vector, and it holds.
func TestCheckRunsEveryVectorOnDisk(t *testing.T) {
	for _, kind := range []string{"claude", "b10x"} {
		r, err := Check(kind)
		if err != nil {
			t.Fatal(err)
		}
		c1, _ := filepath.Glob("testdata/c1/" + kind + "/*.json")
		c2, _ := filepath.Glob("testdata/c2/" + kind + "/*.in.jsonl")
		c3, _ := filepath.Glob("testdata/c3/*.json")
		if want := len(c1) + len(c2) + len(c3); len(r.Results) != want || len(c1) == 0 {
			t.Errorf("%s: the suite ran %d vectors, the testdata holds %d", kind, len(r.Results), want)
		}
		for _, x := range r.Results {
			if x.Err != nil {
				t.Errorf("%s %s %s: %v", kind, x.Tier, x.ID, x.Err)
			}
		}
	}
}

func TestCheckRefusesAKindWithNoSuite(t *testing.T) {
	for _, kind := range []string{"nosuchkind"} {
		_, err := Check(kind)
		var r *exit.Refusal
		if !errors.As(err, &r) || r.Name != RefuseNoVectorSuite {
			t.Errorf("%s: %v, want %s", kind, err, RefuseNoVectorSuite)
		}
	}
}

// TestReportCountsAndPrintsFailures: a C1 or C2 failure is breaking, a C3
// failure only failed; a failure's detail lines are printed beneath it.
func TestReportCountsAndPrintsFailures(t *testing.T) {
	r := &Report{Kind: "claude", Results: []Result{
		{Tier: "c1", ID: "a"},
		{Tier: "c1", ID: "b", Err: errors.New("b: the plan moved:\nwant X\n got Y")},
		{Tier: "c2", ID: "c", Err: errors.New("c: the replay moved")},
		{Tier: "c3", ID: "d", Err: errors.New("d: the trace differs")},
	}}
	if r.Failed() != 3 || r.Breaking() != 2 {
		t.Errorf("failed %d breaking %d, want 3 and 2", r.Failed(), r.Breaking())
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"pass c1 a",
		"FAIL c1 b — b: the plan moved:",
		"    want X",
		"     got Y",
		"FAIL c2 c — c: the replay moved",
		"FAIL c3 d — d: the trace differs",
		"4 vectors, 3 failed — no model, no network, no credential",
		"",
	}, "\n")
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	c := r.Contract("claude 2.1.328")
	if c.Checked != 4 || c.Failed != 3 || c.BreakingChanges != 2 || c.Kind != "contract_result" || c.Consumer != "metaharness.event/1" {
		t.Errorf("contract %+v", c)
	}
}
