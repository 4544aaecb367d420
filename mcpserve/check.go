package mcpserve

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/spelling"
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
	// MaxPublished, when not 0, is the longest published name the kind's
	// harness passes on to the model as it is, and MaxWhy says why
	// (catalogue-name-too-long).
	MaxPublished int
	MaxWhy       string
}

// CheckFor applies the refusals that depend on the run rather than on the
// file (the seed's --catalogue section), first match reported:
// catalogue-not-carried on a kind that carries none,
// catalogue-with-allow-program beside --allow-program,
// catalogue-name-reserved for an entry published under a name the kind
// reserves, and catalogue-name-too-long for one its harness would cut.
// (catalogue-needs-owned-surface reads only the flags, so the run's spec
// checks refuse it before the file is read.)
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
		if carriage.MaxPublished > 0 && len(p) > carriage.MaxPublished {
			return exit.Refuse(RefuseNameTooLong, "--catalogue %s: entry %s is published as %s, %d characters, and this kind passes on at most %d: %s; give it a shorter renderings.mcp", c.Source, e.Name, p, len(p), carriage.MaxPublished, carriage.MaxWhy)
		}
	}
	return nil
}

// CheckPerformed names the entries no performer of this build performs.
// SPEC §7.2 lets such an entry load (it resolves to no operation, so a
// frame denies it and every call to it fails), which hides a misspelt name
// until the first call: so each is a warning line, for stderr at load, or
// under strict (--strict-catalogue) the contract is refused naming the
// first.
func (c *Contract) CheckPerformed(strict bool) (warnings []string, err error) {
	for _, e := range c.Unperformed() {
		why := fmt.Sprintf("--catalogue %s: entry %s is performed by nothing in this build%s, so it resolves to no operation and every call to it fails; this build performs %s (docs/catalogues.md)",
			c.Source, e.Name, didYouMean(e.Name), strings.Join(Performed(), ", "))
		if strict {
			return nil, exit.Refuse(RefuseCatalogueEntryNotPerformed, "%s; rename it, or drop it from the contract", why)
		}
		warnings = append(warnings, "metaharness: warning: "+why+"; --strict-catalogue refuses such a contract")
	}
	return warnings, nil
}

// Performed lists the entries this build performs, sorted.
func Performed() []string { return slices.Sorted(maps.Keys(operations)) }

// didYouMean names the performed entry within two edits of name, if one is.
func didYouMean(name string) string {
	for _, p := range Performed() {
		if spelling.Distance(name, p) <= 2 {
			return " (did you mean " + p + "?)"
		}
	}
	return ""
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
