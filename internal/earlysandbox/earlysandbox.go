// Package earlysandbox runs the command sandbox (confine/sandbox) from a
// package initialiser, before any library this binary links initialises:
// a kind starts it once per command of the agent's, so its start is a
// decided call's price.
//
// Why a package of its own, apart from internal/earlyentry: Go initialises
// the lexically first package whose imports are ready ("Package
// initialization" in the language specification), and this one imports
// os and confine/sandbox alone (which import no more of the standard
// library than os does), so it is ready, and runs, before net,
// golang.org/x/sys, the OTLP, gRPC and protobuf libraries initialise;
// earlyentry, which needs confine, runs after them.
// TestEarlyEntrySkipsTheHeavyInits holds the order.
//
// It takes only the exact invocation a kind's sandbox script writes
// (sandbox.Args followed by the shell's arguments); anything else goes on
// to the other initialisers and main.
package earlysandbox

import (
	"os"

	"github.com/metaharness/metaharness/confine/sandbox"
)

func init() {
	shell, rules, rest, ok := sandbox.Parse(os.Args[1:])
	if !ok {
		return
	}
	// Descriptors pass through untouched: the command gets whatever its
	// vendor gave it.
	err := sandbox.Exec(shell, rules, rest)
	_, _ = os.Stderr.WriteString("metaharness: " + err.Error() + "\n")
	os.Exit(126) // what a shell answers for a command it found but could not run
}
