package gemini

import (
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/gemini/hook"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
)

// HookTimeout is the BeforeTool hook's timeout in the scratch settings. The
// run's deadline for an unanswered call is five seconds shorter, so that a
// late answer is metaharness's deny; a hook Gemini CLI times out anyway
// meets the admin policy, which denies an unmarked call.
const HookTimeout = 60 * time.Second

// ContextChannel is how declared context files reach the model: the scratch
// config home's GEMINI.md, which Gemini CLI loads as its global memory into
// the first user turn of every request.
const ContextChannel = "home-gemini-md"

// KeyEnv is the variable Gemini CLI's gemini-api-key auth reads the key
// from: the placeholder under --credentials loopback.
const KeyEnv = "GEMINI_API_KEY"

// StandInKey is the fixed word Gemini CLI is given in KeyEnv under
// --credentials none: it sends nothing without a key, and this is no
// credential.
const StandInKey = "metaharness-no-credential"

// maxAttempts bounds Gemini CLI's own retries of a model request (its
// default is ten, minutes of backoff on a 5xx): sent again once, never
// more; the loopback proxy waits out a throttle itself.
const maxAttempts = 2

// Scratch files and directories of the launch.
const (
	configHomeDir = "gemini-home" // GEMINI_CLI_HOME; its .gemini holds the settings
	policyFile    = "gemini-admin-policy.toml"
	shellDirName  = "gemini-bin" // the sandbox's bash, first on PATH
)

// vendorOnly are the variables Gemini CLI holds and the commands and hooks
// it runs must not inherit: its credential for the proxy (the placeholder,
// or the child's own key), the proxy's address and the run header (a
// command would post its own model request with them).
var vendorOnly = []string{KeyEnv, "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_CLI_CUSTOM_HEADERS"}

