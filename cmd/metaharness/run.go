package main

import "github.com/metaharness/metaharness/exit"

type runCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"KIND and the run's flags."`
}

func (c *runCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, notBuilt("run", "the launcher and the claude adapter (launcher, launcher/claude)")
}
