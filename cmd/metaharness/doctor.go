package main

import (
	"context"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kinds"
)

type doctorCmd struct {
	Kind string `arg:"" enum:"${kinds}" help:"The kind: ${kinds_or}."`
}

func (c *doctorCmd) run(e *env) (exit.Code, error) {
	k, _ := kinds.Lookup(c.Kind) // the enum admits only the table's kinds
	return launcher.Doctor(context.Background(), k, e.getenv, e.stdout)
}
