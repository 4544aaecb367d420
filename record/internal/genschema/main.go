// Command genschema writes the wire's JSON Schemas into a directory; run by
// go generate in package record.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metaharness/metaharness/record"
)

func main() {
	out := flag.String("out", "schemas", "directory to write the schemas into")
	flag.Parse()
	for name, build := range map[string]func() ([]byte, error){
		"event.schema.json":   record.EventSchema,
		"command.schema.json": record.CommandSchema,
	} {
		b, err := build()
		if err == nil {
			err = os.WriteFile(filepath.Join(*out, name), b, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "genschema: %s: %v\n", name, err)
			os.Exit(1)
		}
	}
}
