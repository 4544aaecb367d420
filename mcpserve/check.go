package mcpserve

import (
	"slices"
	"strings"

	"github.com/metaharness/metaharness/exit"
)

// Carriage is how a kind carries a caller's tool contract, as the kind's
// descriptor declares it (launcher/<kind>).
type Carriage struct {
	// NotCarried says why the kind carries no caller's contract and what to
	// do instead (catalogue-not-carried); "" when it carries one.
	NotCarried string
	// ReservedNames and ReservedPrefixes are published names the kind's
	// harness keeps for itself, and ReservedWhy says so
	// (catalogue-name-reserved).
	ReservedNames, ReservedPrefixes []string
	ReservedWhy                     string
}

// CheckFor applies the refusals that depend on the run rather than on the
// file (the seed's --catalogue section), first match reported:
// catalogue-not-carried on a kind that carries none,
// catalogue-with-allow-program beside --allow-program, and
// catalogue-name-reserved for an entry published under a name the kind
// reserves. (catalogue-needs-owned-surface reads only the flags, so the
// run's spec checks refuse it before the file is read.)
func (c *Contract) CheckFor(carriage Carriage, allowPrograms []string) error {
	if carriage.NotCarried != "" {
		return exit.Refuse(RefuseNotCarried, "--catalogue %s: %s", c.Source, carriage.NotCarried)
	}
	if err := RefuseAllowPrograms(c.Source, allowPrograms); err != nil {
		return err
	}
	for _, e := range c.Entries {
		p := e.Published()
		reserved := slices.Contains(carriage.ReservedNames, p)
		for _, prefix := range carriage.ReservedPrefixes {
			reserved = reserved || strings.HasPrefix(p, prefix)
		}
		if reserved {
			return exit.Refuse(RefuseNameReserved, "--catalogue %s: entry %s is published as %s, %s; give it another renderings.mcp", c.Source, e.Name, p, carriage.ReservedWhy)
		}
	}
	return nil
}

// RefuseAllowPrograms is the catalogue-with-allow-program refusal, shared by
// run and mcp-serve: a server handed a contract publishes no run entry, so
// the declared programs could never be started.
func RefuseAllowPrograms(source string, allowPrograms []string) error {
	if len(allowPrograms) == 0 {
		return nil
	}
	return exit.Refuse(RefuseWithAllowProgram, "--allow-program %s beside --catalogue %s: a server handed a contract publishes no run entry for programs to be started by; drop --allow-program, or drop --catalogue to serve the default verbs", allowPrograms[0], source)
}
