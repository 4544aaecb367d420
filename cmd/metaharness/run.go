package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/metaharness/metaharness/confine"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/launcher/kinds"
)

// runCmd is `run <KIND>`: every flag maps 1:1 onto kind.Spec.
type runCmd struct {
	Kind     string       `arg:"" enum:"${kinds}" help:"The kind: ${kinds_or}."`
	Hermetic hermeticFlag `default:"off" help:"The recorded mode: off (the default), on (a bare --hermetic) or strict; the controls are imposed whichever it is. strict owes an audit (as --audit) that fails the run, exit 1, on any gating row that is not ok."`
	Audit    bool         `help:"Print the audit report on stderr and let its verdict set the exit code."`
	Prompt   string       `short:"p" help:"The task. Also accepted as the last argument after --."`

	Frame       string           `help:"A sealed metaharness.frame/1 document that decides each tool call (docs/frames.md). Default: none, and under --decisions frame every call is left to the vendor's own pipeline with a NO_FRAME_IN_FORCE warning." type:"path"`
	Decisions   frame.Mode       `enum:"frame,ask,observe" default:"frame" help:"Who decides tool calls: frame (the default: the --frame), ask (the embedder, tool.decide commands on stdin, bounded by the frame if one is given) or observe (nobody; no frame)."`
	ToolSurface kind.ToolSurface `enum:",native,owned" default:"" help:"native (the default without --catalogue): the vendor's own tools; owned (the default with --catalogue): only metaharness's server, with the catalogue's entries or the default verbs."`
	Catalogue   string           `help:"A tool contract (YAML or JSON, docs/catalogues.md): the model gets exactly these tools." type:"path"`
	StrictCat   bool             `name:"strict-catalogue" help:"Refuse a --catalogue with an entry this build performs none of (catalogue-entry-not-performed), instead of a warning on stderr."`
	AllowProg   []string         `name:"allow-program" sep:"none" help:"A program the owned surface's run entry may start (repeatable)."`

	Credentials   kind.Credentials `enum:"none,api-key,loopback,operator-login" default:"loopback" help:"How the child reaches the model: loopback (the default: the child holds a placeholder, the proxy attaches the real token), api-key (the child gets the vendor's key variable from this environment) or none (no credential; with --model-endpoint the proxy still fronts the model). operator-login is not built and is refused."`
	TokenEnv      string           `help:"Under loopback, the environment variable holding the real token (default: ANTHROPIC_API_KEY for claude, OPENAI_API_KEY for codex)."`
	TokenFile     string           `help:"Under loopback, a file holding the real token (trimmed; re-read on an upstream 401)." type:"path"`
	TokenFD       *int             `name:"token-fd" placeholder:"N" help:"Under loopback, an inherited descriptor (3 or above) carrying the real token: read once to its first newline or end, then closed. The safest source: nothing on disk or in an environment."`
	Hide          []string         `sep:"none" placeholder:"PATH" help:"A path of the host the child's view reads as empty, beside what metaharness hides itself (repeatable; also $METAHARNESS_HIDE, colon-separated): another run's token file, a secret outside HOME."`
	Unconfined    bool             `help:"Run the child without the namespaces that confine it (no hidden paths, no network namespace). The attestation names the choice as gaps on H4, H6 and H12, so --hermetic strict fails."`
	AllowEgress   []string         `sep:"none" help:"Under loopback, a host the egress gate lets the child reach (repeatable; none by default)."`
	Model         string           `help:"The model name passed to the vendor (default: the vendor's own; on codex, its bundle's default slug)."`
	ModelEndpoint string           `help:"The model API's root URL (https, or a loopback http URL), the proxy's upstream (default: the vendor's own API, https://api.anthropic.com or https://api.openai.com)."`
	Effort        string           `help:"The vendor's effort level (default: the vendor's own)."`
	MaxTurns      int              `help:"Stop after this many turns (claude, b10x; default: no bound)."`
	MaxBudgetUSD  string           `name:"max-budget-usd" help:"Stop at this spend in US dollars (claude; default: no bound)."`

	Cwd        string   `help:"Run the child in this tree (it may write there); trades the H7 and H11 rows." type:"path"`
	ScratchCwd bool     `help:"With --cwd: the directory is the embedder's disposable copy."`
	Context    []string `sep:"none" help:"A file beneath --cwd, tracked by git, handed to the model as reference data (repeatable)."`

	StrictVersion  bool           `help:"Refuse before the spawn when the vendor binary is off the pin."`
	RetainDir      string         `help:"Copy the raw vendor transcript here when the run ends." type:"path"`
	Auditor        *string        `help:"An external auditor: an argv prefix run after the session with --spec and --transcript."`
	Spec           *string        `help:"The document the auditor checks the transcript against."`
	Output         kind.Output    `enum:"events,final,status" default:"events" help:"stdout carries the event stream (events, the default), only the final answer (final), or one line naming the outcome and where the records are (status: no word of the model's on stdout); final and status need --records-dir or --events."`
	Events         string         `help:"Also write the event stream to this file." type:"path"`
	Attestation    string         `help:"Write the session's attestation (JSON) to this file." type:"path"`
	RecordsDir     string         `name:"records-dir" placeholder:"DIR" help:"An existing directory where each run makes one new directory of its own, named by its run id, holding its event stream, attestation, in-toto statement and run summary: one fixed argv for every session of a fleet. $HARNESS_ARTIFACTS_DIR and $HARNESS_OUTPUT_FILE, where a host daemon sets them, win." type:"path"`
	ThrottleBudget *time.Duration `name:"throttle-budget" placeholder:"DURATION" help:"How long one model request may wait out the upstream's 429 throttles (its Retry-After, else a doubling backoff from 1s; at most 8 retries) before the run stops on the 429 with exit 4; a longer wait asked, an account out of credit and an error inside a stream stop at once. 0 waits none. Default 1m0s; needs the loopback proxy."`
	Statement      string         `placeholder:"FILE" help:"Write the run's in-toto statement (a DSSE envelope: the digests of its records and inputs, its verdicts) to this file when it ends; audit --verify checks it." type:"path"`
	OTLPEndpoint   string         `name:"otlp-endpoint" placeholder:"URL" help:"Export the run as one OpenTelemetry trace to this collector (OTLP; https, or http on loopback; default $OTEL_EXPORTER_OTLP_ENDPOINT, with its _PROTOCOL and _HEADERS). No prompt, text or file content by default; the end waits at most 2 s for it."`
	SignKey        string         `placeholder:"KEY" help:"Sign the statement with this PEM private key (ed25519 or ECDSA P-256, mode 0600); the child's view reads it as empty. Without it the statement is unsigned and says so." type:"path"`
	PluginDir      []string       `sep:"none" help:"A plugin directory to copy into the scratch home: not built, and refused (not-built)." type:"path"`
	AddDir         []string       `sep:"none" hidden:"" help:"Refused: the child is never granted a directory beyond its cwd."`

	Kinds kinds.Flags `embed:""`

	// Rest is partial passthrough: an unknown flag is a usage error, and
	// the first positional ends the flags. Only what follows -- is meant to
	// be here; anything else is refused by trailing.
	Rest []string `arg:"" optional:"" passthrough:"partial" help:"After --: the task as the last argument (when -p is not given), and the auditor's pass-through arguments."`
}

