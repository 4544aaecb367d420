package claude

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/decidehttp"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
)

// HookTimeoutSeconds is the vendor's timeout for the PreToolUse hook. Our
// own deadline for an unanswered call is five seconds shorter, so that a
// late answer is always metaharness's refusal, never the vendor's guess.
const HookTimeoutSeconds = 60

// hookAuthorization is the PreToolUse hook's Authorization header: Claude
// Code puts the run's decision token in from its own environment
// (httpHookAllowedEnvVars), so the token is in no file the agent can read.
const hookAuthorization = "Bearer $" + kind.DecisionTokenEnv

// OwnedHookMatcher is the PreToolUse matcher of a run with the owned
// surface's server (a catalogue or the default verbs): every tool but that
// server's own. Those are decided where mcp-serve
// performs them, so starting a hook process per call that can only abstain
// is waste; any other tool the child may be offered still meets the hook.
// Claude Code reads a matcher that is not a plain list of names as a
// JavaScript regular expression.
const OwnedHookMatcher = "^(?!" + OwnedPrefix + ")"

// ContextChannel is how declared context files reach the model: appended to
// the system prompt, which every request carries and the record shows. An
// @path in the user turn is not used: Claude Code turns it into a file read
// that no tool call, hook or record shows.
const ContextChannel = "append-system-prompt"

// StandInKey is the fixed word Claude Code sends to --model-endpoint under
// --credentials none, from the settings' apiKeyHelper (standInSource, as
// its record names it): it is no credential, only what the client wants to
// hold before it sends a request.
const (
	StandInKey    = "metaharness-no-credential"
	standInSource = "apiKeyHelper"
)

// vendorOnly are the variables Claude Code holds and the commands it runs
// must not inherit: its credential for the proxy, the proxy's address and
// the run header (a command would post its own model request with them),
// the run's decision token (a command would post its own decision request
// with it), and the cross-session messaging socket, switched off by
// CLAUDE_CODE_HARBOR_KITE=0 and taken out here besides.
var vendorOnly = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS",
	"ANTHROPIC_UNIX_SOCKET", "CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN", kind.DecisionTokenEnv}

// callerKeys are copied from the caller's environment when present. HOME is
// not among them: the child gets a scratch home.
var callerKeys = []string{"USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ"}

