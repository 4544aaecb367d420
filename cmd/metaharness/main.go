// Command metaharness drives a vendor coding-agent CLI from outside and
// makes each run observable, steerable and hermetic. This package holds the
// flags and the exit codes only: one file per verb, no protocol logic.
package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	_ "github.com/metaharness/metaharness/internal/earlyentry"   // internal-init and the hooks, before the heavy inits
	_ "github.com/metaharness/metaharness/internal/earlysandbox" // the command sandbox, before any library's init
	"github.com/metaharness/metaharness/launcher/kinds"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

// cli is the whole command line: exactly the eight verbs of SPEC §3.1.
type cli struct {
	Version kong.VersionFlag `help:"Print the version and exit."`

	Run          runCmd          `cmd:"" help:"Run one governed session of a vendor CLI (KIND: ${kinds_list})."`
	McpServe     mcpServeCmd     `cmd:"" name:"mcp-serve" help:"Serve a tool contract (or the default verbs) over MCP: on stdio, or streamable HTTP on loopback (--http). No model, network or credential."`
	Loopback     loopbackCmd     `cmd:"" help:"Run the credential-attaching loopback proxy standalone."`
	Capabilities capabilitiesCmd `cmd:"" help:"Print a kind's adapter descriptor. No model, network or credential."`
	Conformance  conformanceCmd  `cmd:"" help:"Check a kind against its launch, replay and control vectors. No model, network or credential."`
	Doctor       doctorCmd       `cmd:"" help:"Check what a run of a kind needs here: the vendor binary, its pin, the launch's flags, loopback, scratch, confinement. No model, network or credential."`
	Project      projectCmd      `cmd:"" help:"Project an event stream into a trace-ir/1 document or an HTML page. No model, network or credential."`
	Audit        auditCmd        `cmd:"" help:"Verify a run's signed statement (--verify FILE --key PUB: exit 0 when it holds, 1 when it does not); an audit of a foreign transcript is refused. No model, network or credential."`

	InternalB10xHook b10xHookCmd   `cmd:"" name:"internal-b10x-hook" hidden:"" help:"The b10x loop's before-call hook a run under frame or ask installs (internal)."`
	InternalGemini   geminiHookCmd `cmd:"" name:"internal-gemini-hook" hidden:"" help:"The Gemini CLI BeforeTool hook a run installs (internal)."`
	InternalInit     initCmd       `cmd:"" name:"internal-init" hidden:"" help:"PID 1 of a confined child, started by metaharness itself (internal)."`
}

// env is what a verb may touch: its streams, its environment and the
// diagnostics logger (stderr, never the event stream).
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	vars   map[string]string // the caller's environment, as Main was given it
	log    *zap.Logger
}

// getenv is one variable of the caller's environment, "" when unset.
func (e *env) getenv(k string) string { return e.vars[k] }

// environ is the caller's environment as a map, for the run's kind.World.
func (e *env) environ() map[string]string { return maps.Clone(e.vars) }

// envMap reads KEY=VALUE entries (os.Environ's form); a later entry wins.
func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// verb is implemented by every command struct.
type verb interface {
	run(e *env) (exit.Code, error)
}

func main() {
	// Before anything reads a token: no process of the same uid may read
	// this one's memory, environment or descriptors (confine.NonDumpable),
	// and no descriptor the caller left open reaches a child.
	_ = confine.NonDumpable()
	confine.CloseOnExec()
	os.Exit(int(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Environ())))
}

// Main runs one invocation with the caller's environment (os.Environ's
// form) and returns its exit code. Every refusal prints exactly one line on
// stderr.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) exit.Code {
	fail := func(err error) exit.Code {
		fmt.Fprintln(stderr, exit.Line(err))
		return exit.Refused
	}
	if err := refuseSecretsOnArgv(args); err != nil {
		return fail(err)
	}
	if err := refuseTaskNotUTF8(args); err != nil {
		return fail(err)
	}
	var c cli
	code, kctx, err := parse(&c, args, stdout, stderr)
	if kctx == nil {
		if err != nil {
			return fail(err)
		}
		return code // --help or --version
	}
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, vars: envMap(environ)}
	e.log = newLogger(stderr, e.getenv)
	defer func() { _ = e.log.Sync() }()
	v, ok := kctx.Selected().Target.Addr().Interface().(verb)
	if !ok {
		return fail(fmt.Errorf("internal: command %q has no run method", kctx.Command()))
	}
	e.log.Debug("verb", zap.String("command", kctx.Command()))
	code, err = v.run(e)
	if err != nil {
		return fail(err)
	}
	return code
}

