package main

import (
	"fmt"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/launcher/codex"
)

type capabilitiesCmd struct {
	Kind   string `arg:"" enum:"claude,codex,b10x" help:"The kind: claude, codex or b10x."`
	Render bool   `help:"Print each operation's vendor rendering, one line each, instead of the JSON descriptor."`
}

// descriptor picks the kind's adapter package.
func descriptor(kind string) *launcher.Capabilities {
	switch kind {
	case "claude":
		return claude.Capabilities()
	case "codex":
		return codex.Capabilities()
	default:
		return b10x.Capabilities()
	}
}

func (c *capabilitiesCmd) run(e *env) (exit.Code, error) {
	d := descriptor(c.Kind)
	if c.Render {
		_, err := fmt.Fprint(e.stdout, d.Render())
		return exit.OK, err
	}
	b, err := d.JSON()
	if err != nil {
		return exit.Refused, err
	}
	_, err = e.stdout.Write(b)
	return exit.OK, err
}