// Plan builds the claude launch for spec in world. It reads nothing else.
func Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	if spec.ModelEndpoint != "" && spec.Credentials != kind.CredentialsNone && spec.Credentials != kind.CredentialsLoopback {
		return nil, exit.Refuse(kind.RefuseEndpointWithCredential,
			"--model-endpoint with --credentials %s would send that credential to %s; use --credentials loopback (the proxy forwards to the endpoint) or --credentials none",
			spec.Credentials, spec.ModelEndpoint)
	}
	if spec.Cwd == "" && len(w.MemoryAbove) > 0 {
		return nil, exit.Refuse(kind.RefuseMemoryFileAboveCWD,
			"memory file(s) %s sit above the scratch working directory, and Claude Code discovers them there; remove them or run from a scratch root with none above it",
			strings.Join(w.MemoryAbove, ", "))
	}

	cwd := filepath.Join(w.Scratch, "work")
	if spec.Cwd != "" {
		cwd = spec.Cwd
	}
	home := filepath.Join(w.Scratch, "home")
	configHome := filepath.Join(w.Scratch, "claude-home")
	tmp := filepath.Join(w.Scratch, "tmp")
	settingsPath := filepath.Join(w.Scratch, "claude-settings.json")
	mcpPath := filepath.Join(w.Scratch, "mcp-config.json")

	env := map[string]string{
		"HOME":               home,
		"PATH":               kind.ChildPath(w.Env["HOME"]),
		"TMPDIR":             tmp,
		"CLAUDE_CODE_TMPDIR": tmp,
		"CLAUDE_CONFIG_DIR":  configHome,
		// No first-party telemetry, connectivity probe or update check:
		// nothing the child starts may leave loopback.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_TELEMETRY":                        "1",
		// An @path in the task is text, not a file read no seam sees
		// (docs/wire-facts.md A4): 2.1.328 expands one on every input
		// channel unless this is set.
		"CLAUDE_CODE_DISABLE_FILE_MENTIONS": "1",
		// No cross-session messaging: 2.1.328 otherwise listens on a
		// socket in TMPDIR for "another Claude session" and hands every
		// command its path and token, so a command could put a message into
		// the model's context that no seam decides and the record shows
		// only as a digest. This switch removes the socket and both
		// variables (docs/wire-facts.md A8).
		"CLAUDE_CODE_HARBOR_KITE": "0",
		// Tool search off: no deferred loading, so the model is offered each
		// tool inline and nothing else (2.1.328 otherwise adds a
		// DeferredToolPlaceholder stub beside a catalogue's tools).
		"ENABLE_TOOL_SEARCH": "false",
	}
	for _, k := range callerKeys {
		if v, ok := w.Env[k]; ok {
			env[k] = v
		}
	}
	var credHow, keyHelper string
	switch spec.Credentials {
	case kind.CredentialsAPIKey:
		key, ok := w.Env["ANTHROPIC_API_KEY"]
		if !ok || key == "" {
			return nil, exit.Refuse(kind.RefuseAPIKeyMissing, "--credentials api-key reads ANTHROPIC_API_KEY from metaharness's environment, and it is not set; export it, or use --credentials loopback")
		}
		env["ANTHROPIC_API_KEY"] = key
		maps.Copy(env, w.LoopbackEnv)
		credHow = spec.Credentials.Held("ANTHROPIC_API_KEY")
		if len(w.LoopbackEnv) > 0 {
			credHow += "; it passes through the loopback proxy, which reads the model's answers"
		}
	case kind.CredentialsLoopback:
		if len(w.LoopbackEnv) == 0 {
			return nil, fmt.Errorf("internal: --credentials loopback planned without a started proxy")
		}
		for k, v := range w.LoopbackEnv {
			env[k] = v
		}
		credHow = spec.Credentials.Held("")
	case kind.CredentialsNone:
		credHow = spec.Credentials.Held("")
		if spec.ModelEndpoint != "" {
			env["ANTHROPIC_BASE_URL"] = strings.TrimSuffix(spec.ModelEndpoint, "/")
			maps.Copy(env, w.LoopbackEnv) // the proxy in front of the endpoint, when the run has one
			// Claude Code sends no request without some credential, and no key
			// variable may reach the child: the settings' apiKeyHelper hands it
			// a fixed word instead, which the endpoint can ignore.
			keyHelper = "echo " + StandInKey
			credHow += "; no key variable either: Claude Code reaches --model-endpoint with the fixed word " + StandInKey + ", which is no credential, from the settings' apiKeyHelper"
		}
	default:
		return nil, fmt.Errorf("internal: --credentials %s reached the claude plan; CheckSpec refuses it", spec.Credentials)
	}

	if w.DecisionAddr == "" || w.DecisionToken == "" {
		return nil, fmt.Errorf("internal: claude planned without the run's decision endpoint")
	}
	env[kind.DecisionTokenEnv] = w.DecisionToken
	hookURL := "http://" + w.DecisionAddr + decidehttp.Path
	published, serve, owned := Kind{}.Descriptor().Rules.OwnedServer(spec, w, cwd)
	matcher := ""
	if owned {
		matcher = OwnedHookMatcher
	}
	// The PreToolUse hook is a request to the run's decision endpoint: no
	// process per call. onFailure "block" makes every failure of it (a
	// refused connection, a timeout, a non-2xx answer, a body that is no
	// hook answer) block the call; 2.1.328 would otherwise let the call
	// go on to its own permission rules, under which Read runs
	// (docs/wire-facts.md A9). The URL lists are Claude Code's own
	// allowlists: this hook may reach this URL and read this variable,
	// and nothing else.
	settings := map[string]any{
		"permissions":            map[string]any{"allow": []string{}, "deny": []string{}},
		"allowedHttpHookUrls":    []string{hookURL},
		"httpHookAllowedEnvVars": []string{kind.DecisionTokenEnv},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{
			"matcher": matcher,
			"hooks": []any{map[string]any{
				"type": "http", "url": hookURL, "timeout": HookTimeoutSeconds, "onFailure": "block",
				"headers":        map[string]string{"Authorization": hookAuthorization},
				"allowedEnvVars": []string{kind.DecisionTokenEnv},
			}},
		}}},
	}
	standIn := ""
	if keyHelper != "" {
		settings["apiKeyHelper"] = keyHelper
		standIn = standInSource
	}
	files := []kind.File{kind.JSONFile(settingsPath, settings)}

	args := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--strict-mcp-config", "--setting-sources", "", "--settings", settingsPath,
		"--permission-mode", "dontAsk"}
	var servers []string
	if owned {
		server := map[string]any{"mcpServers": map[string]any{"metaharness": map[string]any{
			"type":    "stdio",
			"command": w.Self,
			"args":    serve,
		}}}
		files = append(files, kind.JSONFile(mcpPath, server))
		var allowed []string
		for _, t := range published {
			allowed = append(allowed, OwnedPrefix+t)
		}
		args = append(args, "--tools", "", "--mcp-config", mcpPath, "--allowedTools", strings.Join(allowed, ","))
		servers = []string{"metaharness"}
	}
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}
	if spec.Effort != "" {
		args = append(args, "--effort", spec.Effort)
	}
	if spec.MaxTurns > 0 {
		args = append(args, "--max-turns", fmt.Sprint(spec.MaxTurns))
	}
	if spec.MaxBudgetUSD != "" {
		args = append(args, "--max-budget-usd", spec.MaxBudgetUSD)
	}
	if w.Context != "" {
		args = append(args, "--append-system-prompt", w.Context)
	}
	// The task goes last, after "--", so that a task starting with "-" is
	// never read as a flag.
	args = append(args, "--", spec.Prompt)

	conf := kind.Confinement(spec, w, []string{configHome})
	// Claude Code runs every Bash command, hook and MCP server as
	// `PREFIX 'COMMAND LINE'` (through its shell for the first two), so the
	// prefix is the sandbox script and names the shell Claude Code is told
	// to write for.
	if f := kind.CommandSandbox(conf, w, "command-sandbox", kind.SandboxShell, vendorOnly, "-c"); f != nil {
		files = append(files, *f)
		env["CLAUDE_CODE_SHELL_PREFIX"] = f.Path
		env["CLAUDE_CODE_SHELL"] = kind.SandboxShell
	}
	claim := attestation(spec, w, cwd, configHome, credHow, servers, env)
	claim.Add(attest.H13, endpointWords(hookURL, env["CLAUDE_CODE_SHELL_PREFIX"] != ""))
	kind.AttestConfinement(claim, conf, spec, w)
	return &kind.Plan{
		Program:     w.Binary,
		Args:        args,
		Env:         kind.SortedEnv(env),
		Dir:         cwd,
		Dirs:        []string{configHome},
		Files:       files,
		Attestation: claim.Attestation(),
		MCPServers:  nonNilStrings(servers),

		StandInCredential: standIn,
		Confinement:       conf,
		DecisionChannel:   owned, // mcp-serve; the PreToolUse hook posts to the decision endpoint
	}, nil
}

