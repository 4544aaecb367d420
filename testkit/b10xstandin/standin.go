// Package b10xstandin is a scripted stand-in for the beyond10x loop,
// b10x-harness, which metaharness observes and which no registry these
// machines reach publishes. It exists for tests only: a test binary runs it
// when started under the name b10x-harness (Install, MainIfInvoked), so the
// metaharness binary never carries it.
//
// It reproduces what the reference notes record of the loop
// (reference/b10x-loop.md): `-V`/`--version` prints "b10x-harness X.Y.Z";
// `run` parses the flags of the 2026-09-18 argv contract as clap does (an
// unknown or malformed flag exits 1, with a refused record only when --json
// is in argv); a run without --base-url and --model is refused on stderr
// alone; an unreadable --context or --prices file, a --hooks file the
// loop's rules refuse, a missing key variable or credential file, or a
// secret the store does not hold is a refused record and exit 1; otherwise
// it prints started, then the records of a scenario, and exits 0 when the
// run completed, 2 when it stopped otherwise, 1 when the provider refused
// it (no terminal record).
//
// A scenario's records are fixed, hook-ran lines included: it stands for a
// loop whatever its hooks file says. A script's Calls are played as the
// loop's source plays them (calls.go, hooks.go): every hook of the --hooks
// file is run at its point, with the loop's argv, stdin document,
// environment, timeout, output bound and exit statuses, and what the model
// read back for each call is written to what the stand-in saw.
//
// Beyond the contract it takes --api-key-secret NAME, which SPEC §6 gives
// the loop: it reads the key with `secret-tool lookup service b10x-harness
// username NAME` in exactly the environment it was given, over the session
// bus that environment names.
//
// The script (Config) is the .json file the task (--input) names, absolute
// or beneath --workspace, as a confined loop must read it; else
// b10x-harness.json beside the program as it was started; else the golden
// scenario. What the stand-in saw (argv, environment, working directory, the
// rendered instruction package, a digest of the credential) is written
// beside the script as <script>.seen.json (b10x-harness.seen.json beside the
// program without one), for tests to compare with the launch.
package b10xstandin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/launcher/b10x"
)

// DefaultVersion is the version the stand-in reports unless its script says
// otherwise: the loop's last recorded release.
const DefaultVersion = "0.13.3"

// Config is the stand-in's script.
type Config struct {
	// Version is what --version prints (DefaultVersion when empty).
	Version string `json:"version,omitempty"`
	// Scenario names the records played after started (one of Scenarios;
	// golden when empty).
	Scenario string `json:"scenario,omitempty"`
	// Lines, when set, are printed verbatim after started instead of a
	// scenario, and the run exits Exit.
	Lines []string `json:"lines,omitempty"`
	Exit  int      `json:"exit,omitempty"`
	// Refuse, when set, refuses the run before the loop starts with this
	// reason, as a file the loop cannot read would.
	Refuse string `json:"refuse,omitempty"`
	// ReportCwd writes the workspace on started.cwd, as the seed says the
	// loop does since 0.15.1 (except under --substrate <socket>).
	ReportCwd bool `json:"report_cwd,omitempty"`
	// CallModel sends one request to {base-url}/responses with the
	// credential as a bearer token before the scenario; a refused request
	// ends the run as the loop ends one the provider refused.
	CallModel bool `json:"call_model,omitempty"`
	// Now fixes the clock of the context manifest (RFC 3339), for records
	// that must not change from run to run.
	Now string `json:"now,omitempty"`
	// Calls, when set, are the tool calls the model makes in turn 1,
	// which the stand-in runs as the loop does, through the --hooks
	// file's hooks (playCalls), instead of a scenario; Publish, when set,
	// replaces the tools it publishes.
	Calls   []Call   `json:"calls,omitempty"`
	Publish []string `json:"publish,omitempty"`
	// HookTimeoutMS shortens the loop's 60-second hook timeout.
	HookTimeoutMS int `json:"hook_timeout_ms,omitempty"`
	// Forge, with Calls, are calls the model never made, put to the
	// before-call hooks right after the first call is recorded, as an agent
	// that read the hook's command in the hooks file could; what each got
	// is written to what the stand-in saw (Seen.Forged).
	Forge []Call `json:"forge,omitempty"`
	// ForgeLate, with Calls, are forged calls put to the before-call hooks
	// right after the first call completed, its hook answered.
	ForgeLate []Call `json:"forge_late,omitempty"`
	// Hang, with Calls, is a model that never answers after the calls:
	// the loop waits for SIGINT, as the hang scenario does.
	Hang bool `json:"hang,omitempty"`
	// Disobey, with Calls, makes the stand-in a loop that does not keep
	// to its before-call hooks, one of Disobediences.
	Disobey string `json:"disobey,omitempty"`
}

