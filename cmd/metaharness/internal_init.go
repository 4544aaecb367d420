package main

import (
	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
)

// initCmd is PID 1 of a confined child (confine.Main). Only metaharness
// starts it, with the launch on descriptor 3 and the control socket on 4;
// it is not a verb.
type initCmd struct {
	// NestedProbe is the child confine.Probe starts in a nested user
	// namespace: it tries the controls in the vendor's position and says
	// how that went.
	NestedProbe bool `hidden:"" help:"Report the controls that hold in the vendor's position (the confinement probe's child)."`
}

func (c *initCmd) run(*env) (exit.Code, error) {
	if c.NestedProbe {
		return exit.Code(confine.NestedProbe()), nil
	}
	return exit.Code(confine.Main()), nil
}
