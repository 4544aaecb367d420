package b10x

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/b10x/hook"
	"github.com/metaharness/metaharness/launcher/kind"
)

// KeyEnv is the variable --credentials api-key reads by name and hands the
// loop under its own name.
const KeyEnv = "OPENAI_API_KEY"

// BusEnv are the variables --api-key-secret adds, each when the caller has
// it: the loop opens the OS secret store over the session bus they name
// (libdbus falls back to $XDG_RUNTIME_DIR/bus when the address is unset).
var BusEnv = []string{"DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"}

// ToolchainEnv are passed by name, when the caller has them, for a declared
// --toolchain.
var ToolchainEnv = []string{"RUSTUP_HOME", "CARGO_HOME"}

// Wires are the loop's provider wires (--model-wire, passed as --wire).
var Wires = []string{"openai-responses", "anthropic-messages"}

// scopes are the write scopes of --write-scope GLOB=SCOPE.
var scopes = []string{"allowed", "partial-only", "denied"}

// workspaceName is what the embedded substrate accepts as the workspace's
// name: ASCII letters, digits, _ and -, not starting with -.
var workspaceName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`) })

// envName is a portable environment variable name.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// CheckSpec is the b10x kind's own refusals, pure: what the loop needs that
// the spec lacks, flags the loop's launch cannot carry, and combinations
// that cannot mean what they say. The first problem found is reported.
func CheckSpec(s *kind.Spec) error {
	b := flagsOf(s)
	switch {
	case s.ModelEndpoint == "":
		return exit.Refuse(RefuseModelEndpointRequired, "run b10x needs --model-endpoint: the loop is a direct provider and dials the model API itself; pass the API's root URL, for example --model-endpoint https://api.openai.com")
	case s.Model == "":
		return exit.Refuse(RefuseModelRequired, "run b10x needs --model: the loop names the model in every request and has no default; pass --model NAME")
	case s.Effort != "":
		return exit.Refuse(RefuseEffortUnsupported, "--effort %s on b10x: the loop's launch carries no effort level, and its own --reasoning-effort takes values metaharness cannot vouch for; drop --effort", s.Effort)
	case s.MaxBudgetUSD != "":
		return exit.Refuse(RefuseMaxBudgetUnsupported, "--max-budget-usd %s on b10x: the loop budgets in micro-units against its own rate card, which metaharness does not translate; drop it (pass --prices to have each request's cost recorded)", s.MaxBudgetUSD)
	case b.APIKeySecret != "" && s.Credentials != kind.CredentialsAPIKey:
		return exit.Refuse(RefuseAPIKeySecretNeedsAPIKey, "--api-key-secret %s names where the loop reads its API key, and --credentials is %s; add --credentials api-key", b.APIKeySecret, s.Credentials)
	case b.SubscriptionTokenFile != "" && b.SubscriptionTokenEnv != "":
		return exit.Refuse(RefuseSubscriptionTokenConflict, "--subscription-token-file %s and --subscription-token-env %s both name the loop's token; keep one", b.SubscriptionTokenFile, b.SubscriptionTokenEnv)
	case b.SubscriptionTokenPointer != "" && b.SubscriptionTokenFile == "" && b.SubscriptionTokenEnv == "":
		return exit.Refuse(RefuseSubscriptionTokenPointerNeedsSource, "--subscription-token-pointer %s points into a token document, and none is named; add --subscription-token-file or --subscription-token-env", b.SubscriptionTokenPointer)
	case (b.SubscriptionTokenFile != "" || b.SubscriptionTokenEnv != "") && s.Credentials == kind.CredentialsAPIKey:
		return exit.Refuse(RefuseSubscriptionTokenWithAPIKey, "a subscription token and --credentials api-key both name the loop's credential, and it takes one; drop one of them")
	case b.SubscriptionTokenEnv != "" && (!envName().MatchString(b.SubscriptionTokenEnv) || b.SubscriptionTokenEnv == "PATH" || b.SubscriptionTokenEnv == "XDG_CONFIG_HOME"):
		return exit.Refuse(RefuseSubscriptionTokenEnvInvalid, "--subscription-token-env %q is not a variable metaharness can hand the loop (a name of letters, digits and _, not PATH or XDG_CONFIG_HOME); name the variable that holds the token", b.SubscriptionTokenEnv)
	case b.Substrate != "" && b.SubstrateEmbedded:
		return exit.Refuse(RefuseSubstrateConflict, "--substrate %s and --substrate-embedded name two confinements, and the loop takes one; keep one", b.Substrate)
	case len(s.AllowProgs) > 0 && b.Substrate == "" && !b.SubstrateEmbedded:
		return exit.Refuse(RefuseAllowProgramNeedsSubstrate, "--allow-program %s on b10x declares what a confined run may start, and no confinement is named; add --substrate SOCKET or --substrate-embedded, or drop it", s.AllowProgs[0])
	case b.Toolchain != "" && b.Substrate != "":
		return exit.Refuse(RefuseToolchainWithSubstrateSocket, "--toolchain %s beside --substrate %s: a socket-backed substrate cannot receive this process's declared toolchain roots, and the loop refuses it; use --substrate-embedded or drop --toolchain", b.Toolchain, b.Substrate)
	case b.ModelWire != "" && !slices.Contains(Wires, b.ModelWire):
		return exit.Refuse(RefuseModelWireUnknown, "--model-wire %s: the loop speaks %s; name one of them", b.ModelWire, strings.Join(Wires, " or "))
	}
	for _, ws := range b.WriteScope {
		glob, scope, ok := strings.Cut(ws, "=")
		if !ok || glob == "" || !slices.Contains(scopes, scope) {
			return exit.Refuse(RefuseWriteScopeInvalid, "--write-scope %q is not GLOB=SCOPE with SCOPE one of %s; for example --write-scope 'src/**=allowed'", ws, strings.Join(scopes, ", "))
		}
	}
	if b.SubstrateEmbedded && s.Cwd != "" && !workspaceName().MatchString(filepath.Base(s.Cwd)) {
		return exit.Refuse(RefuseSubstrateWorkspaceName, "--substrate-embedded adopts the workspace by its directory's name, and %s's name %q is not one (ASCII letters, digits, _ and -, not starting with -); rename the directory or run without --cwd", s.Cwd, filepath.Base(s.Cwd))
	}
	return nil
}

// Plan builds the b10x launch for spec in world (reference notes b10x-loop
// §2): the argv in the order the reference launcher writes it, --input
// last; an environment of PATH and XDG_CONFIG_HOME only, plus what a
// declared credential or toolchain adds. The --context files are handed
// over as copies of the bytes metaharness read and digested, in the
// scratch tree. It reads nothing else.
func Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	if err := CheckSpec(spec); err != nil {
		return nil, err
	}
	b := flagsOf(spec)
	cwd := filepath.Join(w.Scratch, "work")
	if spec.Cwd != "" {
		cwd = spec.Cwd
	}
	config := filepath.Join(w.Scratch, "config")
	env := map[string]string{"PATH": kind.ChildPath(w.Env["HOME"]), "XDG_CONFIG_HOME": config}

	args := []string{"run", "--base-url", strings.TrimSuffix(spec.ModelEndpoint, "/") + "/v1", "--model", spec.Model,
		"--workspace", cwd, "--execution-path", "metaharness", "--json", "--no-session", "--approve-up-to", "high"}
	// A value that starts with "-" is written in the = form, which is the
	// only one the loop's parser reads as a value.
	opt := func(flag, v string) {
		if strings.HasPrefix(v, "-") {
			args = append(args, flag+"="+v)
			return
		}
		args = append(args, flag, v)
	}
	var files []kind.File
	var callerHooks []HookDecl
	switch {
	case decides(spec):
		merged, caller, err := mergedHooks(w)
		if err != nil {
			return nil, err
		}
		callerHooks = caller
		files = append(files, kind.File{Path: hooksPath(w), Mode: 0o400, Content: merged})
		opt("--hooks", hooksPath(w))
	case b.Hooks != "":
		opt("--hooks", b.Hooks)
	}
	cred, err := credential(spec, w, env, opt)
	if err != nil {
		return nil, err
	}
	if b.ModelWire != "" {
		opt("--wire", b.ModelWire)
	}
	if b.Toolchain != "" {
		opt("--toolchain", b.Toolchain)
		for _, k := range ToolchainEnv {
			if v, ok := w.Env[k]; ok {
				env[k] = v
			}
		}
	}
	if b.Driver != "" {
		opt("--driver", b.Driver)
	}
	for _, ws := range b.WriteScope {
		opt("--write-scope", ws)
	}
	for _, d := range b.ProcessWriteSubtree {
		opt("--process-write-subtree", d)
	}
	if b.ScopeAnnounce == "silent" {
		args = append(args, "--scope-announce", "silent")
	}
	dirs := []string{config}
	for i, f := range w.ContextFiles {
		p := filepath.Join(w.Scratch, "context", strconv.Itoa(i), filepath.FromSlash(f.Path))
		dirs = appendParents(dirs, w.Scratch, filepath.Dir(p))
		files = append(files, kind.File{Path: p, Mode: 0o400, Content: f.Text})
		opt("--context", p)
	}
	if b.Prices != "" {
		opt("--prices", b.Prices)
	}
	switch {
	case b.Substrate != "":
		opt("--substrate", b.Substrate)
	case b.SubstrateEmbedded:
		args = append(args, "--substrate-embedded")
	}
	if b.CgroupRoot != "" {
		opt("--cgroup-root", b.CgroupRoot)
	}
	for _, p := range spec.AllowProgs {
		opt("--allow-program", p)
	}
	if spec.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(spec.MaxTurns))
	}
	opt("--input", spec.Prompt)

	// The loop writes its XDG_CONFIG_HOME and, when it confines its own
	// tools, the cgroups under --cgroup-root.
	writes := []string{config}
	if b.CgroupRoot != "" {
		writes = append(writes, b.CgroupRoot)
	}
	named := reads(spec, w, callerHooks)
	conf := kind.Confinement(spec, w, writes, named...)
	if conf != nil && b.Toolchain != "" && w.Env["CARGO_HOME"] != "" {
		// The toolchain's roots are bound back whole; cargo keeps the
		// caller's registry tokens in one of them.
		for _, f := range []string{"credentials.toml", "credentials"} {
			conf.Covered = append(conf.Covered, filepath.Join(w.Env["CARGO_HOME"], f))
		}
	}
	claim := attestation(spec, w, cwd, config, env, cred, callerHooks)
	kind.AttestConfinement(claim, conf, spec, w)
	if conf != nil {
		boundBack(claim, named, flagsOf(spec).APIKeySecret != "" && (env["DBUS_SESSION_BUS_ADDRESS"] != "" || env["XDG_RUNTIME_DIR"] != ""), BusSockets(w.Env))
	}
	return &kind.Plan{
		Program:     w.Binary,
		Args:        args,
		Env:         kind.SortedEnv(env),
		Dir:         cwd,
		Dirs:        dirs,
		Files:       files,
		Attestation: claim.Attestation(),
		MCPServers:  []string{},
		Confinement: conf,
		// The before-call hook asks, under frame and ask.
		DecisionChannel: decides(spec),
	}, nil
}

// reads are what the confined loop must see outside its workspace and the
// scratch tree, each bound back read-only over the mount view that hides
// the caller's HOME, /run and /tmp: the files the launch names (hooks, rate
// card, driver, token file, substrate socket), a declared toolchain's
// roots, and under --api-key-secret the session bus socket (connecting to a
// socket needs no write access to its mount). Nothing else of
// XDG_RUNTIME_DIR is bound: agent sockets live there too. Under frame and
// ask the loop reads the merged hooks file in the scratch tree instead of
// the caller's, and the program of each of the caller's hooks, named by an
// absolute path, is bound back so that the loop can start it (what that
// program reads in turn is the caller's to name).
func reads(spec *kind.Spec, w *kind.World, callerHooks []HookDecl) []string {
	b := flagsOf(spec)
	var out []string
	add := func(p string) {
		if filepath.IsAbs(p) && !slices.Contains(out, filepath.Clean(p)) {
			out = append(out, filepath.Clean(p))
		}
	}
	if !decides(spec) {
		add(b.Hooks)
	}
	for _, h := range callerHooks {
		add(h.Command[0])
	}
	for _, p := range []string{b.Prices, b.Driver, b.SubscriptionTokenFile, b.Substrate} {
		add(p)
	}
	if b.Toolchain != "" {
		for _, k := range ToolchainEnv {
			add(w.Env[k])
		}
	}
	if b.APIKeySecret != "" {
		for _, p := range BusSockets(w.Env) {
			add(p)
		}
	}
	return out
}

// boundBack says on h6 what the mount view lets through besides: the paths
// the launch names, bound back read-only; under --api-key-secret the bus,
// which reaches every service on the caller's session bus, the whole
// secret store among them.
func boundBack(c *attest.Claim, named []string, bus bool, sockets []string) {
	var how []string
	for _, p := range named {
		if !slices.Contains(sockets, p) {
			how = append(how, p)
		}
	}
	if len(how) > 0 {
		how = []string{"bound back read-only as the launch names them: " + strings.Join(how, ", ")}
	}
	if bus {
		b := "reachable for --api-key-secret: the caller's session bus at an address that names no file (abstract or TCP), which no mount view hides"
		if len(sockets) > 0 {
			b = "bound back read-only for --api-key-secret: the session bus socket " + strings.Join(sockets, ", ")
		}
		how = append(how, b+", through which the loop and every program it starts can ask any service on the caller's session bus, the OS secret store for any item it holds, not only the one named")
	}
	if len(how) > 0 {
		c.Enforce(attest.H6, strings.Join(how, "; "))
	}
}

// BusSockets are the session bus sockets a client with env would connect
// to: each unix:path= of DBUS_SESSION_BUS_ADDRESS, else libdbus's fallback
// $XDG_RUNTIME_DIR/bus. An abstract address names no file (and b10x gets no
// network namespace, so it stays reachable).
func BusSockets(env map[string]string) []string {
	addr := env["DBUS_SESSION_BUS_ADDRESS"]
	if addr == "" {
		if d := env["XDG_RUNTIME_DIR"]; d != "" {
			return []string{filepath.Join(d, "bus")}
		}
		return nil
	}
	var out []string
	for _, entry := range strings.Split(addr, ";") {
		kv, ok := strings.CutPrefix(entry, "unix:")
		if !ok {
			continue
		}
		for _, pair := range strings.Split(kv, ",") {
			if v, ok := strings.CutPrefix(pair, "path="); ok {
				if p, err := url.PathUnescape(v); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// credential adds the declared credential to the argv and the environment
// and says how in words, for H4.
func credential(spec *kind.Spec, w *kind.World, env map[string]string, opt func(flag, v string)) (string, error) {
	b := flagsOf(spec)
	switch {
	case b.APIKeySecret != "":
		opt("--api-key-secret", b.APIKeySecret)
		var added []string
		for _, k := range BusEnv {
			if v, ok := w.Env[k]; ok {
				env[k] = v
				added = append(added, k)
			}
		}
		return fmt.Sprintf("--api-key-secret %s: the loop reads its key from the OS secret store itself; metaharness reads and forwards no key variable, and hands the loop only %s to reach the store", b.APIKeySecret, orNone(added)), nil
	case spec.Credentials == kind.CredentialsAPIKey:
		key := w.Env[KeyEnv]
		if key == "" {
			return "", exit.Refuse(kind.RefuseAPIKeyMissing, "--credentials api-key on b10x reads %s from metaharness's environment, and it is not set; export it, or name the secret store's item with --api-key-secret NAME", KeyEnv)
		}
		env[KeyEnv] = key
		opt("--api-key-env", KeyEnv)
		return spec.Credentials.Held(KeyEnv) + "; the loop reads it by name (--api-key-env)", nil
	case b.SubscriptionTokenFile != "":
		opt("--oauth-token-file", b.SubscriptionTokenFile)
		if b.SubscriptionTokenPointer != "" {
			opt("--oauth-token-pointer", b.SubscriptionTokenPointer)
		}
		return "the loop reads a subscription token from " + b.SubscriptionTokenFile + " itself (--oauth-token-file); metaharness never opens it", nil
	case b.SubscriptionTokenEnv != "":
		v, ok := w.Env[b.SubscriptionTokenEnv]
		if !ok || v == "" {
			return "", exit.Refuse(RefuseSubscriptionTokenMissing, "--subscription-token-env %s names a variable that is not set in metaharness's environment; export it, or name the token's file with --subscription-token-file", b.SubscriptionTokenEnv)
		}
		env[b.SubscriptionTokenEnv] = v
		opt("--oauth-token-env", b.SubscriptionTokenEnv)
		if b.SubscriptionTokenPointer != "" {
			opt("--oauth-token-pointer", b.SubscriptionTokenPointer)
		}
		return b.SubscriptionTokenEnv + " is in the child's environment because --subscription-token-env named it; the loop reads its subscription token from it (--oauth-token-env)", nil
	}
	return kind.CredentialsNone.Held("") + ": the loop sends no auth header", nil
}

func attestation(spec *kind.Spec, w *kind.World, cwd, config string, env map[string]string, credHow string, callerHooks []HookDecl) *attest.Claim {
	c := attest.NewClaim(string(spec.Hermetic), string(spec.Decisions))
	var names []string
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	c.Impose(attest.H1a, "a direct provider with no plugin directory declared: the loop loads no plugin, and XDG_CONFIG_HOME="+config+" is a directory metaharness created empty")
	c.Impose(attest.H1b, "a direct provider: the loop has no output style")
	c.Impose(attest.H2, "XDG_CONFIG_HOME="+config+" is empty and there is no HOME, so the loop reads no profile or setting of the operator's; --no-session files no session")
	c.Impose(attest.H3, "the environment is constructed: "+strings.Join(names, ", ")+"; nothing else is inherited")
	c.Impose(attest.H4, credHow)
	c.Impose(attest.H5, "no --mcp-profile: the loop connects to no MCP server")
	c.Impose(attest.H6, "no credential file is written or copied for the loop")
	given := flagsOf(spec).Hooks
	hooks := "no --hooks file is declared"
	switch {
	case decides(spec):
		hooks = "--hooks " + hooksPath(w) + ", which metaharness wrote, declares its own hook (" + hook.Verb + ") first at before-call for every tool, so every call the approver admits is decided by metaharness before it runs"
		if given != "" {
			hooks += fmt.Sprintf("; the caller's --hooks %s follows, its %d declaration(s) in their order", given, len(callerHooks))
		}
	case given != "":
		hooks = "the declared --hooks " + given + " is passed as given"
	}
	c.Impose(attest.H8, "--approve-up-to high and never --yes, so calls above the ceiling still reach the loop's approver; "+hooks)
	attest.AttestWorkdir(attest.Workdir{
		Kind: "b10x", Memory: memory, Dir: cwd, Operator: spec.Cwd != "", ScratchCwd: spec.ScratchCwd,
		Walk: attest.MemoryWalk{From: cwd, Above: w.MemoryAbove, AtRoot: w.MemoryAtRoot},
	}, c)
	c.Unavailable(attest.H12, "no egress gate: b10x is a direct provider that dials --model-endpoint itself, and only --credentials loopback, which the loop does not carry, puts the proxy between a child and the network")
	wire := "the wire is not seen: the loop dials its provider itself, past the loopback proxy, so nothing outside it reads what the model said"
	if decides(spec) {
		wire += "; each decision request is held to the loop's own record instead (answered once per call the record shows, with its name and arguments)"
		c.Ambient(string(spec.Decisions) + " mode: the loop's approver (--approve-up-to high) sees each call first, and metaharness decides, at its before-call hook, every call the approver admits")
	} else {
		c.Ambient("observe mode: the loop decides its own calls (--approve-up-to high); metaharness records them and decides none")
	}
	c.Unavailable(attest.H13, wire)
	if flagsOf(spec).APIKeySecret != "" {
		c.Ambient("the session bus: the loop opens the OS secret store over it to read its key; metaharness does not assert that the store opens under this floor, the loop's record says whether it did")
	}
	switch {
	case given != "" && decides(spec):
		c.Ambient("hooks file " + given + ": the caller's programs the loop runs at its call points, behind metaharness's hook at before-call")
	case given != "":
		c.Ambient("hooks file " + given + ": programs the loop runs at its call points")
	}
	return c
}

// appendParents adds dir and every directory between root and it to dirs,
// parents first, once each.
func appendParents(dirs []string, root, dir string) []string {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return dirs
	}
	p := root
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		p = filepath.Join(p, filepath.FromSlash(path.Clean(part)))
		if !slices.Contains(dirs, p) {
			dirs = append(dirs, p)
		}
	}
	return dirs
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "nothing (the caller has neither " + strings.Join(BusEnv, " nor ") + ")"
	}
	return strings.Join(xs, " and ")
}