func attestation(spec *kind.Spec, w *kind.World, cwd, configHome, credHow string, servers []string, env map[string]string) *attest.Claim {
	c := attest.NewClaim(string(spec.Hermetic), string(spec.Decisions))
	c.Impose(attest.H1a, "CLAUDE_CONFIG_DIR="+configHome+", a config home metaharness created empty; no plugin is declared, so none is handed over")
	c.Impose(attest.H1b, "CLAUDE_CONFIG_DIR="+configHome+" holds no output-style setting")
	c.Impose(attest.H2, `--setting-sources "" loads no user, project or local settings`)
	c.Impose(attest.H3, kind.EnvRow(env, callerKeys))
	c.Impose(attest.H4, credHow)
	switch {
	case len(servers) > 0 && w.CatalogueCopy == "":
		programs := "none"
		if len(spec.AllowProgs) > 0 {
			programs = strings.Join(spec.AllowProgs, ", ")
		}
		c.Impose(attest.H5, "--strict-mcp-config with one server, metaharness (mcp-serve with the default verbs "+strings.Join(mcpserve.Verbs(), ", ")+"; programs behind its run entry: "+programs+")")
	case len(servers) > 0:
		c.Impose(attest.H5, "--strict-mcp-config with one server, metaharness (mcp-serve --catalogue "+w.CatalogueCopy+")")
	default:
		c.Impose(attest.H5, "--strict-mcp-config and no --mcp-config: no MCP server")
	}
	switch spec.Credentials {
	case kind.CredentialsLoopback:
		c.Impose(attest.H6, "no credential file in the child's config home; the token stays with the loopback proxy")
	default:
		c.Impose(attest.H6, "no credential file is copied into the child's config home")
	}
	c.Impose(attest.H8, "no --bare or --safe-mode on the argv; CLAUDE_CODE_SAFE_MODE and CLAUDE_CODE_SIMPLE are not in the constructed environment")
	attest.AttestWorkdir(attest.Workdir{
		Kind: "claude", Memory: memory, Dir: cwd, Operator: spec.Cwd != "", ScratchCwd: spec.ScratchCwd,
		Walk: attest.MemoryWalk{From: cwd, Above: w.MemoryAbove, AtRoot: w.MemoryAtRoot},
	}, c)
	kind.ClaimGate(c, spec, w)
	kind.ClaimWire(c, w, "Claude Code")
	if m := Mentions(spec.Prompt); len(m) > 0 {
		c.Ambient("the task mentions " + strings.Join(m, ", ") + ": CLAUDE_CODE_DISABLE_FILE_MENTIONS=1 keeps Claude Code from reading them into the task, so each reaches the model as text and any read of it is a tool call a seam decides")
	}
	if spec.Decisions == frame.ModeObserve {
		c.Ambient("observe mode: every call is allowed, and an allow grants past Claude Code's own permission rules")
	}
	return c
}

