// Command benchrun measures what a governed run costs against the same work
// done bare, side by side and interleaved in one run, and prints the ratios:
//
//   - start→spawn: from exec of `metaharness run claude` to the vendor
//     child's own start, less a bare exec of the same stand-in (this program,
//     reached as ~/.local/bin/claude, records when it starts);
//   - governed vs bare: `metaharness run claude --credentials loopback` on
//     conformance/scripted's Anthropic server against the pinned Claude Code
//     started directly on the same script and prompt, wall time to exit;
//     and the same for the pinned Gemini CLI on the scripted Gemini API
//     (gemini.go);
//   - with -parallel, only N runs started at once against N bare
//     (parallel.go);
//   - with -sessions, only each kind's governed sessions of 1, 10 and 50
//     decided calls against the same bare, and what one more decided call
//     costs (sessions.go).
//
// The real Claude Code and Gemini CLI run only inside scripts/loopback-only,
// with their telemetry, retries and auto-update off. Run it with scripts/bench.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/testkit/b10xstandin"
	"github.com/metaharness/metaharness/testkit/collector"
)

// spawnedFile is where the stand-in writes its start time (Unix ns), in
// its working directory.
const spawnedFile = ".benchrun-spawned"

const (
	tokenEnv = "MH_BENCH_TOKEN"
	token    = "sk-ant-bench-not-a-real-key"
	prompt   = "read the notes"
)

