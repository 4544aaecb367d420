package main

import (
	"fmt"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kinds/hooks"
)

// hookCmd is a kind's hook program, found in launcher/kinds/hooks by the
// verb it is started as (the verb's name in main.go), so that no verb
// imports a kind's hook package: Gemini CLI's BeforeTool hook always
// exits 0, its answer on stdout; the b10x loop's before-call hook answers
// with its exit status.
type hookCmd struct {
	Socket string `required:"" help:"The run's decision channel."`
}

func (c *hookCmd) runAs(verb string, e *env) (exit.Code, error) {
	h, ok := hooks.Lookup(verb)
	if !ok {
		return exit.Refused, fmt.Errorf("internal: no hook program is started as %s", verb)
	}
	status, err := h.Run(e.stdin, e.stdout, c.Socket)
	return exit.Code(status), err
}

// b10xHookCmd is the b10x loop's before-call hook a run under frame or ask
// puts first in the loop's hooks file.
type b10xHookCmd struct{ hookCmd }

func (c *b10xHookCmd) run(e *env) (exit.Code, error) { return c.runAs("internal-b10x-hook", e) }

// geminiHookCmd is Gemini CLI's BeforeTool hook a gemini run installs.
type geminiHookCmd struct{ hookCmd }

func (c *geminiHookCmd) run(e *env) (exit.Code, error) { return c.runAs("internal-gemini-hook", e) }