// endpointWords say, for H13, how Claude Code's decisions reach the run
// and who else could ask: where the command sandbox takes the token out of
// the commands' environment, and where not, that they inherit it and the
// connection check alone tells them from Claude Code.
func endpointWords(url string, sandboxed bool) string {
	token := "in " + kind.DecisionTokenEnv + ", which the command sandbox takes out of every command's environment"
	if !sandboxed {
		token = "in " + kind.DecisionTokenEnv + ", which the agent's commands inherit too where no command sandbox runs them, as here"
	}
	return "; Claude Code asks each decision of the run's decision endpoint at " + url +
		" (its PreToolUse http hook, onFailure block: a refused connection, a timeout, a non-2xx answer or one it cannot read blocks the call), which answers only a request carrying the run's decision token (" + token +
		") on a connection Claude Code's own process holds (by the kernel's table of its sockets); a request that is not Claude Code's is refused and recorded, never decided"
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Mentions are the task's @path mentions as Claude Code 2.1.328 reads
// them (docs/wire-facts.md A4): an @ at the start or after white space,
// then a path, in double quotes when it holds spaces, a trailing , or .
// left out. Whether the path exists does not matter here: the launch
// switches the expansion off either way, and says so.
func Mentions(task string) []string {
	var out []string
	rs := []rune(task)
	for i := 0; i < len(rs); i++ {
		if rs[i] != '@' || i > 0 && !unicode.IsSpace(rs[i-1]) || i+1 >= len(rs) {
			continue
		}
		j := i + 1
		if rs[j] == '"' {
			k := j + 1
			for k < len(rs) && rs[k] != '"' {
				k++
			}
			if k < len(rs) && k > j+1 {
				out = append(out, string(rs[i:k+1]))
			}
			i = k
			continue
		}
		for j < len(rs) && !unicode.IsSpace(rs[j]) {
			j++
		}
		m := strings.TrimRight(string(rs[i:j]), ",.")
		if len(m) > 1 && m[1] != '@' {
			out = append(out, m)
		}
		i = j
	}
	return out
}