// Disobediences are the ways a loop may not keep to its before-call hooks
// (Config.Disobey): overrule asks them, records each answer as proceed
// and runs every call; run-blocked asks them, records what they answered
// and runs every call anyway; ignore never asks them and records no
// hook-ran; pretend never asks them and records each as proceed.
var Disobediences = []string{"overrule", "run-blocked", "ignore", "pretend"}

// Seen is what the stand-in was started with, written for tests.
type Seen struct {
	Argv      []string          `json:"argv"`
	Env       map[string]string `json:"env"` // values of credential-looking names as sha256:<hex>
	Cwd       string            `json:"cwd"`
	Workspace string            `json:"workspace"`
	// Credential is where the key came from (the started record's
	// credential_source) and its digest; the key itself is never written.
	Credential       string `json:"credential"`
	CredentialSHA256 string `json:"credential_sha256,omitempty"`
	// SecretLookup is what secret-tool said when --api-key-secret was given:
	// "found", or its exit status and stderr.
	SecretLookup string `json:"secret_lookup,omitempty"`
	// Instructions is the rendered instruction package the model would get.
	Instructions string `json:"instructions,omitempty"`
	// ModelStatus is the HTTP status of the model request (CallModel).
	ModelStatus int `json:"model_status,omitempty"`
	// Results are what the model read back for each of the script's
	// calls, and Forged what the hooks answered each forged one.
	Results []Result `json:"results,omitempty"`
	Forged  []Result `json:"forged,omitempty"`
}

// Main runs the stand-in on argv (without the program name) and returns its
// exit status.
func Main(argv []string, stdout, stderr io.Writer) int {
	dir := filepath.Dir(invokedAs())
	cfg, err := loadConfig(filepath.Join(dir, "b10x-harness.json"))
	if err != nil {
		fmt.Fprintf(stderr, "b10x-harness stand-in: %v\n", err)
		return 1
	}
	if len(argv) == 0 {
		fmt.Fprint(stderr, rootHelp)
		return 1
	}
	switch argv[0] {
	case "-V", "--version":
		fmt.Fprintf(stdout, "b10x-harness %s\n", orDefault(cfg.Version, DefaultVersion))
		return 0
	case "-h", "--help", "help":
		fmt.Fprint(stdout, rootHelp)
		return 0
	case "run":
	default:
		fmt.Fprintf(stderr, "error: unrecognized subcommand '%s'\n\nUsage: b10x-harness [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n", argv[0])
		return 1
	}
	a, err := parseRun(argv[1:])
	if err != nil {
		// The loop writes a refused record for a parse error only when
		// the raw argv asked for JSON.
		if slices.Contains(argv, "--json") {
			fmt.Fprintf(stdout, "%s\n", refusedLine(err.Error()))
		}
		fmt.Fprint(stderr, err.Error())
		return 1
	}
	if a.has("help") {
		fmt.Fprint(stdout, runHelp())
		return 0
	}
	seen := filepath.Join(dir, "b10x-harness.seen.json")
	// A task that names a script file is the run's script, and what the
	// stand-in saw is written beside it: a confined loop sees its workspace
	// and not the directory its program is in.
	if p := taskScript(a); p != "" {
		if cfg, err = loadConfig(p); err != nil {
			fmt.Fprintf(stderr, "b10x-harness stand-in: %v\n", err)
			return 1
		}
		seen = strings.TrimSuffix(p, ".json") + ".seen.json"
	}
	r := &runner{cfg: cfg, a: a, seenPath: seen, stdout: stdout, stderr: stderr}
	r.seen.Argv = argv
	return r.run()
}

