package main

import (
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/claude/hook"
)

// hookCmd is the PreToolUse hook a claude run installs (hook.Run). It
// always exits 0: a failure is a deny with the reason on stdout.
type hookCmd struct {
	Socket string `required:"" help:"The run's decision channel."`
}

func (c *hookCmd) run(e *env) (exit.Code, error) {
	return exit.OK, hook.Run(e.stdin, e.stdout, c.Socket)
}
