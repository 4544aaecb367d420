package kind

import "github.com/metaharness/metaharness/mcpserve"

// Rules are what a kind accepts of a spec, as data its descriptor
// declares: the run's checkSpec reads them and never a kind's name.
type Rules struct {
	// PromptOptional: the kind runs without a task (a loop that reads its
	// own).
	PromptOptional bool
	// NoOwnedSurface says why --tool-surface owned cannot be honoured
	// (tool-surface-unsupported); "" when it can.
	NoOwnedSurface string
	// OwnedPrograms: --allow-program names the programs the owned
	// surface's run entry may start, so it asks for that surface (the
	// default verbs when there is no --catalogue). A kind without it reads
	// the flag its own way (b10x: what a confined loop may start; codex
	// refuses it, having no default verbs).
	OwnedPrograms bool
	// NoDecisions says why a decision mode the capabilities mark absent
	// cannot be honoured (decisions-unsupported), and what to pass instead.
	NoDecisions string
	// Credentials maps each --credentials value the kind refuses to why,
	// which the refusal (credentials-unsupported) puts after
	// "--credentials VALUE ".
	Credentials map[Credentials]string
}

// DefaultVerbs reports whether the run's owned surface is mcp-serve's
// default verbs: no --catalogue, and --tool-surface owned or, on a kind
// whose owned surface runs programs, --allow-program.
func (r Rules) DefaultVerbs(s *Spec) bool {
	return s.Catalogue == "" && (s.ToolSurface == SurfaceOwned || (r.OwnedPrograms && len(s.AllowProgs) > 0))
}

// DefaultSurface is the server of the default verbs a run starts: writable
// (the child's cwd is a scratch tree or one it may write anyway, and every
// write is decided like any call), with the declared programs behind the
// run entry.
func DefaultSurface(s *Spec) mcpserve.Options {
	return mcpserve.Options{Writable: true, AllowPrograms: s.AllowProgs}
}

// OwnedServer is the owned surface's server, when the run has one: the
// names it publishes and the mcp-serve arguments that start it in the
// child's cwd, asking the run's decision channel before every call. With
// --catalogue it serves the checked scratch copy and may write only when
// the catalogue declares a write entry; without, it serves the default
// verbs (--tool-surface owned, or --allow-program where the kind's rules
// let programs run) as DefaultSurface says.
func (r Rules) OwnedServer(spec *Spec, w *World, cwd string) (published, args []string, ok bool) {
	var writable bool
	var programs []string
	switch {
	case w.CatalogueCopy != "":
		args = []string{"mcp-serve", "--catalogue", w.CatalogueCopy}
		published, writable = w.CatalogueTools, w.CatalogueWrites
	case r.DefaultVerbs(spec):
		o := DefaultSurface(spec)
		args = []string{"mcp-serve"}
		published, writable, programs = mcpserve.Verbs(), o.Writable, o.AllowPrograms
	default:
		return nil, nil, false
	}
	args = append(args, "--workspace", cwd, "--decisions-socket", w.DecisionSocket)
	if writable {
		args = append(args, "--writable")
	}
	for _, p := range programs {
		args = append(args, "--allow-program", p)
	}
	return published, args, true
}
