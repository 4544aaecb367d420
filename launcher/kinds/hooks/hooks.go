// Package hooks is the table of the hook programs kinds install: programs
// of this binary that a vendor's child starts before a call runs, to ask
// the run's decision channel (internal/decide). It stands apart from
// launcher/kinds so that a hook process links no launcher, MCP or proxy
// code and starts lean (internal/earlyentry), and like that table it is
// the one place that names each kind's hook package.
package hooks

import (
	"io"
	"path/filepath"
	"slices"

	b10xhook "github.com/metaharness/metaharness/launcher/b10x/hook"
	geminihook "github.com/metaharness/metaharness/launcher/gemini/hook"
)

// Hook is one kind's hook program.
type Hook struct {
	// Verb is the hidden verb the vendor starts it as.
	Verb string
	// Args are its arguments after the program's name, for the run whose
	// decision channel listens at socket.
	Args func(socket string) []string
	// Run reads the vendor's payload from stdin, asks the run at socket,
	// answers on stdout and returns the exit status the vendor reads the
	// answer by; its only error is one writing stdout.
	Run func(stdin io.Reader, stdout io.Writer, socket string) (status int, err error)
}

// table lists every kind's hook program: Gemini CLI's BeforeTool hook,
// which always exits 0 (the answer is on stdout), and the b10x loop's
// before-call hook, whose answer is its exit status. (Claude Code posts
// its hook to the run's decision endpoint itself and starts no program:
// kind.HookEndpoint.)
var table = []Hook{
	{Verb: b10xhook.Verb, Args: b10xhook.Args, Run: b10xhook.Main},
	{Verb: geminihook.Verb, Args: geminihook.Args, Run: geminihook.Run},
}

// Lookup returns the hook started as verb.
func Lookup(verb string) (Hook, bool) {
	for _, h := range table {
		if h.Verb == verb {
			return h, true
		}
	}
	return Hook{}, false
}

// Take recognises args as exactly the invocation a run writes for one of
// the hooks, with an absolute socket path (a run's is in its scratch
// tree), and returns that hook and socket.
func Take(args []string) (Hook, string, bool) {
	if len(args) == 0 {
		return Hook{}, "", false
	}
	socket := args[len(args)-1]
	for _, h := range table {
		if slices.Equal(args, h.Args(socket)) && filepath.IsAbs(socket) {
			return h, socket, true
		}
	}
	return Hook{}, "", false
}
