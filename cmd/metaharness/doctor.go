package main

import (
	"context"
	"fmt"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kinds"
)

type doctorCmd struct {
	Kind string `arg:"" enum:"${kinds}" help:"The kind: ${kinds_or}."`
}

// Help is doctor's detail under --help: the checks and what its exit says.
func (*doctorCmd) Help() string {
	return `One line per check, "ok|warn|fail <check>: <reason>", in this order:

  binary        the vendor binary on the child's PATH, $HOME/.local/bin,
                /usr/local/bin, /usr/bin, /bin (a missing one names the
                command that links it)
  run           (when the kind's run is not built) a launch is refused
  version       the binary's --version against the adapter's pin
  flags         the launch's flags put to the binary (claude: each flag;
                codex: app-server --strict-config on the planned config;
                b10x: held to its run --help)
  secret-store  (b10x) the session bus and Secret Service that
                --api-key-secret reads through
  loopback      the loopback proxy can bind 127.0.0.1
  scratch       where the runs' scratch trees go (trees that dead runs
                left there are reclaimed)
  confinement   whether the child can be confined here, and which kernel
                controls hold

Exit 0 when no check failed, 1 when one did (a launch now would not be clean,
or would be refused), 2 only when doctor itself cannot work.`
}

func (c *doctorCmd) run(e *env) (exit.Code, error) {
	k, _ := kinds.Lookup(c.Kind) // the enum admits only the table's kinds
	self, err := selfPath()
	if err != nil {
		return exit.Refused, fmt.Errorf("finding the metaharness executable whose init the confinement probe starts: %w", err)
	}
	return launcher.Doctor(context.Background(), k, e.getenv, self, e.stdout)
}
