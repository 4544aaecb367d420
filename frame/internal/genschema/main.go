// Command genschema writes the frame document's JSON Schema into a
// directory; run by go generate in package frame.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/frame"
)

func main() {
	out := flag.String("out", "schemas", "directory to write the schema into")
	flag.Parse()
	b, err := frame.Schema()
	if err == nil {
		err = os.WriteFile(filepath.Join(*out, "frame.schema.json"), b, 0o644)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "genschema: frame.schema.json: %v\n", err)
		os.Exit(1)
	}
}
