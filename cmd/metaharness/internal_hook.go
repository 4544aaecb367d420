package main

import (
	"fmt"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kinds/hooks"
)

// hookCmd is the PreToolUse hook a claude run installs (launcher/kinds/hooks).
// It always exits 0: a failure is a deny with the reason on stdout.
type hookCmd struct {
	Socket string `required:"" help:"The run's decision channel."`
}

func (c *hookCmd) run(e *env) (exit.Code, error) {
	h, ok := hooks.Lookup("internal-hook")
	if !ok {
		return exit.Refused, fmt.Errorf("internal: no hook program is started as internal-hook")
	}
	return exit.OK, h.Run(e.stdin, e.stdout, c.Socket)
}