// callerKeys are copied from the caller's environment when present. HOME is
// not among them: the child gets a scratch home.
var callerKeys = []string{"USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "TZ"}

// Refusal names of the gemini launch (exit 2, before the spawn).
const (
	// RefuseOptionUnsupported: a run flag Gemini CLI has no knob for.
	RefuseOptionUnsupported exit.Name = "gemini-option-unsupported"
	// RefuseTaskSlashCommand: a task Gemini CLI would read as a slash command
	// (a built-in, an MCP prompt or a command file run outside any tool).
	RefuseTaskSlashCommand exit.Name = "gemini-task-slash-command"
)

// refuseSpec names what the plan refuses of the spec alone.
func refuseSpec(spec *kind.Spec) error {
	switch {
	case spec.MaxBudgetUSD != "":
		return exit.Refuse(RefuseOptionUnsupported, "--max-budget-usd %s on gemini: Gemini CLI prices nothing, so no budget can be held; drop --max-budget-usd", spec.MaxBudgetUSD)
	case spec.Effort != "":
		return exit.Refuse(RefuseOptionUnsupported, "--effort %s on gemini: Gemini CLI 0.61.0 takes no reasoning effort on its command line; drop --effort (or name a --model that thinks less)", spec.Effort)
	case isSlashCommand(spec.Prompt):
		return exit.Refuse(RefuseTaskSlashCommand, "the task starts with /, which Gemini CLI reads as a slash command (a built-in, an MCP prompt or a command file, run outside any tool call) rather than a task; reword it so that it does not start with /")
	case spec.ModelEndpoint != "" && spec.Credentials == kind.CredentialsAPIKey:
		return exit.Refuse(kind.RefuseEndpointWithCredential,
			"--model-endpoint with --credentials api-key would send GEMINI_API_KEY to %s; use --credentials loopback (the proxy forwards to the endpoint) or --credentials none", spec.ModelEndpoint)
	}
	return nil
}

// isSlashCommand is Gemini CLI 0.61.0's test of a prompt: it starts with /
// but not // or /*.
func isSlashCommand(task string) bool {
	return strings.HasPrefix(task, "/") && !strings.HasPrefix(task, "//") && !strings.HasPrefix(task, "/*")
}

// Plan builds the gemini launch for spec in world. It reads nothing else.
func Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	if err := refuseSpec(spec); err != nil {
		return nil, err
	}
	obs, err := observation(w)
	if err != nil {
		return nil, err
	}
	cwd := filepath.Join(w.Scratch, "work")
	if spec.Cwd != "" {
		cwd = spec.Cwd
	}
	home := filepath.Join(w.Scratch, "home")
	tmp := filepath.Join(w.Scratch, "tmp")
	configHome := filepath.Join(w.Scratch, configHomeDir)
	geminiDir := filepath.Join(configHome, ".gemini")
	settingsPath := filepath.Join(geminiDir, "settings.json")
	policyPath := filepath.Join(w.Scratch, policyFile)

	env := map[string]string{
		"HOME":            home,
		"GEMINI_CLI_HOME": configHome,
		"TMPDIR":          tmp,
		"PATH":            kind.ChildPath(w.Env["HOME"]),
		"NO_COLOR":        "1",
		// One process: the relaunch would make a second node process the
		// one that asks the model, which the proxy admits only from the
		// vendor's own.
		"GEMINI_CLI_NO_RELAUNCH": "true",
		// No system settings or defaults: these paths name nothing.
		"GEMINI_CLI_SYSTEM_SETTINGS_PATH": filepath.Join(w.Scratch, "gemini-no-system-settings.json"),
		"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": filepath.Join(w.Scratch, "gemini-no-system-defaults.json"),
	}
	for _, k := range callerKeys {
		if v, ok := w.Env[k]; ok {
			env[k] = v
		}
	}
	credHow, standIn, err := credentials(spec, w, env)
	if err != nil {
		return nil, err
	}

	marker := hook.Marker(w.DecisionSocket)
	published, serve, owned := Kind{}.Descriptor().Rules.OwnedServer(spec, w, cwd)
	var core, servers []string
	if owned {
		for _, t := range published {
			core = append(core, OwnedPrefix+t)
		}
		servers = []string{ServerName}
	} else {
		core = nativeTools
	}
	hookCmd := kind.ShellQuote(w.Self)
	for _, a := range hook.Args(w.DecisionSocket) {
		hookCmd += " " + kind.ShellQuote(a)
	}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}, "folderTrust": map[string]any{"enabled": true}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general": map[string]any{"maxAttempts": maxAttempts, "enableAutoUpdate": false, "enableAutoUpdateNotification": false,
			"checkpointing": map[string]any{"enabled": false}},
		"advanced":    map[string]any{"ignoreLocalEnv": true, "autoConfigureMemory": false},
		"context":     map[string]any{"memoryBoundaryMarkers": []string{}},
		"skills":      map[string]any{"enabled": false},
		"ide":         map[string]any{"enabled": false},
		"tools":       map[string]any{"core": core},
		"mcp":         map[string]any{"allowed": []string{ServerName}},
		"mcpServers":  map[string]any{},
		"hooksConfig": map[string]any{"enabled": true},
		"hooks": map[string]any{"BeforeTool": []any{map[string]any{
			// The owned server's tools are decided where mcp-serve performs
			// them; every other tool meets the hook.
			"matcher": "^(?!" + OwnedPrefix + ")",
			"hooks":   []any{map[string]any{"type": "command", "name": "metaharness", "command": hookCmd, "timeout": HookTimeout.Milliseconds()}},
		}}},
	}
	if owned {
		settings["mcpServers"] = map[string]any{ServerName: map[string]any{"command": w.Self, "args": serve, "cwd": cwd}}
	}
	if spec.MaxTurns > 0 {
		settings["model"] = map[string]any{"maxSessionTurns": spec.MaxTurns}
	}
	files := []kind.File{kind.JSONFile(settingsPath, settings), {Path: policyPath, Mode: 0o600, Content: adminPolicy(owned, marker)}}
	readOnly := []string{settingsPath}
	if w.Context != "" {
		mem := filepath.Join(geminiDir, "GEMINI.md")
		files = append(files, kind.File{Path: mem, Mode: 0o600, Content: EscapeImports(w.Context)})
		readOnly = append(readOnly, mem)
	}

	program, args := w.Binary, []string{}
	if obs.Bundle != "" && obs.Node != "" {
		program, args = obs.Node, []string{obs.Bundle}
	}
	task, mentions := EscapeMentions(spec.Prompt)
	args = append(args, "--prompt="+task, "--output-format", "stream-json",
		"--skip-trust", "--admin-policy", policyPath, "--allowed-mcp-server-names", ServerName,
		"--approval-mode", "default", "--extensions", "none", "--raw-output", "--accept-raw-output-risk")
	if spec.Model != "" {
		args = append(args, "--model", spec.Model)
	}

	for _, d := range []string{obs.Install, obs.NodeDir} {
		if d != "" {
			readOnly = append(readOnly, d)
		}
	}
	conf := kind.Confinement(spec, w, []string{configHome}, readOnly...)
	if conf != nil {
		// The workspace's own .gemini (settings, commands, skills, agents)
		// and the host's system configuration read as empty: only the
		// launch's settings and admin policy are Gemini CLI's. So does the
		// caller's own Gemini CLI home (its Google login), should the cwd
		// hold it.
		conf.Covered = append(conf.Covered, filepath.Join(cwd, ".gemini"), systemConfigDir)
		if h := w.Env["HOME"]; filepath.IsAbs(h) {
			conf.Covered = append(conf.Covered, filepath.Join(h, ".gemini"))
		}
	}
	dirs := []string{configHome, geminiDir}
	// Gemini CLI runs every shell command and hook as `bash -c LINE`, bash
	// looked up on its PATH: the sandbox script, named bash, comes first.
	if f := kind.CommandSandbox(conf, w, filepath.Join(shellDirName, "bash"), kind.SandboxShell, vendorOnly); f != nil {
		files = append(files, *f)
		dirs = append(dirs, filepath.Dir(f.Path))
		env["PATH"] = filepath.Dir(f.Path) + ":" + env["PATH"]
	}
	claim := attestation(spec, w, obs, attestIn{cwd: cwd, configHome: configHome, credHow: credHow, servers: servers, env: env, mentions: mentions, confined: conf != nil})
	kind.AttestConfinement(claim, conf, spec, w)
	return &kind.Plan{
		Program:           program,
		Args:              args,
		Env:               kind.SortedEnv(env),
		Dir:               cwd,
		Dirs:              dirs,
		Files:             files,
		Attestation:       claim.Attestation(),
		MCPServers:        nonNil(servers),
		StandInCredential: standIn,
		Confinement:       conf,
		DecisionChannel:   true, // the BeforeTool hook, and mcp-serve when given
	}, nil
}

