package mcpserve

import (
	"strings"

	"github.com/metaharness/metaharness/exit"
)

// CheckFor applies the refusals that depend on the run rather than on the
// file (the seed's --catalogue section), first match reported:
// catalogue-not-carried on b10x, catalogue-needs-owned-surface beside
// --tool-surface native, catalogue-with-allow-program beside
// --allow-program, and on codex catalogue-name-reserved for an entry
// published as mcp or under mcp__. toolSurface is the flag as given ("" when
// it was not).
func (c *Contract) CheckFor(kind, toolSurface string, allowPrograms []string) error {
	if kind == "b10x" {
		return exit.Refuse(CodeNotCarried, "--catalogue %s: the b10x loop publishes its own catalogue in-process and carries no caller's contract; run without --catalogue on b10x, or use claude or codex", c.Source)
	}
	if toolSurface == "native" {
		return exit.Refuse(CodeNeedsOwned, "--catalogue %s beside --tool-surface native: a contract replaces the vendor's tools, which native keeps; drop --tool-surface native (or use owned)", c.Source)
	}
	if err := RefuseAllowPrograms(c.Source, allowPrograms); err != nil {
		return err
	}
	if kind == "codex" {
		for _, e := range c.Entries {
			if p := e.Published(); p == "mcp" || strings.HasPrefix(p, "mcp__") {
				return exit.Refuse(CodeNameReserved, "--catalogue %s: entry %s is published as %s, a name codex app-server reserves for MCP tools and refuses at thread/start; give it another renderings.mcp", c.Source, e.Name, p)
			}
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
	return exit.Refuse(CodeWithAllowProg, "--allow-program %s beside --catalogue %s: a server handed a contract publishes no run entry for programs to be started by; drop --allow-program, or drop --catalogue to serve the default verbs", allowPrograms[0], source)
}
