package main

import (
	"fmt"

	"github.com/metaharness/metaharness/autoharness/operator"
)

// The bounds of host smoke's --timeout, in seconds: the default, and the
// control plane's own ceiling of a session's timeout (7 days).
const (
	defaultSmokeTimeout = 300
	maxSmokeTimeout     = 604800
)

type hostSmokeCmd struct {
	HostID   string     `arg:"" name:"hostId" help:"The host to prove."`
	RepoPath string     `name:"repo-path" required:"" placeholder:"PATH" help:"A clean git checkout on the host whose .gitignore excludes .worktrees/ (never inspected here)."`
	Provider []string   `name:"provider" required:"" sep:"none" placeholder:"ID|NAME" help:"A provider to run a session on (repeatable; each tried in turn)."`
	Timeout  *int       `name:"timeout" placeholder:"SECONDS" help:"Each provider's session's timeout and the wait for it (default 300)."`
	JSON     switchFlag `name:"json" help:"Print the whole result as JSON."`
}

func (c *hostSmokeCmd) run(a *app) error {
	timeout := defaultSmokeTimeout
	if c.Timeout != nil {
		timeout = *c.Timeout
	}
	switch {
	case timeout <= 0:
		return usageErrorf("--timeout must be a positive number of seconds")
	case timeout > maxSmokeTimeout:
		return usageErrorf("--timeout must be at most %d seconds", maxSmokeTimeout)
	}
	if err := checkID("hostId", c.HostID); err != nil {
		return err
	}
	client, err := a.client()
	if err != nil {
		return err
	}
	res := operator.Smoke(a.ctx, client, operator.SmokeEnv{Clock: a.w.clock, RandomHex: a.w.randomHex, Progress: a.w.stderr},
		operator.SmokeInput{HostID: c.HostID, RepoPath: c.RepoPath, Providers: c.Provider, Timeout: timeout})
	if c.JSON {
		if err := printValue(a.w.stdout, res); err != nil {
			return err
		}
	} else {
		printSmoke(a, res)
	}
	if !res.OK {
		return reported{}
	}
	return nil
}

// printSmoke is the smoke's summary: the setup's failure, a line per
// provider, how many passed, the teardown, the verdict.
func printSmoke(a *app, res *operator.SmokeResult) {
	out := a.w.stdout
	if res.SetupError != "" {
		fmt.Fprintf(out, "FAIL  setup: %s\n", res.SetupError)
	}
	passed := 0
	for _, p := range res.Providers {
		if p.Pass {
			passed++
			fmt.Fprintf(out, "PASS  %s\n", p.Provider)
		} else {
			fmt.Fprintf(out, "FAIL  %s: %s\n", p.Provider, p.Message)
		}
	}
	if len(res.Providers) > 0 {
		fmt.Fprintf(out, "%d/%d providers passed\n", passed, len(res.Providers))
	}
	if res.Teardown.OK {
		fmt.Fprintln(out, "teardown ok")
	} else {
		fmt.Fprintln(out, "teardown FAILED")
	}
	verdict := "PASSED"
	if !res.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(out, "host smoke %s for host %s\n", verdict, res.HostID)
}