// hermeticFlag is --hermetic with an optional value: bare means on.
type hermeticFlag string

func (*hermeticFlag) IsBool() bool { return true }

func (h *hermeticFlag) Decode(ctx *kong.DecodeContext) error {
	t := ctx.Scan.Peek()
	if s, ok := t.Value.(string); ok && (t.Type == kong.FlagValueToken || t.IsValue()) {
		switch {
		case s == "off" || s == "on" || s == "strict":
			ctx.Scan.Pop()
			*h = hermeticFlag(s)
			return nil
		case t.Type == kong.FlagValueToken:
			return fmt.Errorf("--hermetic takes off, on or strict, not %q", s)
		case !slices.Contains(kinds.Names(), s):
			// A word after a space is meant as the value; only a kind
			// (run --hermetic claude) is a positional there.
			return fmt.Errorf("--hermetic takes off, on or strict, not %q; give the value as --hermetic=VALUE, or --hermetic alone for on", s)
		}
	}
	*h = "on"
	return nil
}

// spec maps the flags onto a kind.Spec.
func (c *runCmd) spec() (*kind.Spec, error) {
	prompt, auditorArgs, err := c.trailing()
	if err != nil {
		return nil, err
	}
	return &kind.Spec{
		Kind: c.Kind, Prompt: prompt, Hermetic: kind.Hermetic(c.Hermetic), Audit: c.Audit,
		Frame: c.Frame, Decisions: c.Decisions, ToolSurface: c.ToolSurface,
		Catalogue: c.Catalogue, StrictCatalogue: c.StrictCat, AllowProgs: c.AllowProg,
		Credentials: c.Credentials, TokenEnv: c.TokenEnv, TokenFile: c.TokenFile, TokenFD: c.TokenFD,
		Unconfined: c.Unconfined, Hide: c.Hide,
		AllowEgress: c.AllowEgress, Model: c.Model, ModelEndpoint: c.ModelEndpoint,
		Effort: c.Effort, MaxTurns: c.MaxTurns, MaxBudgetUSD: c.MaxBudgetUSD,
		Cwd: c.Cwd, ScratchCwd: c.ScratchCwd, Context: c.Context,
		StrictVersion: c.StrictVersion, RetainDir: c.RetainDir,
		Auditor: c.Auditor, AuditSpec: c.Spec, AuditorArgs: auditorArgs,
		Output: c.Output, Events: c.Events, AttestationFile: c.Attestation, RecordsDir: c.RecordsDir,
		ThrottleBudget: c.ThrottleBudget,
		Statement:      c.Statement, SignKey: c.SignKey, OTLPEndpoint: c.OTLPEndpoint,
		PluginDirs: c.PluginDir, AddDirs: c.AddDir,
		KindFlags: c.Kinds.Given(),
	}, nil
}

