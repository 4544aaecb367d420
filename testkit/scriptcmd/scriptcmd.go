// Package scriptcmd holds the testscript commands the CLIs' script tests
// (cmd/metaharness, cmd/auto-harness) share.
package scriptcmd

import (
	"errors"
	"os/exec"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"
)

// ExitCode is `exitcode N COMMAND ARGS…`: it runs COMMAND like exec and
// fails unless it exits with exactly N (`! exec` accepts any non-zero
// status, and each code means something of its own), and returns N for a
// caller's further checks.
func ExitCode(ts *testscript.TestScript, neg bool, args []string) int {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
	return want
}
