package b10xstandin

import (
	"fmt"
	"slices"
	"strings"
)

// option is one flag of `b10x-harness run` as the argv contract of
// 2026-09-18 records it (reference notes b10x-loop §3), plus
// --api-key-secret, which SPEC §6 gives the loop and no contract read has.
type option struct {
	long, short string
	value       string   // the value name clap prints; "" for a bare flag
	repeat      bool     // may be given more than once
	choices     []string // the only values clap accepts, when it checks them
	help        string
}

var runFlags = []option{
	{long: "input", value: "INPUT", help: "The task"},
	{long: "base-url", value: "BASE_URL", help: "Endpoint origin and API prefix"},
	{long: "model", value: "MODEL", help: "Model name"},
	{long: "wire", value: "WIRE", choices: []string{"openai-responses", "anthropic-messages"}, help: "Provider wire"},
	{long: "workspace", value: "WORKSPACE", help: "The tree the tools see [default: .]"},
	{long: "workspace-id", value: "WORKSPACE_ID", help: "Workspace id on a socket substrate [default: default]"},
	{long: "api-key-file", value: "API_KEY_FILE", help: "Read the API key from this file"},
	{long: "api-key-env", value: "API_KEY_ENV", help: "Read the API key from this variable"},
	{long: "api-key-secret", value: "API_KEY_SECRET", help: "Read the API key from the OS secret store"},
	{long: "oauth-token-file", value: "OAUTH_TOKEN_FILE", help: "Read an OAuth token from this file on every call"},
	{long: "oauth-token-env", value: "OAUTH_TOKEN_ENV", help: "Read an OAuth token from this variable"},
	{long: "oauth-token-pointer", value: "POINTER", help: "JSON pointer to the token inside the OAuth source"},
	{long: "approve", value: "MODE", choices: []string{"auto", "prompt", "deny", "all"}, help: "Approval mode [default: auto]"},
	{long: "approve-up-to", value: "RISK", choices: []string{"low", "medium", "high", "destructive"}, help: "Approve calls up to this risk"},
	{long: "yes", help: "Approve every call"},
	{long: "json", help: "One JSON event per line on stdout"},
	{long: "quiet", help: "No progress on stderr"},
	{long: "no-session", help: "Write no session file"},
	{long: "resume", value: "ID", help: "Resume a session (latest accepted)"},
	{long: "session-dir", value: "PATH", help: "Where sessions are filed"},
	{long: "context", value: "FILE", repeat: true, help: "A file handed to the model as operator context"},
	{long: "instructions-file", value: "FILE", help: "Operator instructions"},
	{long: "no-project-instructions", help: "Do not read AGENTS.md or CLAUDE.md"},
	{long: "hooks", value: "FILE", help: "Hooks document"},
	{long: "execution-path", value: "PATH", choices: []string{"direct", "metaharness"}, help: "How the loop was reached [default: direct]"},
	{long: "substrate", value: "SUBSTRATE", help: "Confine through substrate's daemon at this socket"},
	{long: "substrate-embedded", help: "Confine through the embedded substrate"},
	{long: "cgroup-root", value: "DIR", help: "cgroup root for confined processes"},
	{long: "allow-program", value: "PROGRAM", repeat: true, help: "A program confined runs may start"},
	{long: "process-write-subtree", value: "DIR", repeat: true, help: "A subtree confined processes may write"},
	{long: "write-scope", value: "GLOB=SCOPE", repeat: true, help: "Write scope, first match wins"},
	{long: "scope-announce", value: "MODE", choices: []string{"stated", "silent"}, help: "Whether the scope is stated to the model [default: stated]"},
	{long: "toolchain", value: "NAME", help: "A declared toolchain"},
	{long: "toolchain-spec", value: "FILE", repeat: true, help: "A toolchain declaration"},
	{long: "driver", value: "PATH", help: "A driver staged read-only"},
	{long: "surface", value: "SURFACE", choices: []string{"flat", "verbs"}, help: "Tool surface [default: flat]"},
	{long: "max-turns", value: "N", help: "Stop after this many turns"},
	{long: "max-output-tokens", value: "N", help: "Output token budget"},
	{long: "max-output-tokens-per-turn", value: "N", help: "Output tokens per turn"},
	{long: "max-duration-ms", value: "MS", help: "Deadline"},
	{long: "max-cost-microunits", value: "N", help: "Cost budget (needs --prices)"},
	{long: "context-window", value: "N", help: "Context window [default: 128000]"},
	{long: "prices", value: "PRICES", help: "Rate card"},
	{long: "delegate", help: "Allow delegation"},
	{long: "delegate-turns", value: "N", help: "Turns per delegate [default: 20]"},
	{long: "delegate-parallel", value: "N", help: "Parallel delegates [default: 4]"},
	{long: "skills-dir", value: "DIR", repeat: true, help: "Skills directory"},
	{long: "agents-dir", value: "DIR", repeat: true, help: "Agents directory"},
	{long: "plugin-dir", value: "DIR", repeat: true, help: "Plugin directory"},
	{long: "memory-dir", value: "DIR", repeat: true, help: "Memory directory"},
	{long: "mcp-profile", value: "FILE", repeat: true, help: "Outbound MCP profile"},
	{long: "mcp-registry", value: "FILE", help: "MCP registry (needs --mcp-profile)"},
	{long: "output-schema", value: "FILE", help: "Publish answer with this schema"},
	{long: "temperature", value: "T", help: "Sampling temperature"},
	{long: "top-p", value: "P", help: "Nucleus sampling"},
	{long: "reasoning-effort", value: "EFFORT", help: "Reasoning effort"},
	{long: "profile", short: "p", value: "NAME", repeat: true, help: "A profile"},
	{long: "help", short: "h", help: "Print help"},
}

