package main

import (
	"fmt"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
)

type capabilitiesCmd struct {
	Kind   string `arg:"" enum:"${kinds}" help:"The kind: ${kinds_or}."`
	Render bool   `help:"Print each operation's vendor rendering, one line each, instead of the JSON descriptor."`
}

// descriptor is the kind's capabilities; the enum admits only the table's
// kinds.
func descriptor(name string) *kind.Capabilities {
	k, _ := kinds.Lookup(name)
	return k.Descriptor().Capabilities
}

func (c *capabilitiesCmd) run(e *env) (exit.Code, error) {
	d := descriptor(c.Kind)
	if c.Render {
		_, err := fmt.Fprint(e.stdout, d.Render())
		return exit.OK, err
	}
	b, err := d.JSON()
	if err != nil {
		return exit.Refused, err
	}
	_, err = e.stdout.Write(b)
	return exit.OK, err
}
