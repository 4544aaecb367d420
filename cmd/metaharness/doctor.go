package main

import "github.com/metaharness/metaharness/exit"

type doctorCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"KIND."`
}

func (c *doctorCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, notBuilt("doctor", "the launch plan whose flags and binary it checks (launcher)")
}
