package main

import (
	"context"
	"fmt"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kinds"
)

type doctorCmd struct {
	Kind string `arg:"" enum:"${kinds}" help:"The kind: ${kinds_or}."`
}

func (c *doctorCmd) run(e *env) (exit.Code, error) {
	k, _ := kinds.Lookup(c.Kind) // the enum admits only the table's kinds
	self, err := selfPath()
	if err != nil {
		return exit.Refused, fmt.Errorf("finding the metaharness executable whose init the confinement probe starts: %w", err)
	}
	return launcher.Doctor(context.Background(), k, e.getenv, self, e.stdout)
}