func main() {
	if filepath.Base(os.Args[0]) == "claude" {
		standIn()
		return
	}
	b10xstandin.MainIfInvoked() // the b10x loop's stand-in of the sessions (sessions.go)
	mh := flag.String("metaharness", "", "the metaharness binary to measure")
	spawns := flag.Int("spawns", 30, "interleaved start→spawn pairs")
	runs := flag.Int("runs", 7, "interleaved governed/bare pairs on the scripted model")
	exports := flag.Int("exports", 7, "interleaved governed runs with the OpenTelemetry export on and off")
	parallel := flag.String("parallel", "", "measure only N runs started at once, for each N of this comma-separated list (parallel.go)")
	standin := flag.String("standin", "", "with -parallel: the stand-in claude (testkit/fakevendor/fakeclaude)")
	rounds := flag.Int("parallel-rounds", 3, "with -parallel: interleaved rounds at each N")
	realN := flag.Int("real-parallel", 4, "with -parallel: N of the real Claude Code's runs at once")
	verbose := flag.Bool("v", false, "with -parallel: every run's figures too")
	sessions := flag.String("sessions", "", "measure only each kind's governed vs bare sessions of these numbers of decided calls, comma-separated (sessions.go)")
	sessionRounds := flag.Int("session-rounds", 5, "with -sessions: interleaved rounds at each length")
	sessionKinds := flag.String("session-kinds", "claude,claude-bash,codex,b10x,gemini", "with -sessions: the kinds, comma-separated (claude-bash: Claude Code's Bash calls)")
	before := flag.String("before", "", "with -sessions: another metaharness binary measured as a third side of every round (the one before a change)")
	flag.Parse()
	if *mh == "" {
		fail(errors.New("-metaharness is required: the binary to measure (scripts/bench builds one)"))
	}
	root, err := os.MkdirTemp("", "benchrun-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(root)
	if *sessions != "" {
		lengths, err := counts(*sessions)
		if err == nil {
			err = sessionsFor(*mh, *before, root, strings.Split(*sessionKinds, ","), lengths, max(*sessionRounds, 1))
		}
		if err != nil {
			fail(fmt.Errorf("sessions: %w", err))
		}
		return
	}
	if *parallel != "" {
		ns, err := counts(*parallel)
		if err == nil && *standin == "" {
			err = errors.New("-standin is required with -parallel: the stand-in claude (scripts/bench builds testkit/fakevendor/fakeclaude)")
		}
		if err == nil {
			err = parallelRuns(*mh, *standin, root, ns, max(*rounds, 1), *realN, *verbose)
		}
		if err != nil {
			fail(fmt.Errorf("parallel runs: %w", err))
		}
		return
	}
	if err := startToSpawn(*mh, root, *spawns); err != nil {
		fail(fmt.Errorf("start→spawn: %w", err))
	}
	fmt.Println()
	if *runs < 1 {
		fmt.Println("governed vs bare vendor run: not measured: -runs is 0")
		return
	}
	real, why := realClaude()
	if real == "" {
		fmt.Printf("governed vs bare Claude Code run: not measured: %s\n", why)
	} else if err := governedVsBare(*mh, real, root, *runs); err != nil {
		fail(fmt.Errorf("governed vs bare: %w", err))
	}
	fmt.Println()
	if bundle, why := realGemini(); bundle == "" {
		fmt.Printf("governed vs bare Gemini CLI run: not measured: %s\n", why)
	} else if err := geminiGovernedVsBare(*mh, bundle, root, *runs); err != nil {
		fail(fmt.Errorf("gemini governed vs bare: %w", err))
	}
	if real == "" {
		return
	}
	fmt.Println()
	if err := exportOnVsOff(*mh, real, root, *exports); err != nil {
		fail(fmt.Errorf("export on vs off: %w", err))
	}
}

// exportOnVsOff times, interleaved, the same governed run with
// --otlp-endpoint to the OpenTelemetry Collector's own receiver on
// loopback and without, each from exec to exit.
func exportOnVsOff(mh, bin, root string, n int) error {
	if n < 1 {
		fmt.Println("export on vs off: not measured: -exports is 0")
		return nil
	}
	c, err := collector.Start(collector.HTTP)
	if err != nil {
		return err
	}
	defer c.Stop()
	on, off, err := interleaved(root, "claude", bin, "export", n, claudeServer, func(o *operator, up *scripted.Server, export bool) (time.Duration, error) {
		var more []string
		if export {
			more = []string{"--otlp-endpoint", c.Endpoint}
		}
		cmd := o.governed(mh, up.URL(), more...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
		if export && strings.Contains(string(out), "OTLP_EXPORT_FAILED") {
			return 0, fmt.Errorf("the export failed:\n%s", out)
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	var ratios []float64
	for i := range on {
		ratios = append(ratios, on[i].Seconds()/off[i].Seconds())
	}
	fmt.Printf("governed Claude Code run with the OpenTelemetry export on vs off (HTTP/protobuf to the Collector's receiver on loopback): %d interleaved pairs, medians\n", n)
	fmt.Printf("  --otlp-endpoint %8.1f ms (%d spans received in all)\n", ms(median(on)), len(c.Spans()))
	fmt.Printf("  no export       %8.1f ms\n", ms(median(off)))
	fmt.Printf("  ratio (median of the pairs' ratios) %.3fx, %+.1f ms\n", medianF(ratios), ms(median(on)-median(off)))
	return nil
}

// interleaved times the two sides of a comparison in turn, n pairs after
// one that warms the caches, each run in a fresh operator's world (notes
// to read, the vendor bin as ~/.local/bin/<vendor>, and a scripted server
// of its own from serve), and returns the first side's times and the
// second's.
func interleaved(root, vendor, bin, label string, n int, serve func(notes string) *scripted.Server, run func(o *operator, up *scripted.Server, first bool) (time.Duration, error)) (firsts, seconds []time.Duration, err error) {
	for i := -1; i < n; i++ { // i = -1 warms the caches
		for _, first := range []bool{true, false} {
			name := fmt.Sprintf("%s-%d-%t", label, i+1, first)
			o, err := newOperator(root, name, vendor, bin)
			if err != nil {
				return nil, nil, err
			}
			notes := filepath.Join(o.tree, "notes.md")
			if err := os.WriteFile(notes, []byte("the release is on Friday\n"), 0o644); err != nil {
				return nil, nil, err
			}
			up := serve(notes)
			d, err := run(o, up, first)
			up.Close()
			if err != nil {
				return nil, nil, err
			}
			switch {
			case i < 0:
			case first:
				firsts = append(firsts, d)
			default:
				seconds = append(seconds, d)
			}
			_ = os.RemoveAll(filepath.Join(root, name))
		}
	}
	return firsts, seconds, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchrun:", err)
	os.Exit(1)
}

// standIn is the vendor child of the start→spawn measurement: it answers
// the version probe with the pin, and otherwise records when it started.
func standIn() {
	now := time.Now().UnixNano()
	if slices.Contains(os.Args[1:], "--version") {
		fmt.Println(claude.Pin + " (Claude Code)")
		return
	}
	if err := os.WriteFile(spawnedFile, []byte(strconv.FormatInt(now, 10)), 0o600); err != nil {
		fail(err)
	}
}

// operator is a caller's world: a HOME whose ~/.local/bin/<vendor> is bin,
// a working tree, and metaharness's environment.
type operator struct {
	vendor     string
	home, tree string
	env        []string
}

// newOperator is an operator whose ~/.local/bin/<vendor> is bin, a link
// ("" links nothing).
func newOperator(root, name, vendor, bin string) (*operator, error) {
	o := &operator{vendor: vendor, home: filepath.Join(root, name, "home"), tree: filepath.Join(root, name, "tree")}
	for _, d := range []string{filepath.Join(o.home, ".local", "bin"), o.tree} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if vendor != "" {
		if err := os.Symlink(bin, filepath.Join(o.home, ".local", "bin", vendor)); err != nil {
			return nil, err
		}
	}
	o.env = []string{"HOME=" + o.home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", tokenEnv + "=" + token,
		// One cache for every run, as a caller has: the warm-up pair fills
		// it (the --version answer, the confinement's yes), as a caller's
		// first run does.
		"METAHARNESS_CACHE=" + filepath.Join(root, "cache")}
	return o, nil
}

func (o *operator) governed(mh, endpoint string, more ...string) *exec.Cmd {
	args := append([]string{"run", o.vendor, "--credentials", "loopback", "--model-endpoint", endpoint,
		"--token-env", tokenEnv, "--decisions", "observe", "--cwd", o.tree}, more...)
	cmd := exec.Command(mh, append(args, "-p", prompt)...)
	cmd.Env = o.env
	return cmd
}

// startToSpawn times exec of a governed run to its child's start against a
// bare exec of the same stand-in to its start, interleaved; and, to show
// what the confinement costs on that path, the same run --unconfined.
func startToSpawn(mh, root string, n int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	o, err := newOperator(root, "spawn", "claude", self)
	if err != nil {
		return err
	}
	up := scripted.NewAnthropicServer(scripted.Texts("DONE"))
	defer up.Close()
	standIn := filepath.Join(o.home, ".local", "bin", "claude")
	var governed, unconfined, bare []time.Duration
	for i := -1; i < n; i++ { // i = -1 warms the version cache and the page cache
		g, err := untilSpawned(o.governed(mh, up.URL()), o.tree)
		if err != nil {
			return fmt.Errorf("governed: %w", err)
		}
		u, err := untilSpawned(o.governed(mh, up.URL(), "--unconfined"), o.tree)
		if err != nil {
			return fmt.Errorf("governed --unconfined: %w", err)
		}
		b := exec.Command(standIn, "-p", prompt)
		b.Dir = o.tree
		d, err := untilSpawned(b, o.tree)
		if err != nil {
			return fmt.Errorf("bare: %w", err)
		}
		if i >= 0 {
			governed, unconfined, bare = append(governed, g), append(unconfined, u), append(bare, d)
		}
	}
	mg, mb := median(governed), median(bare)
	fmt.Printf("start→spawn: %d interleaved pairs, medians\n", n)
	fmt.Printf("  exec of metaharness run → the child's start %8.2f ms\n", ms(mg))
	fmt.Printf("  bare exec of the same stand-in → its start  %8.2f ms\n", ms(mb))
	fmt.Printf("  start→spawn (the difference)                %8.2f ms\n", ms(mg-mb))
	fmt.Printf("  the same run --unconfined, less the bare exec %6.2f ms   (no confinement probe, no init between)\n", ms(median(unconfined)-mb))
	return nil
}

// untilSpawned runs cmd to its end and returns the time from just before
// its exec to the stand-in's own start, as the stand-in wrote it in dir.
func untilSpawned(cmd *exec.Cmd, dir string) (time.Duration, error) {
	mark := filepath.Join(dir, spawnedFile)
	_ = os.Remove(mark)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	b, rerr := os.ReadFile(mark)
	if rerr != nil {
		return 0, fmt.Errorf("the stand-in never started (%v; exit %v):\n%s", rerr, err, out)
	}
	ns, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Unix(0, ns).Sub(start), nil
}

// realClaude is the pinned Claude Code, or why it cannot run here.
func realClaude() (string, string) {
	tools := os.Getenv("METAHARNESS_NODE_TOOLS")
	if tools == "" {
		return "", "METAHARNESS_NODE_TOOLS is unset (scripts/install-node-tools prints it)"
	}
	bin := filepath.Join(tools, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	if _, err := os.Stat(bin); err != nil {
		return "", err.Error()
	}
	if why := loopbackOnly("Claude Code"); why != "" {
		return "", why
	}
	return bin, ""
}

// loopbackOnly is why the real vendor cannot start here, "" when this is
// the loopback-only namespace.
func loopbackOnly(vendor string) string {
	if os.Getenv("METAHARNESS_LOOPBACK_ONLY") != "1" {
		return "not inside scripts/loopback-only, and the real " + vendor + " runs nowhere else"
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return err.Error()
	}
	for _, i := range ifs {
		if i.Name != "lo" {
			return "interface " + i.Name + " is present: refusing to start " + vendor
		}
	}
	return ""
}

// claudeServer is the scripted Messages API playing script.
func claudeServer(notes string) *scripted.Server { return scripted.NewAnthropicServer(script(notes)) }

// script is one native Read then an answer, so that the governed run
// decides one call at its hook.
func script(notes string) scripted.Script {
	in, _ := json.Marshal(map[string]string{"file_path": notes})
	return scripted.Script{Turns: []scripted.Turn{
		{ToolCall: &scripted.ToolCall{Name: "Read", Input: in}},
		{Text: "DONE"},
	}}
}

// pair is one vendor's side-by-side comparison: its kind, the binary
// linked as ~/.local/bin/<kind>, its scripted model, the governed run's
// own flags, and the same CLI started bare.
type pair struct {
	kind, bin, title, tool, bareLabel string
	serve                             func(notes string) *scripted.Server
	more                              []string
	bare                              func(o *operator, endpoint string) (*exec.Cmd, error)
}

// governedVsBare times, interleaved, a governed run and the same Claude Code
// started directly (the flags metaharness gives it, less its settings, hook
// and MCP config; telemetry off as in testkit/vendortest), each from
// exec to exit against a fresh scripted server, config dir and tree.
func governedVsBare(mh, bin, root string, n int) error {
	return compare(mh, root, n, pair{kind: "claude", bin: bin, title: "Claude Code " + claude.Pin, tool: "Read",
		bareLabel: "claude.exe -p directly", serve: claudeServer,
		bare: func(o *operator, endpoint string) (*exec.Cmd, error) { return bareClaude(bin, o, endpoint) }})
}

// compare prints the governed run against the bare one, n interleaved
// pairs, each from exec to exit; both must have put the notes before the
// model.
func compare(mh, root string, n int, p pair) error {
	governed, bare, err := interleaved(root, p.kind, p.bin, "run", n, p.serve, func(o *operator, up *scripted.Server, gov bool) (time.Duration, error) {
		cmd := o.governed(mh, up.URL(), p.more...)
		if !gov {
			var err error
			if cmd, err = p.bare(o, up.URL()); err != nil {
				return 0, err
			}
		}
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			return 0, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
		if seen := up.Requests(); !sawNotes(seen) {
			return 0, fmt.Errorf("%s: the model never saw the notes (%d requests)\n%s", strings.Join(cmd.Args, " "), len(seen), out)
		}
		return d, nil
	})
	if err != nil {
		return err
	}
	var ratios []float64
	for i := range governed {
		ratios = append(ratios, governed[i].Seconds()/bare[i].Seconds())
	}
	r := medianF(ratios)
	gov := "metaharness run " + p.kind + " --credentials loopback"
	w := max(len(gov), len(p.bareLabel))
	fmt.Printf("governed vs bare %s on the scripted model (one %s, then an answer): %d interleaved pairs, medians\n", p.title, p.tool, n)
	fmt.Printf("  %-*s %8.1f ms\n", w, gov, ms(median(governed)))
	fmt.Printf("  %-*s %8.1f ms\n", w, p.bareLabel, ms(median(bare)))
	fmt.Printf("  ratio (median of the pairs' ratios) %.3fx, %+.1f ms\n", r, ms(median(governed)-median(bare)))
	return nil
}

// sawNotes: the read ran and its result reached the model.
func sawNotes(reqs []scripted.Request) bool {
	for _, r := range reqs {
		for _, tr := range r.ToolResults {
			if strings.Contains(tr.Content, "Friday") {
				return true
			}
		}
	}
	return false
}

func bareClaude(bin string, o *operator, endpoint string) (*exec.Cmd, error) {
	config, tmp := filepath.Join(o.home, ".claude"), filepath.Join(o.home, "tmp")
	for _, d := range []string{config, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, "-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config",
		"--setting-sources", "", "--permission-mode", "dontAsk", "--allowedTools", "Read", "--", prompt)
	cmd.Dir = o.tree
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + o.home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "TERM=dumb",
		"CLAUDE_CONFIG_DIR=" + config, "CLAUDE_CODE_TMPDIR=" + tmp,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "CLAUDE_CODE_MAX_RETRIES=0",
		"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_TELEMETRY=1",
		"ANTHROPIC_BASE_URL=" + endpoint, "ANTHROPIC_API_KEY=" + token}
	return cmd, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianF(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
