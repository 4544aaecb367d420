package main

import "github.com/metaharness/metaharness/exit"

type conformanceCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"KIND and the verb's flags."`
}

func (c *conformanceCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, notBuilt("conformance", "the C1, C2 and C3 vector suites (conformance)")
}