type runner struct {
	cfg      Config
	a        args
	seen     Seen
	seenPath string
	stdout   io.Writer
	stderr   io.Writer
	// interrupts delivers SIGINT, which the loop answers by cancelling
	// the run between calls and between turns (interrupted, once read).
	interrupts  chan os.Signal
	interrupted bool
}

func (r *runner) print(line []byte) {
	if r.a.has("json") {
		fmt.Fprintf(r.stdout, "%s\n", line)
	}
}

// refuse ends the run before the loop starts: a refused record (under
// --json), the reason on stderr, exit 1.
func (r *runner) refuse(reason string) int {
	r.print(refusedLine(reason))
	fmt.Fprintf(r.stderr, "error: %s\n", reason)
	r.writeSeen()
	return 1
}

func (r *runner) run() int {
	a := r.a
	r.interrupts = make(chan os.Signal, 1)
	signal.Notify(r.interrupts, syscall.SIGINT)
	r.seen.Env = environ()
	r.seen.Cwd, _ = os.Getwd()
	if !a.has("base-url") || !a.has("model") {
		fmt.Fprint(r.stderr, "error: no endpoint or model: type `--base-url` and `--model`, or name a profile whose provider has both\n")
		r.writeSeen()
		return 1
	}
	ws, err := filepath.Abs(orDefault(a.get("workspace"), "."))
	if err == nil {
		ws, err = filepath.EvalSymlinks(ws)
	}
	if err != nil {
		return r.refuse(fmt.Sprintf("the workspace `%s` cannot be opened: %s", a.get("workspace"), osError(err)))
	}
	r.seen.Workspace = ws
	if r.cfg.Refuse != "" {
		return r.refuse(r.cfg.Refuse)
	}
	h := &hooks{workspace: ws, timeout: r.cfg.hookTimeout(), env: hookEnv(a)}
	if p := a.get("hooks"); p != "" {
		if h.decls, err = loadHooks(p); err != nil {
			return r.refuse(err.Error())
		}
	}
	var card rates
	if p := a.get("prices"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return r.refuse(fmt.Sprintf("reading the rate card `%s`: %s", p, osError(err)))
		}
		if err := json.Unmarshal(b, &card); err != nil {
			return r.refuse(fmt.Sprintf("the rate card `%s` is not one: %v", p, err))
		}
		card.Kind = "rates"
	}
	key, src, err := r.credential()
	r.seen.Credential = src
	if key != "" {
		sum := sha256.Sum256([]byte(key))
		r.seen.CredentialSHA256 = hex.EncodeToString(sum[:])
	}
	if err != nil {
		return r.refuse(err.Error())
	}
	now := time.Now()
	if r.cfg.Now != "" {
		if now, err = time.Parse(time.RFC3339, r.cfg.Now); err != nil {
			fmt.Fprintf(r.stderr, "b10x-harness stand-in: now: %v\n", err)
			return 1
		}
	}
	layers, err := contextLayers(a, ws, now)
	if err != nil {
		return r.refuse(err.Error())
	}
	r.seen.Instructions = render(layers)

	published := defaultTools
	if r.cfg.Publish != nil {
		published = r.cfg.Publish
	}
	st := Started{
		Kind: "started", Model: a.get("model"),
		PublishedTools: published,
		Operations:     operations(published),
		Withheld:       []Withheld{}, Skills: []string{}, Agents: []string{}, Profiles: []Digested{},
		Toolchains: []Digested{}, CredentialSource: src,
	}
	for _, l := range layers {
		st.Context = append(st.Context, l.Layer)
	}
	if r.cfg.ReportCwd && !a.has("substrate") {
		st.Cwd = ws
	}
	r.print(Line(st))
	if a.has("prices") {
		r.print(Line(card))
	}
	if r.cfg.CallModel {
		status, err := callModel(a.get("base-url"), a.get("model"), key, r.seen.Instructions, a.get("input"))
		r.seen.ModelStatus = status
		if err != nil || status/100 != 2 {
			r.print(Line(turnStarted{"turn-started", 1}))
			fmt.Fprintf(r.stderr, "error: model wire refused: %d %s\n", status, errText(err))
			r.writeSeen()
			return 1
		}
	}
	r.writeSeen()
	if r.cfg.Calls != nil {
		return r.playCalls(h, published)
	}
	return r.play()
}