// credentials puts what the child needs to reach its model into env and
// says how, for H4, and which credential source is a stand-in.
func credentials(spec *kind.Spec, w *kind.World, env map[string]string) (how, standIn string, err error) {
	switch spec.Credentials {
	case kind.CredentialsLoopback:
		if len(w.LoopbackEnv) == 0 {
			return "", "", fmt.Errorf("internal: --credentials loopback planned without a started proxy")
		}
		maps.Copy(env, w.LoopbackEnv)
		return spec.Credentials.Held(""), "", nil
	case kind.CredentialsAPIKey:
		key, ok := w.Env[KeyEnv]
		if !ok || key == "" {
			return "", "", exit.Refuse(kind.RefuseAPIKeyMissing, "--credentials api-key reads %s from metaharness's environment, and it is not set; export it, or use --credentials loopback", KeyEnv)
		}
		env[KeyEnv] = key
		maps.Copy(env, w.LoopbackEnv)
		how = spec.Credentials.Held(KeyEnv)
		if len(w.LoopbackEnv) > 0 {
			how += "; it passes through the loopback proxy, which reads the model's answers"
		}
		return how, "", nil
	case kind.CredentialsNone:
		// Gemini CLI sends no request without a key: a fixed word that is
		// no credential, which an endpoint can ignore.
		env[KeyEnv] = StandInKey
		how = spec.Credentials.Held("") + "; no key either: Gemini CLI's " + KeyEnv + " holds the fixed word " + StandInKey + ", which is no credential"
		if spec.ModelEndpoint != "" {
			env["GOOGLE_GEMINI_BASE_URL"] = strings.TrimSuffix(spec.ModelEndpoint, "/")
			maps.Copy(env, w.LoopbackEnv) // the proxy in front of the endpoint, when the run has one
		}
		return how, KeyEnv, nil
	}
	return "", "", fmt.Errorf("internal: --credentials %s reached the gemini plan; CheckSpec refuses it", spec.Credentials)
}