// conflicts are the pairs clap refuses together.
var conflicts = [][2]string{
	{"api-key-file", "api-key-env"}, {"api-key-file", "api-key-secret"}, {"api-key-env", "api-key-secret"},
	{"api-key-file", "oauth-token-file"}, {"api-key-file", "oauth-token-env"},
	{"api-key-env", "oauth-token-file"}, {"api-key-env", "oauth-token-env"},
	{"api-key-secret", "oauth-token-file"}, {"api-key-secret", "oauth-token-env"},
	{"oauth-token-file", "oauth-token-env"},
	{"no-session", "resume"}, {"approve-up-to", "yes"}, {"substrate", "substrate-embedded"},
}

// requires are the flags clap accepts only beside one of some others.
var requires = map[string][]string{
	"oauth-token-pointer": {"oauth-token-file", "oauth-token-env"},
	"delegate-turns":      {"delegate"}, "delegate-parallel": {"delegate"},
	"max-cost-microunits": {"prices"}, "mcp-registry": {"mcp-profile"},
}

// args is a parsed `run`: each flag's values in order, bare flags as "".
type args map[string][]string

func (a args) has(name string) bool { return len(a[name]) > 0 }

func (a args) get(name string) string {
	if v := a[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// usageError is a clap parse error: its text goes to stderr as clap prints
// it, and the run exits 1.
type usageError struct{ text string }

func (e *usageError) Error() string { return e.text }

const runUsage = "Usage: b10x-harness run [OPTIONS] --input <INPUT>"

func clapError(format string, a ...any) *usageError {
	return &usageError{text: "error: " + fmt.Sprintf(format, a...) + "\n\n" + runUsage + "\n\nFor more information, try '--help'.\n"}
}

func lookupFlag(word string) (*option, bool) {
	for i := range runFlags {
		f := &runFlags[i]
		if word == "--"+f.long || (f.short != "" && word == "-"+f.short) {
			return f, true
		}
	}
	return nil, false
}

func (f *option) display() string {
	if f.value == "" {
		return "--" + f.long
	}
	return "--" + f.long + " <" + f.value + ">"
}

// parseRun parses the words after `run` the way clap does for this
// command: long flags with a separate or =value, no positionals.
func parseRun(words []string) (args, error) {
	a := args{}
	for i := 0; i < len(words); i++ {
		w := words[i]
		name, inline, hasInline := strings.Cut(w, "=")
		if !strings.HasPrefix(w, "--") {
			name, hasInline = w, false
		}
		f, ok := lookupFlag(name)
		if !ok {
			return nil, clapError("unexpected argument '%s' found", w)
		}
		if f.value == "" {
			if hasInline {
				return nil, clapError("unexpected value '%s' for '%s' found; no more were expected", inline, f.display())
			}
			a[f.long] = append(a[f.long], "")
			continue
		}
		v := inline
		if !hasInline {
			if i+1 >= len(words) || (strings.HasPrefix(words[i+1], "-") && words[i+1] != "-") {
				return nil, clapError("a value is required for '%s' but none was supplied", f.display())
			}
			i++
			v = words[i]
		}
		if f.choices != nil && !slices.Contains(f.choices, v) {
			return nil, &usageError{text: fmt.Sprintf("error: invalid value '%s' for '%s'\n  [possible values: %s]\n\nFor more information, try '--help'.\n", v, f.display(), strings.Join(f.choices, ", "))}
		}
		if a.has(f.long) && !f.repeat {
			return nil, clapError("the argument '%s' cannot be used multiple times", f.display())
		}
		a[f.long] = append(a[f.long], v)
	}
	for _, c := range conflicts {
		if a.has(c[0]) && a.has(c[1]) {
			x, _ := lookupFlag("--" + c[0])
			y, _ := lookupFlag("--" + c[1])
			return nil, clapError("the argument '%s' cannot be used with '%s'", x.display(), y.display())
		}
	}
	for name, any := range requires {
		if !a.has(name) {
			continue
		}
		if !slices.ContainsFunc(any, a.has) {
			f, _ := lookupFlag("--" + any[0])
			return nil, clapError("the following required arguments were not provided:\n  %s", f.display())
		}
	}
	if !a.has("input") && !a.has("help") {
		return nil, clapError("the following required arguments were not provided:\n  --input <INPUT>")
	}
	return a, nil
}

// runHelp is `b10x-harness run --help`, in clap's layout: every option the
// command declares, which is what doctor reads.
func runHelp() string {
	var b strings.Builder
	b.WriteString("Run the loop on one input\n\n" + runUsage + "\n\nOptions:\n")
	for _, f := range runFlags {
		short := "    "
		if f.short != "" {
			short = "-" + f.short + ", "
		}
		fmt.Fprintf(&b, "  %s%-40s %s\n", short, f.display(), f.help)
	}
	return b.String()
}

const rootHelp = `The beyond10x loop

Usage: b10x-harness [OPTIONS] <COMMAND>

Commands:
  run   Run the loop on one input
  help  Print this message or the help of the given subcommand(s)

Options:
  -h, --help     Print help
  -V, --version  Print version
`
