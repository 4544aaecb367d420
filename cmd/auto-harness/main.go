// Command auto-harness is the operator's tool for an Auto Harness fleet,
// the control plane whose hosts run metaharness as a session's Command:
// one static binary for scripting and debugging a fleet from a shell (the
// commands of the seed's CLI: api, whoami, doctor, host, repo,
// service-account, session) and for the dispatch Action's work
// (dispatch). This package holds the command line, the output and the exit
// codes only; the client is package autoharness, the procedures of more
// than one request autoharness/operator, the Action autoharness/actions.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/metaharness/metaharness/autoharness/operator"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

// The exit codes: 0 done; 1 the control plane refused or did not answer,
// or what was asked did not succeed (a doctor check, a waited session, a
// smoke); 2 the command line, an input or the configuration was refused,
// before any request.
const (
	exitOK      = 0
	exitFailed  = 1
	exitRefused = 2
)

// world is what an invocation reaches outside itself.
type world struct {
	env    map[string]string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	clock  operator.Clock
	// randomHex is n random bytes in lower-case hex.
	randomHex func(n int) (string, error)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, a second one ends the process at once (a
	// smoke's teardown is under way by then).
	go func() { <-ctx.Done(); stop() }()
	code := Main(ctx, os.Args[1:], &world{
		env: processEnv(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		clock: operator.System, randomHex: randomHex,
	})
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

// randomHex is n bytes from the system's random source, in hex.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Main runs one command line in w and returns the exit code.
func Main(ctx context.Context, args []string, w *world) int {
	if err := refuseKeyOnArgv(args); err != nil {
		return report(w.stderr, err)
	}
	if len(args) == 0 {
		fmt.Fprint(w.stdout, usage)
		return exitOK
	}
	var c cli
	kctx, code, err := parse(&c, args, w)
	if kctx == nil {
		if err != nil {
			return report(w.stderr, err)
		}
		return code // help or --version
	}
	a := &app{ctx: ctx, w: w, g: &c.globals}
	if err := refuseBlankValues(kctx); err != nil {
		return report(w.stderr, err)
	}
	cmd, ok := kctx.Selected().Target.Addr().Interface().(command)
	if !ok {
		return report(w.stderr, fmt.Errorf("internal: command %q has no run method", kctx.Command()))
	}
	return report(w.stderr, cmd.run(a))
}

// command is implemented by every leaf command.
type command interface {
	run(a *app) error
}

// refuseKeyOnArgv refuses an API key on the command line, before anything
// else reads it, naming the flag alone.
func refuseKeyOnArgv(args []string) error {
	for _, arg := range args {
		if arg == "--api-key" || strings.HasPrefix(arg, "--api-key=") {
			return usageErrorf("--api-key is not accepted on the command line (it would leak into `ps` output and shell history); set HARNESS_API_KEY instead, or point --api-key-file / HARNESS_API_KEY_FILE at a file")
		}
	}
	return nil
}

// helpExit carries kong's exit request (after --help or --version) out of
// the parser without ending the process.
type helpExit int

// parse runs kong; a nil context means the invocation is over: after help
// or --version (code set), or on a usage error (err set).
func parse(c *cli, args []string, w *world) (kctx *kong.Context, code int, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, ok := r.(helpExit)
			if !ok {
				panic(r)
			}
			kctx, code, err = nil, int(h), nil
		}
	}()
	parser, err := kong.New(c,
		kong.Name("auto-harness"),
		kong.Description("The operator's tool for an Auto Harness control plane."),
		kong.Writers(w.stdout, w.stderr),
		kong.Exit(func(code int) { panic(helpExit(code)) }),
		kong.Help(printHelp),
		kong.Vars{"version": "auto-harness " + version},
		// A value may begin with "-" (--prompt "--help me"), as the seed's
		// grammar has it.
		kong.WithHyphenPrefixedParameters(true),
	)
	if err != nil {
		return nil, exitRefused, fmt.Errorf("internal: building the command line: %w", err)
	}
	kctx, err = parser.Parse(args)
	if err != nil {
		// The help to see is that of the command the parse got to.
		where := "auto-harness"
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			for _, p := range pe.Context.Path {
				if p.Command != nil {
					where += " " + p.Command.Name
				}
			}
		}
		return nil, exitRefused, usageErrorf("%v; see %s --help", err, where)
	}
	return kctx, exitOK, nil
}

// printHelp prints the whole usage for the binary, dispatch's own, and
// kong's help of any other command (its flags, the globals among them).
func printHelp(o kong.HelpOptions, kctx *kong.Context) error {
	switch kctx.Command() {
	case "", "help":
		fmt.Fprint(kctx.Stdout, usage)
		return nil
	case "dispatch":
		fmt.Fprint(kctx.Stdout, dispatchUsage)
		return nil
	}
	return kong.DefaultHelpPrinter(o, kctx)
}

// helpCmd is `auto-harness help`.
type helpCmd struct{}

func (helpCmd) run(a *app) error {
	fmt.Fprint(a.w.stdout, usage)
	return nil
}
