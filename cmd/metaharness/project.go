package main

import "github.com/metaharness/metaharness/exit"

type projectCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"EVENTS and the verb's flags."`
}

func (c *projectCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, notBuilt("project", "the trace-ir/1 projection (record)")
}
