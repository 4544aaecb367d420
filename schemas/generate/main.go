// Command generate writes the JSON Schema of every document metaharness
// reads or writes into schemas/. Each package's drift test fails when the
// checked-in file and its Go types disagree; `go generate ./...` (or
// `make schemas`) rewrites them all.
package main

//go:generate go run . -out ..

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/provenance"
	"github.com/metaharness/metaharness/record"
)

func main() {
	out := flag.String("out", "schemas", "directory to write the schemas into")
	flag.Parse()
	for name, build := range map[string]func() ([]byte, error){
		"event.schema.json":         record.EventSchema,
		"command.schema.json":       record.CommandSchema,
		"frame.schema.json":         frame.Schema,
		"attestation.schema.json":   attest.DocumentSchema,
		"run-summary.schema.json":   attest.SummarySchema,
		mcpserve.ContractSchemaFile: mcpserve.ContractSchema,
		provenance.SchemaFile:       provenance.Schema,
	} {
		b, err := build()
		if err == nil {
			err = os.WriteFile(filepath.Join(*out, name), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "schemas/generate: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
