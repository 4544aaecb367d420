package mcpserve

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestContractSchemaMatchesTypes fails when schemas/tool-contract.schema.json
// drifts from the Go types; run `go generate ./...`.
func TestContractSchemaMatchesTypes(t *testing.T) {
	want, err := ContractSchema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "schemas", ContractSchemaFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("schemas/%s drifted from the types: run `go generate ./...`", ContractSchemaFile)
	}
}
