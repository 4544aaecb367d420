package main

import "github.com/metaharness/metaharness/exit"

type auditCmd struct {
	Args []string `arg:"" optional:"" passthrough:"" help:"The verb's flags."`
}

// audit refuses by design: a floor verdict compares the record with the
// launch's own facts, which a transcript from elsewhere does not carry.
func (c *auditCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, exit.Refuse(RefuseNotInThisMilestone,
		"audit waits for the launch facts a foreign transcript cannot carry (the planned cwd, the declared plugins, the pin, the attestation); "+
			"audit a run as it happens with `metaharness run <KIND> --audit` instead")
}
