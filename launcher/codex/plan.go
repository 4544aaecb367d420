package codex

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
)

// ContextChannel is how declared context files reach the model: the
// thread's developerInstructions, which app-server sends as the first text
// of the developer message of every request, and which the run's transcript
// (the thread/start request) shows.
const ContextChannel = "developer-instructions"

// Provider ids of the scratch config: one per way the child reaches a
// model. None is a built-in codex provider name, which codex refuses to
// redefine.
const (
	ProviderID         = "metaharness_loopback"
	apiKeyProviderID   = "metaharness_api_key"
	endpointProviderID = "metaharness_endpoint"
)

// KeyEnv holds the placeholder under --credentials loopback; the provider
// entry names it as its env_key, so codex sends it as the bearer token.
const KeyEnv = "METAHARNESS_LOOPBACK_KEY"

// vendorOnly are the variables codex holds and the commands it runs must
// not inherit: its credential for the proxy (a command would post its own
// model request with it) and its own key under --credentials api-key.
var vendorOnly = []string{KeyEnv, "OPENAI_API_KEY"}

// openaiRoot is where a provider entry points without the loopback proxy or
// --model-endpoint; codex appends /responses to <root>/v1.
const openaiRoot = "https://api.openai.com"

// streamRetries is the provider's stream_max_retries: a cut stream, an idle
// one or a 401 is sent again once, never silently many times (the default
// is five, and thirty requests for a 500).
const streamRetries = 1

// sessionFile is the scratch file holding what the session sends before the
// task runs, so that a C1 vector pins the conversation's opening too.
const sessionFile = "codex-session.json"

// Opening is what the session sends app-server, in order: initialize, then
// thread/start, then turn/start with the task (its threadId filled in when
// the thread exists).
type Opening struct {
	Initialize  InitializeParams  `json:"initialize"`
	ThreadStart ThreadStartParams `json:"thread_start"`
	TurnStart   TurnStartParams   `json:"turn_start"`
}

// InitializeParams are initialize's params.
type InitializeParams struct {
	ClientInfo   ClientInfo         `json:"clientInfo"`
	Capabilities ClientCapabilities `json:"capabilities"`
}

// ClientInfo names the client; codex sends its name upstream as the
// originator header.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ClientCapabilities: experimentalApi is what dynamicTools need; the notifications
// opted out of carry nothing under a custom provider.
type ClientCapabilities struct {
	ExperimentalAPI           bool     `json:"experimentalApi"`
	OptOutNotificationMethods []string `json:"optOutNotificationMethods"`
}

// ThreadStartParams are thread/start's params.
type ThreadStartParams struct {
	Cwd                   string        `json:"cwd"`
	Model                 string        `json:"model"`
	ApprovalPolicy        string        `json:"approvalPolicy"`
	Sandbox               string        `json:"sandbox"`
	Ephemeral             bool          `json:"ephemeral"`
	DynamicTools          []DynamicTool `json:"dynamicTools"`
	DeveloperInstructions *string       `json:"developerInstructions,omitempty"`
}

// DynamicTool is one catalogue entry declared at thread/start.
type DynamicTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// TurnStartParams are turn/start's params.
type TurnStartParams struct {
	ThreadID string      `json:"threadId,omitempty"`
	Input    []UserInput `json:"input"`
}