// vars are the values the flag tags interpolate: the version, and the kinds
// as the table lists them, so that a kind added there is accepted here.
func vars() kong.Vars {
	names := kinds.Names()
	return kong.Vars{
		"version":    "metaharness " + version,
		"kinds":      strings.Join(names, ","),
		"kinds_list": strings.Join(names, ", "),
		"kinds_or":   kinds.Spelled(names),
	}
}

// helpExit carries kong's exit request (after --help or --version) out of
// the parser without ending the process, so Main stays testable.
type helpExit int

// parse runs kong. It returns a nil context when the invocation is over:
// after help (code set, err nil) or on a usage error (err set).
func parse(c *cli, args []string, stdout, stderr io.Writer) (code exit.Code, kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, ok := r.(helpExit)
			if !ok {
				panic(r)
			}
			code, kctx, err = exit.Code(h), nil, nil
		}
	}()
	parser, err := kong.New(grammar(c, args), options(stdout, stderr)...)
	if err != nil {
		return exit.Refused, nil, fmt.Errorf("internal: building the command line: %w", err)
	}
	kctx, err = parser.Parse(args)
	if err != nil {
		return exit.Refused, nil, exit.Refuse(exit.RefuseUsage, "%v; see metaharness --help", err)
	}
	return exit.OK, kctx, nil
}

// options are kong's, whichever grammar it builds.
func options(stdout, stderr io.Writer) []kong.Option {
	return []kong.Option{
		kong.Name("metaharness"),
		kong.Description("Drive a vendor coding-agent CLI from outside: observable, steerable, hermetic."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(helpExit(code)) }),
		vars(),
	}
}

// grammar is what kong builds its model from: when the first argument names
// a verb, a struct of that verb alone (and --version), for kong's model of
// all eight costs milliseconds, most of a short verb's start-up (mcp-serve,
// internal-b10x-hook); otherwise, for help or a usage error that must list every
// verb, c. The verb runs from the parse's selected node, wherever it is.
func grammar(c *cli, args []string) any {
	if len(args) == 0 {
		return c
	}
	t := reflect.TypeOf(*c)
	for i := range t.NumField() {
		f := t.Field(i)
		if _, isVerb := f.Tag.Lookup("cmd"); isVerb && verbName(f) == args[0] {
			version, _ := t.FieldByName("Version")
			return reflect.New(reflect.StructOf([]reflect.StructField{version, f})).Interface()
		}
	}
	return c
}

// verbName is the name a verb field is invoked by: its name tag, else its
// field name lowered (every verb's is one word; TestGrammarOfOneVerb holds
// it to kong's own naming).
func verbName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	return strings.ToLower(f.Name)
}

// refuseSecretsOnArgv refuses an --api-key flag anywhere before "--": a key
// on the command line lands in ps output and shell history.
func refuseSecretsOnArgv(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		if a == "--api-key" || strings.HasPrefix(a, "--api-key=") {
			return exit.Refuse(exit.RefuseUsage, "there is no --api-key flag: a key on the command line lands in ps output and shell history; "+
				"name an environment variable or a file that holds it instead (for example --token-env NAME or --token-file PATH)")
		}
	}
	return nil
}

// newLogger writes metaharness's own diagnostics to stderr at the level
// METAHARNESS_LOG names (debug, info, warn, error); silent by default.
func newLogger(stderr io.Writer, getenv func(string) string) *zap.Logger {
	lvl, err := zapcore.ParseLevel(getenv("METAHARNESS_LOG"))
	if getenv("METAHARNESS_LOG") == "" || err != nil {
		return zap.NewNop()
	}
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(stderr), lvl)
	return zap.New(core).Named("metaharness")
}