// adminPolicy is the run's admin policy (Gemini CLI's highest tier): every
// call is denied unless a rule below allows it; the owned server's tools
// are allowed (mcp-serve decides each where it performs it); each native
// tool is allowed only when its input carries the run's marker, which the
// hook adds to a call the run allowed, so that a hook that crashed, printed
// no JSON or timed out lets nothing run.
func adminPolicy(owned bool, marker string) string {
	var b strings.Builder
	b.WriteString("# Written by metaharness for one governed run; removed with the scratch tree.\n\n")
	b.WriteString("[[rule]]\ntoolName = \"*\"\ndecision = \"deny\"\npriority = 1\n")
	b.WriteString("denyMessage = " + strconv.Quote("metaharness decided nothing for this call (its hook gave no answer), so it did not run") + "\n")
	if owned {
		b.WriteString("\n[[rule]]\nmcpName = \"" + ServerName + "\"\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 100\n")
		return b.String()
	}
	var others []string
	for _, t := range nativeTools {
		if t != shellTool {
			others = append(others, strconv.Quote(t))
		}
	}
	b.WriteString("\n[[rule]]\ntoolName = [" + strings.Join(others, ", ") + "]\n")
	b.WriteString("argsPattern = '" + hook.MarkerPattern(marker) + "'\ndecision = \"allow\"\npriority = 200\n")
	b.WriteString("\n[[rule]]\ntoolName = \"" + shellTool + "\"\n")
	b.WriteString("argsPattern = '" + hook.ShellDirPattern(marker) + "'\ndecision = \"allow\"\nallowRedirection = true\npriority = 200\n")
	return b.String()
}

// mention is Gemini CLI 0.61.0's @ command in a prompt (its
// AT_COMMAND_PATH_REGEX_SOURCE after an @ no backslash precedes): a path it
// reads and appends outside any tool call.
var mention = regexp.MustCompile(`(?:^|[^\\])(@(?:"[^"]*"|\\.|[^ \t\n\r,;!?()\[\]{}.]|\.[^ \t\n\r])+)`)

// EscapeMentions is the task with every @ that Gemini CLI would read as a
// path mention escaped (\@), so that each reaches the model as text and
// any read of the file is a tool call a seam decides; it returns the
// mentions it escaped.
func EscapeMentions(task string) (string, []string) {
	var found []string
	for _, m := range mention.FindAllStringSubmatch(task, -1) {
		found = append(found, m[1])
	}
	if len(found) == 0 {
		return task, nil
	}
	var b strings.Builder
	for i := 0; i < len(task); i++ {
		if task[i] == '@' && (i == 0 || task[i-1] != '\\') {
			b.WriteByte('\\')
		}
		b.WriteByte(task[i])
	}
	return b.String(), found
}

// importAt is an @ a GEMINI.md import starts with: at the start of the
// text or after white space.
var importAt = regexp.MustCompile(`(^|\s)@`)

// EscapeImports is context text for a GEMINI.md with every @ that Gemini
// CLI would read as an import (@path, at the start or after white space)
// escaped, so that the declared files are all it hands over.
func EscapeImports(text string) string { return importAt.ReplaceAllString(text, `$1\@`) }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// attestIn is what the attestation reads of the plan.
type attestIn struct {
	cwd, configHome, credHow string
	servers                  []string
	env                      map[string]string
	mentions                 []string
	confined                 bool
}