// trailing reads what follows the flags. Only what comes after -- passes
// through: the auditor's arguments and, without -p, the task as the last of
// them, which is how an embedder that appends the prompt to a fixed argv
// calls us. Whatever would be silently dropped is refused instead: a word
// before --, a trailing task beside -p, arguments no --auditor takes.
func (c *runCmd) trailing() (prompt string, auditorArgs []string, err error) {
	rest := c.Rest
	if len(rest) == 0 {
		return c.Prompt, nil, nil
	}
	if rest[0] != "--" {
		return "", nil, exit.Refuse(exit.RefuseUsage, "%q is not a flag of run and comes before --; only what follows -- passes through: give the task with -p TEXT or as the last argument after --", rest[0])
	}
	rest = rest[1:]
	if c.Prompt != "" {
		if c.Auditor == nil && len(rest) > 0 {
			return "", nil, exit.Refuse(RefusePromptTwice, "-p %q and %s after -- both give the task, and no --auditor takes pass-through arguments; keep one of them", c.Prompt, quoted(rest))
		}
		return c.Prompt, rest, nil
	}
	if len(rest) == 0 {
		return "", nil, nil
	}
	prompt, rest = rest[len(rest)-1], rest[:len(rest)-1]
	if c.Auditor == nil && len(rest) > 0 {
		return "", nil, exit.Refuse(RefuseStrayArguments, "%s after -- would reach no one: without --auditor only the last argument after -- is read, as the task (%q); drop them, or add --auditor PREFIX --spec FILE to pass them to an auditor", quoted(rest), prompt)
	}
	return prompt, rest, nil
}

// refuseTaskNotUTF8 refuses a run whose task (-p, or the last argument
// after -- without it) is not UTF-8. It reads argv before kong does: kong
// reads an invalid byte as U+FFFD, so the run would carry a task nobody
// gave, and a vendor and the record would show it.
func refuseTaskNotUTF8(args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return nil
	}
	flagged := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, value, inline := a, "", false
		if k, v, ok := strings.Cut(a, "="); ok && (k == "-p" || k == "--prompt") {
			name, value, inline = k, v, true
		} else if strings.HasPrefix(a, "-p") && len(a) > 2 {
			name, value, inline = "-p", a[2:], true
		}
		switch {
		case a == "--":
			if !flagged && i+1 < len(args) {
				return utf8Task("the task after --", args[len(args)-1])
			}
			return nil
		case name == "-p" || name == "--prompt":
			if !inline {
				if i+1 >= len(args) {
					return nil
				}
				i++
				value = args[i]
			}
			flagged = true
			if err := utf8Task(name, value); err != nil {
				return err
			}
		}
	}
	return nil
}

func utf8Task(given, task string) error {
	for i := 0; i < len(task); {
		r, n := utf8.DecodeRuneInString(task[i:])
		if r == utf8.RuneError && n == 1 {
			return exit.Refuse(RefusePromptNotUTF8, "%s is not UTF-8 text (byte 0x%02x at offset %d); give the task as UTF-8", given, task[i], i)
		}
		i += n
	}
	return nil
}

// quoted lists arguments as Go strings: "a" "b".
func quoted(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

func (c *runCmd) run(e *env) (exit.Code, error) {
	// Signals first: every step of the run watches ctx, so a stop lands
	// wherever it arrives. A reader of stdout that goes away is a stop the
	// run makes itself (the stream's write fails with EPIPE), never the
	// SIGPIPE that would kill it with its child and scratch tree left.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	spec, err := c.spec()
	if err != nil {
		return exit.Refused, err
	}
	// A fleet's per-session places come from its host daemon, which a
	// Command's fixed argv cannot name.
	spec.SummaryFile, spec.ArtifactsDir = e.getenv(launcher.EnvSummaryFile), e.getenv(launcher.EnvArtifactsDir)
	// A fleet's paths to hide, for the same reason.
	for _, p := range filepath.SplitList(e.getenv(launcher.EnvHide)) {
		if p != "" {
			spec.Hide = append(spec.Hide, p)
		}
	}
	kind, _ := kinds.Lookup(spec.Kind) // the enum admits only the table's kinds
	self, err := selfPath()
	if err != nil {
		return exit.Refused, fmt.Errorf("finding the metaharness executable the child starts as its hook and catalogue server: %w", err)
	}
	return launcher.Run(ctx, spec, kind, launcher.IO{
		Stdin: e.stdin, Stdout: e.stdout, Stderr: e.stderr, Env: e.environ(), Self: self, Log: e.log, Version: version,
		ForgetEnv: confine.ForgetEnv,
	})
}

// selfPath is the program the child starts as its hook and catalogue
// server: this one, by the name it was started under (so a link keeps its
// name), made absolute.
func selfPath() (string, error) {
	p, err := exec.LookPath(os.Args[0])
	if err != nil {
		return os.Executable()
	}
	return filepath.Abs(p)
}
