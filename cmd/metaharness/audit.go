package main

import "github.com/metaharness/metaharness/exit"

// auditCmd takes the flags an audit of a foreign transcript will take, so
// that a misspelt one is a usage error like on every verb.
type auditCmd struct {
	Transcript string  `placeholder:"FILE" help:"The vendor transcript to audit." type:"path"`
	Events     string  `placeholder:"FILE" help:"The run's event stream." type:"path"`
	Spec       string  `placeholder:"FILE" help:"The document an external auditor checks the transcript against." type:"path"`
	Auditor    *string `placeholder:"PREFIX" help:"An external auditor: an argv prefix."`
}

// audit refuses by design: a floor verdict compares the record with the
// launch's own facts, which a transcript from elsewhere does not carry.
func (c *auditCmd) run(e *env) (exit.Code, error) {
	return exit.Refused, exit.Refuse(RefuseNotInThisMilestone,
		"audit waits for the launch facts a foreign transcript cannot carry (the planned cwd, the declared plugins, the pin, the attestation); "+
			"audit a run as it happens with `metaharness run <KIND> --audit` instead")
}
