package main

import (
	"encoding/json"
	"fmt"

	"github.com/metaharness/metaharness/conformance"
	"github.com/metaharness/metaharness/exit"
)

type conformanceCmd struct {
	Kind     string `arg:"" enum:"claude,codex,b10x" help:"The kind: claude, codex or b10x."`
	Contract bool   `help:"Print one contract_result JSON line on stdout; failures go to stderr."`
}

func (c *conformanceCmd) run(e *env) (exit.Code, error) {
	r, err := conformance.Check(c.Kind)
	if err != nil {
		return exit.Refused, err
	}
	code := exit.OK
	if r.Failed() > 0 {
		code = exit.Gap
	}
	if !c.Contract {
		return code, r.WriteText(e.stdout)
	}
	for _, x := range r.Results {
		if x.Err != nil {
			fmt.Fprintf(e.stderr, "metaharness: conformance: FAIL %s %s — %v\n", x.Tier, x.ID, x.Err)
		}
	}
	d := descriptor(c.Kind)
	b, err := json.Marshal(r.Contract(c.Kind + " " + d.VersionsPinned[0]))
	if err != nil {
		return exit.Refused, err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return code, err
}
