// Command genschema writes the tool contract's JSON Schema into a
// directory; run by go generate in package mcpserve.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/mcpserve"
)

func main() {
	out := flag.String("out", "schemas", "directory to write the schema into")
	flag.Parse()
	b, err := mcpserve.ContractSchema()
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, mcpserve.ContractSchemaFile), b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "genschema: %v\n", err)
		os.Exit(1)
	}
}
