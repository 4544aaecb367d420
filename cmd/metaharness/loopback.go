package main

import "github.com/metaharness/metaharness/exit"

type loopbackCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"The proxy's flags."`
}

func (c *loopbackCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, notBuilt("loopback", "the credential-attaching proxy (loopback)")
}