// UserInput is one item of a user message (turn/start, turn/steer).
type UserInput struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Plan builds the codex launch for spec in world, reading nothing else:
// app-server on the native binary with a constructed environment, a scratch
// CODEX_HOME whose config.toml leaves the model only the run's tools (or,
// with no catalogue, codex's shell and patch tools behind approvals), the
// model catalog override for a bundled slug, and the conversation's
// opening.
func Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	if err := refuseFlags(spec); err != nil {
		return nil, err
	}
	if spec.Cwd == "" && len(w.MemoryAbove) > 0 {
		return nil, exit.Refuse(kind.RefuseMemoryFileAboveCWD,
			"memory file(s) %s sit above the scratch working directory, where codex's project-doc walk can reach them; remove them or run from a scratch root with none above it",
			strings.Join(w.MemoryAbove, ", "))
	}
	var obs observed
	if len(w.Vendor) > 0 {
		if err := json.Unmarshal(w.Vendor, &obs); err != nil {
			return nil, fmt.Errorf("internal: the codex observation does not read back: %w", err)
		}
	}
	model := spec.Model
	if model == "" {
		model = obs.DefaultModel
	}
	if model == "" {
		return nil, fmt.Errorf("internal: no model to plan: --model is empty and nothing was observed")
	}
	native := w.CatalogueCopy == ""

	cwd := filepath.Join(w.Scratch, "work")
	if spec.Cwd != "" {
		cwd = spec.Cwd
	}
	codexHome := filepath.Join(w.Scratch, "codex-home")
	catalogPath := filepath.Join(w.Scratch, "model-catalog.json")

	env := map[string]string{
		"PATH":       kind.ChildPath(w.Env["HOME"]),
		"HOME":       filepath.Join(w.Scratch, "home"),
		"CODEX_HOME": codexHome,
		"TMPDIR":     filepath.Join(w.Scratch, "tmp"),
	}
	provider, credHow, err := providerFor(spec, w, env)
	if err != nil {
		return nil, err
	}

	sandbox := "read-only"
	if native || spec.Cwd != "" {
		sandbox = "workspace-write"
	}
	approval := "never"
	if native {
		approval = "untrusted"
	}
	files := []kind.File{}
	catalog := ""
	if len(obs.Model) > 0 {
		override, err := catalogOverride(model, obs.Model, native)
		if err != nil {
			return nil, err
		}
		catalog = catalogPath
		files = append(files, kind.File{Path: catalogPath, Mode: 0o600, Content: override})
	}
	// The config file no longer takes "untrusted"; the thread does, and
	// the thread's policy is the one in force.
	configApproval := approval
	if native {
		configApproval = "on-request"
	}
	config := configTOML(spec, model, provider, configApproval, sandbox, catalog, native)
	files = append([]kind.File{{Path: filepath.Join(codexHome, "config.toml"), Mode: 0o600, Content: config}}, files...)

	open := Opening{
		Initialize: InitializeParams{
			ClientInfo: ClientInfo{Name: "metaharness", Version: "1"},
			Capabilities: ClientCapabilities{ExperimentalAPI: true, OptOutNotificationMethods: []string{
				"account/rateLimits/updated", "mcpServer/startupStatus/updated", "remoteControl/status/changed",
			}},
		},
		ThreadStart: ThreadStartParams{
			Cwd: cwd, Model: model, ApprovalPolicy: approval, Sandbox: sandbox, Ephemeral: true,
			DynamicTools: []DynamicTool{},
		},
		TurnStart: TurnStartParams{Input: []UserInput{{Type: "text", Text: spec.Prompt}}},
	}
	for _, d := range w.CatalogueDecls {
		open.ThreadStart.DynamicTools = append(open.ThreadStart.DynamicTools, DynamicTool{Type: "function", Name: d.Name, Description: d.Summary, InputSchema: d.Input})
	}
	if w.Context != "" {
		ctx := w.Context
		open.ThreadStart.DeveloperInstructions = &ctx
	}
	b, err := json.MarshalIndent(open, "", "  ")
	if err != nil {
		return nil, err
	}
	files = append(files, kind.File{Path: filepath.Join(w.Scratch, sessionFile), Mode: 0o600, Content: string(b) + "\n"})

	conf := kind.Confinement(spec, w, []string{codexHome}, installDir(w.Binary))
	files = append(files, kind.LoginShellSandbox(conf, w, env["HOME"], vendorOnly)...)
	claim := attestation(spec, w, cwd, codexHome, credHow, native, env)
	kind.AttestConfinement(claim, conf, spec, w)
	return &kind.Plan{
		Program:     w.Binary,
		Args:        []string{"app-server", "--strict-config"},
		Env:         kind.SortedEnv(env),
		Dir:         cwd,
		StdinPipe:   true,
		Dirs:        []string{codexHome},
		Files:       files,
		Attestation: claim.Attestation(),
		MCPServers:  []string{},
		Confinement: conf,
	}, nil
}

// installDir is what the native binary needs to see of its install: the
// platform directory npm unpacks (…/vendor/<triple>, whose codex-resources
// holds bwrap and codex-path rg), or the binary's own directory.
func installDir(binary string) string {
	bin := filepath.Dir(binary)
	if filepath.Base(bin) == "bin" && filepath.Base(filepath.Dir(filepath.Dir(bin))) == "vendor" {
		return filepath.Dir(bin)
	}
	return bin
}

