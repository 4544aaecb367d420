package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/metaharness/metaharness/conformance"
	"github.com/metaharness/metaharness/conformance/live"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
)

type conformanceCmd struct {
	Kind     string `arg:"" enum:"${kinds}" help:"The kind: ${kinds_or}."`
	Contract bool   `help:"Print one contract_result JSON line on stdout; failures go to stderr."`
	Live     bool   `help:"Also drive the installed vendor binary through the built-in session of make demo (scripted model, loopback proxy, catalogue, frame, audit) and print a PASS or FAIL line per step: no credential, no network. claude and codex only."`
}

func (c *conformanceCmd) run(e *env) (exit.Code, error) {
	if c.Live {
		if err := live.Carried(c.Kind); err != nil {
			return exit.Refused, exit.Refuse(RefuseLiveNotCarried, "conformance %s --live: %v; the live session drives claude and codex only; run conformance %s without --live", c.Kind, err, c.Kind)
		}
	}
	r, err := conformance.Check(c.Kind)
	if err != nil {
		return exit.Refused, err
	}
	code := exit.OK
	if r.Failed() > 0 {
		code = exit.Gap
	}
	if c.Contract {
		err = c.writeContract(e, r)
	} else {
		err = r.WriteText(e.stdout)
	}
	if err != nil || !c.Live {
		return code, err
	}
	liveCode, err := c.live(e)
	return exit.Worst(code, liveCode), err
}

func (c *conformanceCmd) writeContract(e *env, r *conformance.Report) error {
	for _, x := range r.Results {
		if x.Err != nil {
			fmt.Fprintf(e.stderr, "metaharness: conformance: FAIL %s %s — %v\n", x.Tier, x.ID, x.Err)
		}
	}
	b, err := json.Marshal(r.Contract(c.Kind + " " + descriptor(c.Kind).VersionsPinned[0]))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", b)
	return err
}

// live runs the built-in session with this binary and the caller's
// environment as Main was given it (their HOME picks the vendor binary, as
// for any run) and
// prints a PASS or FAIL line per step. Under --contract the lines go to
// stderr, so stdout stays the one JSON line.
func (c *conformanceCmd) live(e *env) (exit.Code, error) {
	self, err := selfPath()
	if err != nil {
		return exit.Refused, err
	}
	o, err := live.Run(context.Background(), c.Kind, self, kind.SortedEnv(e.vars))
	if err != nil {
		return exit.Refused, exit.Wrap(RefuseLiveUnavailable, err, "conformance --live could not set up its session")
	}
	if why := o.Refused(); why != "" {
		return exit.Refused, exit.Refuse(RefuseLiveRunRefused, "conformance --live: the session was refused, so nothing live was checked: %s", strings.TrimPrefix(why, "metaharness: "))
	}
	out := e.stdout
	if c.Contract {
		out = e.stderr
	}
	var b strings.Builder
	failed := 0
	steps := o.Steps()
	for _, st := range steps {
		if st.Detail == "" {
			fmt.Fprintf(&b, "PASS live %s\n", st.Name)
		} else {
			failed++
			fmt.Fprintf(&b, "FAIL live %s — %s\n", st.Name, st.Detail)
		}
	}
	fmt.Fprintf(&b, "%d live steps, %d failed — the installed %s against the built-in scripted model, on loopback\n", len(steps), failed, c.Kind)
	if _, err := fmt.Fprint(out, b.String()); err != nil {
		return exit.Refused, err
	}
	if failed > 0 {
		return exit.Gap, nil
	}
	return exit.OK, nil
}
