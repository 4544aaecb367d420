package main

import (
	"context"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/b10x"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/launcher/codex"
)

type doctorCmd struct {
	Kind string `arg:"" enum:"claude,codex,b10x" help:"The kind: claude, codex or b10x."`
}

func (c *doctorCmd) run(e *env) (exit.Code, error) {
	var v launcher.Vendor
	switch c.Kind {
	case "claude":
		v = claude.Adapter{}
	case "codex":
		v = codex.Vendor{}
	default:
		v = b10x.Vendor{}
	}
	return launcher.Doctor(context.Background(), v, e.getenv("HOME"), e.stdout)
}