// operations are the operations of the published tools, as started names
// them.
func operations(tools []string) []string {
	ops := map[string]string{"file_read": "file.read", "file_write": "file.write", "file_edit": "file.edit", "dir_list": "dir.list", "search": "search", "find": "find", "run": "process.run"}
	var out []string
	for _, t := range tools {
		if op, ok := ops[t]; ok {
			out = append(out, op)
		}
	}
	return out
}

// play prints the scenario (or the script's lines) and ends as it says.
func (r *runner) play() int {
	if r.cfg.Lines != nil {
		for _, l := range r.cfg.Lines {
			fmt.Fprintf(r.stdout, "%s\n", l)
		}
		return r.cfg.Exit
	}
	maxTurns, _ := strconv.Atoi(r.a.get("max-turns"))
	p, err := played(orDefault(r.cfg.Scenario, "golden"), r.a.get("model"), maxTurns, r.a.has("prices"))
	if err != nil {
		fmt.Fprintf(r.stderr, "b10x-harness stand-in: %v\n", err)
		return 1
	}
	for _, s := range p.steps {
		if s.hang {
			return r.hang()
		}
		r.print(s.line)
	}
	fmt.Fprint(r.stderr, p.end.stderr)
	return p.end.status
}

// hang waits for SIGINT, which the loop answers with a cancelled stop;
// SIGTERM keeps its default and ends the process with no terminal record.
func (r *runner) hang() int {
	select {
	case <-r.interrupts:
	case <-time.After(time.Minute):
		fmt.Fprint(r.stderr, "b10x-harness stand-in: nobody stopped the hanging scenario within a minute\n")
		return 1
	}
	return r.cancel(1)
}

// cancelled reports whether SIGINT has come, as the loop asks between
// calls and between turns.
func (r *runner) cancelled() bool {
	select {
	case <-r.interrupts:
		r.interrupted = true
	default:
	}
	return r.interrupted
}

// cancel ends the run as the loop ends one its caller cancelled: a
// cancelled stop after turns turns, exit 2.
func (r *runner) cancel(turns int) int {
	stop := map[string]any{"kind": "cancelled", "reason": "the caller cancelled"}
	r.print(finished{Stop: stop, Turns: turns}.line())
	fmt.Fprint(r.stderr, "the run stopped without an answer: "+debugStop(stop)+"\n")
	return 2
}