// refuseFlags names the run flags app-server has no knob for.
func refuseFlags(spec *kind.Spec) error {
	switch {
	case spec.MaxTurns > 0:
		return exit.Refuse(RefuseOptionUnsupported, "--max-turns %d on codex: app-server has no bound on the model requests of a turn, and stopping the child after N would be a different thing; drop --max-turns (interrupt or halt the run instead)", spec.MaxTurns)
	case spec.MaxBudgetUSD != "":
		return exit.Refuse(RefuseOptionUnsupported, "--max-budget-usd %s on codex: app-server prices nothing, so no budget can be held; drop --max-budget-usd", spec.MaxBudgetUSD)
	case spec.ToolSurface == kind.SurfaceOwned && spec.Catalogue == "":
		return exit.Refuse(kind.RefuseToolSurfaceUnsupported, "--tool-surface owned on codex without --catalogue: codex is given owned tools only as a catalogue's entries (app-server dynamic tools); add --catalogue FILE, or drop the flag for codex's native tools")
	case len(spec.AllowProgs) > 0 && spec.Catalogue == "":
		return exit.Refuse(kind.RefuseToolSurfaceUnsupported, "--allow-program %s on codex without --catalogue: declared programs are started by the default verbs' run entry, and codex is given owned tools only as a catalogue's entries (app-server dynamic tools), which publish no run entry; drop --allow-program (codex's own shell command is decided as shell)", spec.AllowProgs[0])
	case spec.ModelEndpoint != "" && spec.Credentials == kind.CredentialsAPIKey:
		return exit.Refuse(kind.RefuseEndpointWithCredential,
			"--model-endpoint with --credentials api-key would send OPENAI_API_KEY to %s; use --credentials loopback (the proxy forwards to the endpoint) or --credentials none", spec.ModelEndpoint)
	}
	return nil
}

// provider is the one [model_providers.ID] entry of the scratch config.
type provider struct {
	id, baseURL, envKey string
	// headers go with every request (the run header, when the child's
	// credential is its own and the proxy still stands in front).
	headers map[string]string
}

// providerFor picks the provider entry for the run's credentials, puts what
// it needs into the child's environment, and says how for H4.
func providerFor(spec *kind.Spec, w *kind.World, env map[string]string) (provider, string, error) {
	root := openaiRoot
	if spec.ModelEndpoint != "" {
		root = spec.ModelEndpoint
	}
	switch spec.Credentials {
	case kind.CredentialsLoopback:
		if w.LoopbackURL == "" || len(w.LoopbackEnv) == 0 {
			return provider{}, "", fmt.Errorf("internal: --credentials loopback planned without a started proxy")
		}
		for k, v := range w.LoopbackEnv {
			env[k] = v
		}
		return provider{ProviderID, w.LoopbackURL, KeyEnv, nil}, spec.Credentials.Held(KeyEnv), nil
	case kind.CredentialsAPIKey:
		key, ok := w.Env["OPENAI_API_KEY"]
		if !ok || key == "" {
			return provider{}, "", exit.Refuse(kind.RefuseAPIKeyMissing, "--credentials api-key reads OPENAI_API_KEY from metaharness's environment, and it is not set; export it, or use --credentials loopback")
		}
		env["OPENAI_API_KEY"] = key
		p, how := proxiedProvider(provider{apiKeyProviderID, root, "OPENAI_API_KEY", nil}, w, env)
		return p, spec.Credentials.Held("OPENAI_API_KEY") + how, nil
	case kind.CredentialsNone:
		p, how := proxiedProvider(provider{endpointProviderID, root, "", nil}, w, env)
		return p, spec.Credentials.Held("") + ": its provider entry names no env_key, so no authorization header is sent" + how, nil
	}
	return provider{}, "", fmt.Errorf("internal: --credentials %s reached the codex plan; CheckSpec refuses it", spec.Credentials)
}

// proxiedProvider points p at the run's loopback proxy when it has one in
// front of a child whose credential is its own: the proxy's base URL, the
// run header, the egress gate's variables.
func proxiedProvider(p provider, w *kind.World, env map[string]string) (provider, string) {
	if w.LoopbackURL == "" || w.RunHeader == "" {
		return p, ""
	}
	maps.Copy(env, w.LoopbackEnv)
	p.baseURL, p.headers = w.LoopbackURL, map[string]string{loopback.RunHeader: w.RunHeader}
	return p, "; its requests pass through the loopback proxy, which reads the model's answers"
}

// providerTable is a [model_providers.ID] entry: the Responses wire at
// <baseURL>/v1, the key from envKey ("" sends none), bounded retries.
func providerTable(t *toml, p provider) {
	kvs := []kv{
		{"name", p.id},
		{"base_url", strings.TrimSuffix(p.baseURL, "/") + "/v1"},
		{"wire_api", "responses"},
	}
	if p.envKey != "" {
		kvs = append(kvs, kv{"env_key", p.envKey})
	}
	if len(p.headers) > 0 {
		kvs = append(kvs, kv{"http_headers", p.headers})
	}
	kvs = append(kvs, kv{"request_max_retries", 0}, kv{"stream_max_retries", streamRetries}, kv{"stream_idle_timeout_ms", 300000})
	t.table("model_providers."+p.id, kvs...)
}

