// Command genschema writes the attestation document's JSON Schema into a
// directory; run by go generate in package attest.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/attest"
)

func main() {
	out := flag.String("out", "schemas", "directory to write the schema into")
	flag.Parse()
	b, err := attest.DocumentSchema()
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "attestation.schema.json"), b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "genschema: attestation.schema.json: %v\n", err)
		os.Exit(1)
	}
}
