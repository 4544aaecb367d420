package fakevendor

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// CodexVersion is what the fake codex prints for --version: the pin.
const CodexVersion = "0.169.0"

// CodexMain is Codex for testscript.Main.
func CodexMain() {
	os.Exit(Codex(os.Args[1:], os.Stdout, os.Stderr))
}

// Codex runs the fake codex with args and returns its exit status. It
// answers --version as the pinned native binary does; app-server, which
// the codex adapter drives, is not scripted yet, and says so.
func Codex(args []string, stdout, stderr io.Writer) int {
	if slices.Contains(args, "--version") {
		fmt.Fprintln(stdout, "codex-cli "+CodexVersion)
		return 0
	}
	fmt.Fprintf(stderr, "fake codex: %q is not scripted; only --version is (conformance/fakevendor/codex.go)\n", args)
	return 2
}