// configTOML is the scratch CODEX_HOME/config.toml. Each switch below was
// measured on the pinned codex (reference notes, codex-app-server.md §2–§6):
// together they leave the model only the dynamic tools (or, natively, the
// shell and apply_patch), send nothing but POST …/responses, and never
// retry without bound.
func configTOML(spec *kind.Spec, model string, p provider, approval, sandbox, catalog string, native bool) string {
	var t toml
	t.comment("Written by metaharness for one governed run; removed with the scratch tree.\nTop-level keys come first: a key written after a [table] header belongs to that table.")
	top := []kv{
		{"model", model},
		{"model_provider", p.id},
		{"approval_policy", approval},
		{"sandbox_mode", sandbox},
		{"web_search", "disabled"},
		{"check_for_update_on_startup", false},
	}
	if catalog != "" {
		top = append(top, kv{"model_catalog_json", catalog})
	}
	if spec.Effort != "" {
		top = append(top, kv{"model_reasoning_effort", spec.Effort})
	}
	t.keys(top...)
	providerTable(&t, p)
	if sandbox == "workspace-write" {
		// workspace-write also grants /tmp and $TMPDIR unless excluded.
		t.table("sandbox_workspace_write", kv{"network_access", false}, kv{"exclude_slash_tmp", true}, kv{"exclude_tmpdir_env_var", true})
	}
	features := []kv{}
	if !native {
		features = append(features, kv{"shell_tool", false})
	}
	// plugins=false is the switch that stops the lookups of github.com and
	// chatgpt.com.
	features = append(features, kv{"view_image", false}, kv{"goals", false}, kv{"plugins", false}, kv{"apps", false}, kv{"unbounded_connection_retries", false})
	t.table("features", features...)
	t.table("agents", kv{"enabled", false})
	t.table("tools.experimental_request_user_input", kv{"enabled", false})
	t.table("skills.bundled", kv{"enabled", false})
	t.table("analytics", kv{"enabled", false})
	return t.String()
}

func attestation(spec *kind.Spec, w *kind.World, cwd, codexHome, credHow string, native bool, env map[string]string) *attest.Claim {
	c := attest.NewClaim(string(spec.Hermetic), string(spec.Decisions))
	c.Impose(attest.H1a, "CODEX_HOME="+codexHome+", a config home metaharness created holding only its config.toml, with [features] plugins and apps off and bundled skills off; no plugin is declared")
	c.Impose(attest.H1b, "the scratch config.toml sets no personality, so codex keeps the model's default instructions")
	c.Unavailable(attest.H2, "codex also reads the system layer /etc/codex/config.toml beside the scratch CODEX_HOME, and no app-server flag excludes it (project layers need a trust entry, which the scratch config has none of)")
	c.Impose(attest.H3, kind.EnvRow(env, nil))
	c.Impose(attest.H4, credHow)
	if native {
		c.Impose(attest.H5, "the scratch config.toml declares no [mcp_servers]; the model has codex's own tools, each command and patch asked of the run")
	} else {
		c.Impose(attest.H5, "the scratch config.toml declares no [mcp_servers]; the catalogue's entries reach the model as app-server dynamic tools, answered by the run itself")
	}
	if spec.Credentials == kind.CredentialsLoopback {
		c.Impose(attest.H6, "no auth.json in the scratch CODEX_HOME; the token stays with the loopback proxy")
	} else {
		c.Impose(attest.H6, "no credential file is copied into the scratch CODEX_HOME")
	}
	c.Impose(attest.H8, "app-server runs with --strict-config and no flag that skips hooks or customizations")
	attest.AttestWorkdir(attest.Workdir{
		Kind: "codex", Memory: memory, Dir: cwd, Operator: spec.Cwd != "", ScratchCwd: spec.ScratchCwd,
		Walk: attest.MemoryWalk{From: cwd, Above: w.MemoryAbove, AtRoot: w.MemoryAtRoot},
	}, c)
	// H7 states the write grant in whichever state AttestWorkdir put it.
	if native {
		c.Add(attest.H7, fmt.Sprintf("; native tools: codex's sandbox is workspace-write on %s (/tmp and $TMPDIR excluded, no network), and a command or patch the run accepts through an approval runs outside that sandbox", cwd))
	} else if spec.Cwd != "" {
		c.Add(attest.H7, fmt.Sprintf("; codex's sandbox is workspace-write on %s (/tmp and $TMPDIR excluded); with only the catalogue's tools the model has no shell, and the catalogue's writes are performed by metaharness beneath the cwd", cwd))
	}
	kind.ClaimGate(c, spec, w)
	kind.ClaimWire(c, w, "codex")
	if spec.Decisions == frame.ModeObserve {
		c.Ambient("observe mode: every call is allowed; an approved codex command runs outside codex's sandbox")
	}
	return c
}
