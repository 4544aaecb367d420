package attest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/metaharness/metaharness/record"
)

// TestDocumentSchemaMatchesTypes fails when schemas/attestation.schema.json
// drifts from the Go types; run `go generate ./...` to regenerate.
func TestDocumentSchemaMatchesTypes(t *testing.T) {
	want, err := DocumentSchema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "schemas", "attestation.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Error("schemas/attestation.schema.json drifted from the types: run `go generate ./...`")
	}
}

// TestDocumentRoundTrips: the document reads back as written, the
// attestation's lists stay arrays, and withheld keeps its three meanings.
func TestDocumentRoundTrips(t *testing.T) {
	for _, withheld := range [][]record.Withheld{nil, {}, {{Tool: "Task", Reason: "r"}}} {
		s := cleanStarted()
		s.Withheld = withheld
		e := Evaluate(stream(s, ended()), cleanLaunch())
		aud := &AuditorResult{Argv: []string{"a", "--spec", "s"}, Exit: ip(1), VerdictRows: 2, Rows: []string{"x", "y"}}
		doc := e.Document("claude", true, aud, nil)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatal(err)
		}
		if (withheld == nil) != (string(raw["withheld"]) == "null") {
			t.Errorf("withheld %s: null exactly when the harness did not say (it said %v)", raw["withheld"], withheld)
		}
		var back Document
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		// The attestation's nil lists are written as [] and read back empty.
		if d := cmp.Diff(doc, back, cmpopts.EquateEmpty(), cmp.AllowUnexported(RowID{})); d != "" {
			t.Errorf("round trip (-wrote +read):\n%s", d)
		}
		if doc.ExitCode != 1 || doc.ControlVerdict != OK || doc.ChildExit != "0" || doc.Format != DocumentFormat || doc.Run != "r1" {
			t.Errorf("document %+v", doc)
		}
	}
}
