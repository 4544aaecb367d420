package provenance

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/record"
)

// TestSchemaMatchesTypes fails when schemas/run-statement.schema.json
// drifts from the Go types; run `go generate ./...` to regenerate.
func TestSchemaMatchesTypes(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "schemas", SchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("schemas/%s drifted from the types: run `go generate ./...`", SchemaFile)
	}
}

// TestStatementsPassTheSchema: a sealed statement's payload, with an
// attestation's rows and without, passes its published schema.
func TestStatementsPassTheSchema(t *testing.T) {
	raw, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(record.SchemaBase+SchemaFile, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(record.SchemaBase + SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	_, st := records(t)
	key, _ := keyPair(t, ed25519Key(t))
	signer, err := LoadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	reason := "metaharness: stopped: the run was stopped"
	withRows := st
	withRows.Predicate.Reason = &reason
	withRows.Predicate.TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	withRows.Predicate.Attestation = VerdictsOf(&attest.Document{Mode: "on", ControlVerdict: "ok", ChildExit: "0", Terminal: "ok",
		Stream: attest.StreamState{State: "complete", Events: 9}, Rows: []attest.Row{}, Census: record.Census{BySeam: map[string]uint64{}, ByDecider: map[string]uint64{}}})
	for name, c := range map[string]struct {
		st Statement
		s  *Signer
	}{"unsigned, no attestation": {st, nil}, "signed, with rows": {withRows, signer}} {
		b, err := Seal(c.st, c.s)
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ Payload string }
		_ = json.Unmarshal(b, &env)
		payload, _ := base64.StdEncoding.DecodeString(env.Payload)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Errorf("%s: %v\n%s", name, err, payload)
		}
	}
}
