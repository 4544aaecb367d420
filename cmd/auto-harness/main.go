// Command auto-harness is the operator's tool for an Auto Harness fleet,
// the control plane whose hosts run metaharness as a session's Command.
// This package holds the command line and the exit codes only; the client
// is package autoharness, the dispatch Action package autoharness/actions.
//
// Built so far: `auto-harness dispatch`, the work of the dispatch Action
// (actions/dispatch/action.yml), reading its inputs from HARNESS_*
// variables; and help.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/metaharness/metaharness/autoharness"
	"github.com/metaharness/metaharness/autoharness/actions"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

// The exit codes: 0 done, 1 the control plane refused or did not answer in
// time (or a waited drain did not succeed), 2 the command line or an input
// was refused, before any request.
const (
	exitOK       = 0
	exitFailed   = 1
	exitRefused  = 2
	usageSummary = `auto-harness - the operator's tool for an Auto Harness control plane

Usage:
  auto-harness dispatch              run the dispatch Action: create a session, or start,
                                     read, wait for or release a session drain, from the
                                     HARNESS_* variables (auto-harness dispatch --help)
  auto-harness help | --help | -h    print this help
  auto-harness --version             print the version

Exit codes: 0 done; 1 the control plane refused or did not answer in time, or a
waited drain did not succeed; 2 a usage error or a refused input (nothing was sent).
`
	dispatchUsage = `usage: auto-harness dispatch

Runs one operation of the dispatch Action against an Auto Harness control plane.
Every input is read from the environment (actions/dispatch/action.yml sets each
from the Action input of the same name) and checked before any request is sent.

  HARNESS_OPERATION                dispatch (the default), start-drain, get-drain,
                                   wait-for-drain or release-drain
  HARNESS_URL                      the control plane's https origin, optionally
                                   ending in /api/v1 (required)
  HARNESS_API_KEY                  the API key, sent as a bearer token (required)
  HARNESS_REQUEST_TIMEOUT_SECONDS  each request's deadline, its answer's body
                                   included (default 30, at most 300)
  HARNESS_REPOSITORY_ID            the repository (required)

dispatch creates a session:
  HARNESS_PROMPT                   the task (required)
  HARNESS_TARGET                   a JSON object naming what runs it: exactly one of
                                   providerId, providerName, commandId, commandName
  HARNESS_TIMEOUT                  the session's own bound in seconds (required)
  HARNESS_FALLBACKS                a JSON array of targets tried in order
  HARNESS_REF                      the git ref the session starts from
  HARNESS_CONCURRENCY_ID           sessions of one identity run one at a time
  HARNESS_METADATA                 a JSON object of string, number, boolean or
                                   null values (at most 8192 bytes)

start-drain cancels this key's own sessions of the repository and fences new ones:
  HARNESS_IDEMPOTENCY_KEY          makes a repeated start answer with the same drain
get-drain, wait-for-drain and release-drain name the drain:
  HARNESS_SESSION_DRAIN_ID         the drain's operation id (required)
wait-for-drain reads it until it ends, and succeeds only if it succeeded:
  HARNESS_POLL_INTERVAL_SECONDS    between reads (default 5)
  HARNESS_POLL_TIMEOUT_SECONDS     the whole wait's budget (default 900)

An input another operation uses is refused, not ignored. The results are appended
to GITHUB_OUTPUT (session-id, session-url, created; or operation-id, status,
queued-count, running-count, cancelled-count, failure-code, status-url, terminal)
and GITHUB_STEP_SUMMARY when they are set; under GITHUB_ACTIONS=true a session is
announced by a ::notice line.
`
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], processEnv(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// processEnv is the process's environment as a map; a later entry wins.
func processEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Main runs one command line with the environment env and returns the
// exit code.
func Main(ctx context.Context, args []string, env map[string]string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usageSummary)
		return exitOK
	}
	switch args[0] {
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usageSummary)
		return exitOK
	case "--version":
		fmt.Fprintln(stdout, "auto-harness", version)
		return exitOK
	case "dispatch":
		switch {
		case len(args) == 2 && (args[1] == "--help" || args[1] == "-h"):
			fmt.Fprint(stdout, dispatchUsage)
			return exitOK
		case len(args) > 1:
			fmt.Fprintf(stderr, "error: dispatch takes no arguments (received %d); it reads its inputs from HARNESS_* variables: auto-harness dispatch --help lists them\n", len(args)-1)
			return exitRefused
		}
		return report(stderr, actions.Run(ctx, env, stdout, nil))
	}
	fmt.Fprintf(stderr, "error: unknown command %q\n\n%s", args[0], usageSummary)
	return exitRefused
}

// report writes err as one error line (and the server's further details,
// indented JSON, after it) and returns the exit code it means.
func report(stderr io.Writer, err error) int {
	var refused *actions.DispatchError
	var failed *autoharness.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &refused):
		fmt.Fprintf(stderr, "error: %s (%s)\n", refused.Message, refused.Code)
		return exitRefused
	case errors.As(err, &failed):
		fmt.Fprintf(stderr, "error: %s\n", failed)
		var b bytes.Buffer
		if extra := failed.Extra(); extra != nil && json.Indent(&b, extra, "", "  ") == nil {
			fmt.Fprintln(stderr, b.String())
		}
		return exitFailed
	}
	fmt.Fprintf(stderr, "error: %s\n", err)
	return exitFailed
}