func attestation(spec *kind.Spec, w *kind.World, obs observed, in attestIn) *attest.Claim {
	c := attest.NewClaim(string(spec.Hermetic), string(spec.Decisions))
	c.Impose(attest.H1a, "GEMINI_CLI_HOME="+in.configHome+", a config home metaharness created holding only its settings; --extensions none, and no extension is declared")
	c.Impose(attest.H1b, "Gemini CLI has no output style; the scratch settings set no system prompt of their own")
	h2 := "the scratch settings are the user layer; GEMINI_CLI_SYSTEM_SETTINGS_PATH and _DEFAULTS_PATH name no file; --skip-trust trusts the workspace only after its .gemini/settings.json was passed over at load, and no .env is read (advanced.ignoreLocalEnv)"
	switch {
	case in.confined:
		h2 += "; the child's view covers the workspace's .gemini and " + systemConfigDir
		c.Impose(attest.H2, h2)
	case obs.WorkspaceConfig || obs.SystemConfig:
		why := "unconfined, so nothing covers " + strings.Join(present(obs, in.cwd), " and ")
		if obs.WorkspaceConfig {
			why += "; only the order in which 0.61.0 loads settings and trusts the workspace keeps the workspace's settings out, and its commands, skills and agents are Gemini CLI's"
		}
		if obs.SystemConfig {
			why += "; the host's system settings and admin policies there are Gemini CLI's"
		}
		c.Unavailable(attest.H2, why)
	default:
		c.Impose(attest.H2, h2+"; the workspace holds no .gemini and the host no "+systemConfigDir)
	}
	c.Impose(attest.H3, kind.EnvRow(in.env, callerKeys))
	c.Impose(attest.H4, in.credHow)
	switch {
	case len(in.servers) > 0 && w.CatalogueCopy == "":
		programs := "none"
		if len(spec.AllowProgs) > 0 {
			programs = strings.Join(spec.AllowProgs, ", ")
		}
		c.Impose(attest.H5, "--allowed-mcp-server-names "+ServerName+" and one server, metaharness (mcp-serve with the default verbs "+strings.Join(mcpserve.Verbs(), ", ")+"; programs behind its run entry: "+programs+"); tools.core registers its tools alone")
	case len(in.servers) > 0:
		c.Impose(attest.H5, "--allowed-mcp-server-names "+ServerName+" and one server, metaharness (mcp-serve --catalogue "+w.CatalogueCopy+"); tools.core registers its entries alone")
	default:
		c.Impose(attest.H5, "--allowed-mcp-server-names "+ServerName+" and no server of that name: no MCP server; tools.core registers the native tools "+strings.Join(nativeTools, ", "))
	}
	if spec.Credentials == kind.CredentialsLoopback {
		c.Impose(attest.H6, "no credential file in the child's config home; the token stays with the loopback proxy")
	} else {
		c.Impose(attest.H6, "no credential file is copied into the child's config home")
	}
	h8 := "the BeforeTool hook asks the run about every call but the owned server's (decided where mcp-serve performs them); Gemini CLI runs a call whose hook crashed, printed no JSON or timed out, so the run's admin policy (--admin-policy, the highest tier) denies every native call that does not carry the run's marker, which only the hook adds to a call the run allowed (a call arriving with it is denied as forged); hooksConfig enabled, no flag skips hooks"
	if !in.confined && len(obs.SystemPolicies) > 0 {
		c.Unavailable(attest.H8, "unconfined, and the host holds admin policies ("+strings.Join(obs.SystemPolicies, ", ")+"): Gemini CLI then ignores the run's --admin-policy, so a call whose hook failed is not denied by it")
	} else {
		c.Impose(attest.H8, h8)
	}
	attest.AttestWorkdir(attest.Workdir{
		Kind: "gemini", Memory: memory, Dir: in.cwd, Operator: spec.Cwd != "", ScratchCwd: spec.ScratchCwd,
		Walk: attest.MemoryWalk{From: in.cwd, Above: w.MemoryAbove, AtRoot: w.MemoryAtRoot},
	}, c)
	kind.ClaimGate(c, spec, w)
	kind.ClaimWire(c, w, "Gemini CLI")
	if len(in.mentions) > 0 {
		c.Ambient("the task mentions " + strings.Join(in.mentions, ", ") + ": each @ reaches Gemini CLI escaped (\\@), so it is not read into the task, and any read of it is a tool call a seam decides")
	}
	c.Ambient("Gemini CLI writes the session (its conversation) to " + filepath.Join(in.configHome, ".gemini", "tmp") + " and an API error's report to $TMPDIR, both in the scratch tree; the allow marker a native call carried is in the former")
	if spec.Decisions == frame.ModeObserve {
		c.Ambient("observe mode: every call is allowed, and the hook marks each, so the admin policy lets each run")
	}
	return c
}

// present names the Gemini CLI configuration the observation found.
func present(obs observed, cwd string) []string {
	var out []string
	if obs.WorkspaceConfig {
		out = append(out, filepath.Join(cwd, ".gemini"))
	}
	if obs.SystemConfig {
		out = append(out, systemConfigDir)
	}
	return out
}
