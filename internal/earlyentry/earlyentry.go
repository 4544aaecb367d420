// Package earlyentry runs the processes metaharness starts of itself on a
// vendor's path — internal-init, PID 1 of every confined child, and the
// kinds' hook programs (launcher/kinds/hooks), which the b10x loop and
// Gemini CLI start for every tool call — from a package initialiser, before
// the binary's heavier libraries initialise. (The command sandbox, which
// starts for every command, is internal/earlysandbox's: it runs earlier
// still.)
//
// Why: Go initialises packages in import-path order as far as their imports
// allow (The Go Programming Language Specification, "Package
// initialization"), and github.com/santhosh-tekuri/jsonschema, which
// mcp-go's server links, compiles five meta-schemas in its init: about 7 ms
// of every start of this binary, on a machine like CI's. This package
// imports neither the launcher nor the MCP and proxy libraries, so its init
// runs before that one, and an invocation it takes ends there. Neither
// process needs what it skips. TestEarlyEntrySkipsTheHeavyInits holds the
// order.
//
// It takes only the exact invocations metaharness itself writes; anything
// else (help, a flag misspelt) falls through to main, whose parser answers
// it. main's own verbs run the same functions.
package earlyentry

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kinds/hooks"
)

func init() {
	if run := Take(os.Args[1:]); run != nil {
		// As main does before any verb.
		_ = confine.NonDumpable()
		confine.CloseOnExec()
		os.Exit(run(os.Stdin, os.Stdout, os.Stderr))
	}
}

// Take is the process args asks for when it is one this package runs
// (confine.InitArgs, confine.NestedProbeArgs, a kind's hook in
// launcher/kinds/hooks), nil otherwise.
func Take(args []string) func(stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case slices.Equal(args, confine.InitArgs()):
		return func(io.Reader, io.Writer, io.Writer) int { return confine.Main() }
	case slices.Equal(args, confine.NestedProbeArgs()):
		return func(io.Reader, io.Writer, io.Writer) int { return confine.NestedProbe() }
	}
	if h, socket, ok := hooks.Take(args); ok {
		return func(stdin io.Reader, stdout, stderr io.Writer) int {
			status, err := h.Run(stdin, stdout, socket)
			if err != nil {
				fmt.Fprintln(stderr, exit.Line(err))
				return int(exit.Refused)
			}
			return status
		}
	}
	return nil
}