// credential resolves the key as the loop's credential_from does, and names
// its source as started.credential_source does.
func (r *runner) credential() (key, source string, err error) {
	a := r.a
	empty := errors.New("the credential source is empty")
	read := func(p string) (string, error) {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("reading the credential file `%s`: %s", p, osError(err))
		}
		return strings.TrimSpace(string(b)), nil
	}
	fromEnv := func(name string) (string, error) {
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("the environment variable `%s` is not set", name)
		}
		return strings.TrimSpace(v), nil
	}
	switch {
	case a.has("api-key-file"):
		key, err = read(a.get("api-key-file"))
		source = "api-key:file"
	case a.has("api-key-env"):
		key, err = fromEnv(a.get("api-key-env"))
		source = "api-key:environment"
	case a.has("api-key-secret"):
		key, r.seen.SecretLookup, err = lookupSecret(a.get("api-key-secret"))
		source = "api-key:secret-store"
	case a.has("oauth-token-file"):
		key, err = read(a.get("oauth-token-file"))
		source = "oauth:file"
	case a.has("oauth-token-env"):
		key, err = fromEnv(a.get("oauth-token-env"))
		source = "oauth:environment"
	default:
		return "", "none", nil
	}
	if err == nil && a.has("oauth-token-pointer") {
		key, err = pointInto(key, a.get("oauth-token-pointer"))
	}
	if err == nil && key == "" {
		err = empty
	}
	return key, source, err
}

// pointInto resolves a JSON pointer inside a token document.
func pointInto(doc, pointer string) (string, error) {
	var v any
	if err := json.Unmarshal([]byte(doc), &v); err != nil {
		return "", fmt.Errorf("the credential source is not JSON, so `%s` points nowhere", pointer)
	}
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("`%s` points nowhere in the credential source", pointer)
		}
		v = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(part)]
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("`%s` does not point at a string in the credential source", pointer)
	}
	return s, nil
}

// lookupSecret asks the Secret Service for the item whose service is
// b10x-harness and whose username is name, through secret-tool in this
// process's own environment. secret-tool exits 1 with nothing on stderr
// when the store holds no such item, and says why on stderr otherwise.
func lookupSecret(name string) (key, said string, err error) {
	cmd := exec.Command("secret-tool", "lookup", "service", "b10x-harness", "username", name)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	why := fmt.Errorf("reading the API key secret `%s`: %s", name, b10x.SecretUnavailable)
	switch {
	case runErr == nil && out.Len() > 0:
		return strings.TrimRight(out.String(), "\n"), "found", nil
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1 && strings.TrimSpace(errb.String()) == "":
		return "", "exit 1, no such item", fmt.Errorf("reading the API key secret `%s`: %s", name, b10x.SecretMissing)
	case runErr != nil:
		return "", strings.TrimSpace(fmt.Sprintf("%v: %s", runErr, errb.String())), why
	}
	return "", "an empty secret", errors.New("the credential source is empty")
}

// callModel sends one Responses request with the credential as a bearer
// token, as the loop's openai-responses wire does.
func callModel(baseURL, model, key, instructions, input string) (int, error) {
	body, _ := json.Marshal(map[string]any{
		"model": model, "instructions": instructions, "stream": true,
		"input": []map[string]any{{"role": "user", "content": input}},
	})
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(baseURL, "/")+"/responses", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func errText(err error) string {
	if err == nil {
		return "the provider refused the request"
	}
	return err.Error()
}

// environ is the process's environment with every credential-looking
// value replaced by its digest.
func environ() map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if u := strings.ToUpper(k); strings.Contains(u, "KEY") || strings.Contains(u, "TOKEN") || strings.Contains(u, "SECRET") {
			sum := sha256.Sum256([]byte(v))
			v = "sha256:" + hex.EncodeToString(sum[:])
		}
		m[k] = v
	}
	return m
}

func (r *runner) writeSeen() {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(r.seen)
	_ = os.WriteFile(r.seenPath, b.Bytes(), 0o600)
}

// taskScript is the file --input names, absolute or beneath --workspace,
// when it is a .json file that exists; "" otherwise.
func taskScript(a args) string {
	p := a.get("input")
	if !strings.HasSuffix(p, ".json") {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(orDefault(a.get("workspace"), "."), p)
	}
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return p
}

func loadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	if c.Disobey != "" && !slices.Contains(Disobediences, c.Disobey) {
		return c, fmt.Errorf("%s: no disobedience %q; the stand-in knows %s", path, c.Disobey, strings.Join(Disobediences, ", "))
	}
	return c, nil
}
