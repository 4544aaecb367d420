package frame

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSchemaMatchesTypes fails when schemas/frame.schema.json drifts from the
// Go types; run `go generate ./...` to regenerate.
func TestSchemaMatchesTypes(t *testing.T) {
	want, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "schemas", "frame.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("schemas/frame.schema.json drifted from the types: run `go generate ./...`")
	}
}
