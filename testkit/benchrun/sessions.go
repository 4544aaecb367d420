package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/record"
	"github.com/metaharness/metaharness/testkit/b10xstandin"
)

// The sessions: per kind, a governed run against the same work done bare,
// on sessions of 1, 10 and 50 decided calls, interleaved pairs, medians of
// wall time (exec to exit) and of the CPU the whole process tree used (the
// rusage wait4 reports, which holds every descendant reaped); then what
// one more decided call costs, from the slope of governed less bare over
// the session's length. With -before, a third side in every round: the
// same governed run of another metaharness binary (the one before a
// change), so that before and after come from the same run.

// sessionKind is one kind's governed and bare sessions of n calls.
type sessionKind struct {
	name, calls string // the kind, and the calls its sessions make
	// vendor and binary are the operator's ~/.local/bin/<vendor> link and
	// what it names (vendor "": prepare puts the vendor there itself).
	vendor, binary string
	// prepare writes what a session of n calls needs in o's world and
	// returns its scripted model (nil for a kind whose calls are scripted
	// in its stand-in).
	prepare func(o *operator, n int) (*scripted.Server, error)
	// governed and bare are the two sides' commands; hooked, when set,
	// the bare one with the vendor's own hook, answered at once.
	governed func(mh string, o *operator, up *scripted.Server) *exec.Cmd
	bare     func(o *operator, up *scripted.Server) (*exec.Cmd, error)
	hooked   func(o *operator, up *scripted.Server) (*exec.Cmd, error)
	// did says why a side did not do its n calls' work, nil when it did.
	did func(o *operator, up *scripted.Server, n int, out []byte) error
}

// sample is one run's wall time and CPU.
type sample struct{ wall, cpu time.Duration }

// sessionsFor runs the sessions of each kind named that this host can run
// and prints their rows; a kind it cannot run is a line saying why.
func sessionsFor(mh, before, root string, names []string, lengths []int, rounds int) error {
	for _, name := range names {
		k, why, err := sessionKindNamed(name)
		if err != nil {
			return err
		}
		if why != "" {
			fmt.Printf("%s: not measured: %s\n\n", name, why)
			continue
		}
		if err := sessionRows(mh, before, root, k, lengths, rounds); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Println()
	}
	return nil
}

// sessionKindNamed is the sessions of the kind named, or why this host
// cannot run them (its vendor is not installed).
func sessionKindNamed(name string) (k sessionKind, why string, err error) {
	var bin string
	switch name {
	case "claude", "claude-bash":
		if bin, why = realClaude(); bin != "" {
			k = claudeSessions(bin, map[string]string{"claude": "Read", "claude-bash": "Bash"}[name])
		}
	case "codex":
		if bin, why = realCodex(); bin != "" {
			k = codexSessions(bin)
		}
	case "b10x":
		k = b10xSessions()
	case "gemini":
		if bin, why = realGemini(); bin != "" {
			k = geminiSessions(bin)
		}
	default:
		err = fmt.Errorf("no sessions of a kind %q (claude, claude-bash, codex, b10x, gemini)", name)
	}
	return k, why, err
}

// realCodex is the pinned Codex's native binary, or why it cannot run
// here (where the real Claude Code cannot).
func realCodex() (string, string) {
	if _, why := realClaude(); why != "" && !strings.HasPrefix(why, "stat ") {
		return "", why
	}
	bin := filepath.Join(os.Getenv("METAHARNESS_NODE_TOOLS"), "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		return "", err.Error()
	}
	return bin, ""
}

// The sides of a round: the governed run, the bare one, and where they
// are asked for the same bare run with the vendor's own hook answered at
// once by a trivial server (hooked: what the vendor's hook costs itself)
// and the governed run of another binary (before).
const (
	sideGoverned = "governed"
	sideBare     = "bare"
	sideHooked   = "bare + hook"
	sideBefore   = "before"
)

func sessionRows(mh, before, root string, k sessionKind, lengths []int, rounds int) error {
	sides := []string{sideGoverned, sideBare}
	if k.hooked != nil {
		sides = append(sides, sideHooked)
	}
	if before != "" {
		sides = append(sides, sideBefore)
	}
	got := map[string]map[int][]sample{}
	for _, side := range sides {
		got[side] = map[int][]sample{}
	}
	// Rounds turn through the lengths, and each round's sides turn their
	// order, so that a drift of the machine falls on all of them.
	for round := -1; round < rounds; round++ { // round -1 warms the caches
		for _, n := range lengths {
			for i := range sides {
				side := sides[(i+max(round, 0))%len(sides)]
				s, err := session(mh, before, root, k, side, n, round)
				if err != nil {
					return fmt.Errorf("%s, %d calls: %w", side, n, err)
				}
				if round >= 0 {
					got[side][n] = append(got[side][n], s)
				}
			}
		}
	}
	fmt.Printf("%s: governed vs bare, sessions of %s decided calls (%s), %d interleaved rounds, medians\n", k.name, joinInts(lengths), k.calls, rounds)
	xs := make([]float64, len(lengths))
	added := map[string][2][]float64{} // side → its wall and CPU above bare, by length
	for i, n := range lengths {
		xs[i] = float64(n)
		bw, bc := medianSample(got[sideBare][n])
		fmt.Printf("  %3d calls  %-11s wall %8.1f ms  cpu %8.1f ms\n", n, sideBare, ms(bw), ms(bc))
		for _, side := range sides {
			if side == sideBare {
				continue
			}
			w, c := medianSample(got[side][n])
			fmt.Printf("             %-11s wall %8.1f ms  cpu %8.1f ms   vs bare: wall %.3fx %+7.1f ms, cpu %.3fx %+7.1f ms\n",
				side, ms(w), ms(c), w.Seconds()/bw.Seconds(), ms(w-bw), c.Seconds()/bc.Seconds(), ms(c-bc))
			a := added[side]
			added[side] = [2][]float64{append(a[0], ms(w-bw)), append(a[1], ms(c-bc))}
		}
	}
	if len(lengths) < 2 {
		return nil // no slope from one length
	}
	price := func(side string) (float64, float64) { return slope(xs, added[side][0]), slope(xs, added[side][1]) }
	sw, sc := price(sideGoverned)
	fmt.Printf("  each decided call adds (the slope of governed less bare): wall %.2f ms, cpu %.2f ms   aim at most 2 ms each: %s\n", sw, sc, met(sw <= 2 && sc <= 2))
	if k.hooked != nil {
		hw, hc := price(sideHooked)
		fmt.Printf("    of it the vendor's own hook, answered at once (bare + hook less bare): wall %.2f ms, cpu %.2f ms; metaharness's: wall %.2f ms, cpu %.2f ms\n", hw, hc, sw-hw, sc-hc)
	}
	if before != "" {
		ow, oc := price(sideBefore)
		fmt.Printf("  before: each decided call added wall %.2f ms, cpu %.2f ms\n", ow, oc)
	}
	if k.name == "claude" && strings.HasPrefix(k.calls, "Read") {
		if g := got[sideGoverned][50]; len(g) > 0 {
			gw, gc := medianSample(g)
			bw, bc := medianSample(got[sideBare][50])
			rw, rc := gw.Seconds()/bw.Seconds(), gc.Seconds()/bc.Seconds()
			fmt.Printf("  a 50-call session within 1.10x of bare: wall %.3fx, cpu %.3fx: %s (stretch 1.05x: %s)\n", rw, rc, met(rw <= 1.10 && rc <= 1.10), met(rw <= 1.05 && rc <= 1.05))
		}
	}
	return nil
}

// session runs one side of one round and measures it.
func session(mh, before, root string, k sessionKind, side string, n, round int) (sample, error) {
	name := fmt.Sprintf("%s-%d-%s-%d", k.name, n, strings.ReplaceAll(side, " ", ""), round+1)
	o, err := newOperator(root, name, k.vendor, k.binary)
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(filepath.Join(root, name))
	up, err := k.prepare(o, n)
	if err != nil {
		return sample{}, err
	}
	if up != nil {
		defer up.Close()
	}
	var cmd *exec.Cmd
	switch side {
	case sideGoverned:
		cmd = k.governed(mh, o, up)
	case sideBefore:
		cmd = k.governed(before, o, up)
	case sideHooked:
		cmd, err = k.hooked(o, up)
	default:
		cmd, err = k.bare(o, up)
	}
	if err != nil {
		return sample{}, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, lastLines(out.String(), 5))
	}
	if err := k.did(o, up, n, out.Bytes()); err != nil {
		return sample{}, fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, lastLines(out.String(), 5))
	}
	s := sample{wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s, nil
}

// claudeSessions is Claude Code making n calls of tool (Read of the
// notes, or a Bash command), decided at its PreToolUse hook.
func claudeSessions(bin, tool string) sessionKind {
	calls := "Read of a file"
	if tool == "Bash" {
		calls = "Bash: true, through the command sandbox"
	}
	bare := func(o *operator, up *scripted.Server) (*exec.Cmd, error) {
		cmd, err := bareClaude(bin, o, up.URL())
		if err == nil && tool == "Bash" {
			cmd.Args[slices.Index(cmd.Args, "--allowedTools")+1] = "Read,Bash"
		}
		return cmd, err
	}
	return sessionKind{name: "claude", calls: calls, vendor: "claude", binary: bin,
		prepare: func(o *operator, n int) (*scripted.Server, error) {
			notes, err := writeNotes(o, 1)
			if err != nil {
				return nil, err
			}
			in, _ := json.Marshal(map[string]string{"file_path": notes})
			if tool == "Bash" {
				in = json.RawMessage(`{"command":"true","description":"nothing"}`)
			}
			return scripted.NewAnthropicServer(repeated(n, scripted.Turn{ToolCall: &scripted.ToolCall{Name: tool, Input: in}})), nil
		},
		governed: func(mh string, o *operator, up *scripted.Server) *exec.Cmd { return o.governed(mh, up.URL()) },
		bare:     bare,
		hooked: func(o *operator, up *scripted.Server) (*exec.Cmd, error) {
			cmd, err := bare(o, up)
			if err != nil {
				return nil, err
			}
			settings := filepath.Join(o.home, "hooked-settings.json")
			b, _ := json.Marshal(map[string]any{"allowedHttpHookUrls": []string{allowHook},
				"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "",
					"hooks": []any{map[string]any{"type": "http", "url": allowHook, "timeout": 60, "onFailure": "block"}}}}}})
			if err := os.WriteFile(settings, b, 0o600); err != nil {
				return nil, err
			}
			dash := slices.Index(cmd.Args, "--")
			cmd.Args = slices.Insert(cmd.Args, dash, "--settings", settings)
			return cmd, nil
		},
		did: func(_ *operator, _ *scripted.Server, n int, out []byte) error { return calledOK(out, n) },
	}
}

// allowHook is a PreToolUse http hook's endpoint answering every call
// allow at once, with no check: what Claude Code's own hook costs, apart
// from anything metaharness does.
var allowHook = func() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "http://127.0.0.1:1/decide" // refused: the hooked side fails, naming it
	}
	answer := claude.Kind{}.HookAnswer(record.AllowDecision())
	go func() {
		_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = w.Write(answer)
		}))
	}()
	return "http://" + ln.Addr().String() + "/decide"
}()

// codexSessions is Codex making n exec_command calls (cat of the notes),
// each decided over its JSON-RPC connection (an approval request) when
// governed; bare, codex exec runs them unasked.
func codexSessions(bin string) sessionKind {
	return sessionKind{name: "codex", calls: "exec_command: cat of a file, an approval each", vendor: "codex", binary: bin,
		prepare: func(o *operator, n int) (*scripted.Server, error) {
			if _, err := writeNotes(o, 1); err != nil {
				return nil, err
			}
			return scripted.NewOpenAIServer(repeated(n, scripted.Turn{ToolCall: &scripted.ToolCall{Name: "exec_command", Input: json.RawMessage(`{"cmd":"cat notes.md"}`)}})), nil
		},
		governed: func(mh string, o *operator, up *scripted.Server) *exec.Cmd {
			cmd := exec.Command(mh, "run", "codex", "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", tokenEnv,
				"--model", "gpt-5.5", "--decisions", "observe", "--cwd", o.tree, "--scratch-cwd", "-p", prompt)
			cmd.Env = o.env
			return cmd
		},
		bare: func(o *operator, up *scripted.Server) (*exec.Cmd, error) {
			codexHome := filepath.Join(o.home, ".codex")
			if err := os.MkdirAll(codexHome, 0o700); err != nil {
				return nil, err
			}
			config := "model = \"gpt-5.5\"\nmodel_provider = \"bench\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\n" +
				"[analytics]\nenabled = false\n\n[features]\nplugins = false\nunbounded_connection_retries = false\n\n" +
				"[model_providers.bench]\nname = \"bench\"\nbase_url = \"" + up.URL() + "/v1\"\nwire_api = \"responses\"\nenv_key = \"" + tokenEnv + "\"\nrequest_max_retries = 0\nstream_max_retries = 1\n"
			if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
				return nil, err
			}
			cmd := exec.Command(bin, "exec", "--json", "--skip-git-repo-check", "--ephemeral", prompt)
			cmd.Dir = o.tree
			cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + o.home, "CODEX_HOME=" + codexHome, "LANG=C.UTF-8", tokenEnv + "=" + token}
			return cmd, nil
		},
		did: func(_ *operator, _ *scripted.Server, n int, out []byte) error { return calledOK(out, n) },
	}
}

// b10xSessions is the b10x loop's stand-in (this program, started as
// b10x-harness) making n file_read calls, each put to metaharness's
// before-call hook (a process per call) when governed under a frame that
// admits them; bare, the same loop runs them with no hooks file.
func b10xSessions() sessionKind {
	return sessionKind{name: "b10x", calls: "file_read of a file, the before-call hook a process each",
		prepare: func(o *operator, n int) (*scripted.Server, error) {
			if _, err := b10xstandin.Install(filepath.Join(o.home, ".local", "bin"), nil); err != nil {
				return nil, err
			}
			if _, err := writeNotes(o, 1); err != nil {
				return nil, err
			}
			script := b10xstandin.Config{}
			for i := range n {
				script.Calls = append(script.Calls, b10xstandin.Call{CallID: fmt.Sprintf("call-%d", i+1), Name: "file_read", Arguments: json.RawMessage(`{"path":"notes.md"}`)})
			}
			b, _ := json.Marshal(script)
			if err := os.WriteFile(filepath.Join(o.tree, "script.json"), b, 0o644); err != nil {
				return nil, err
			}
			return nil, writeFrame(o)
		},
		governed: func(mh string, o *operator, _ *scripted.Server) *exec.Cmd {
			cmd := exec.Command(mh, "run", "b10x", "--credentials", "none", "--model", "b10x-emulated", "--model-endpoint", "https://example.invalid",
				"--decisions", "frame", "--frame", framePath(o), "--cwd", o.tree, "--scratch-cwd", "-p", "script.json")
			cmd.Env = o.env
			return cmd
		},
		bare: func(o *operator, _ *scripted.Server) (*exec.Cmd, error) {
			cmd := exec.Command(filepath.Join(o.home, ".local", "bin", b10xstandin.Name), "run", "--base-url", "https://example.invalid/v1", "--model", "b10x-emulated",
				"--workspace", o.tree, "--json", "--no-session", "--input", "script.json")
			cmd.Dir = o.tree
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + o.home, "LANG=C.UTF-8"}
			return cmd, nil
		},
		did: func(o *operator, _ *scripted.Server, n int, _ []byte) error {
			var seen b10xstandin.Seen
			b, err := os.ReadFile(filepath.Join(o.tree, "script.seen.json"))
			if err == nil {
				err = json.Unmarshal(b, &seen)
			}
			if err != nil {
				return err
			}
			ok := 0
			for _, r := range seen.Results {
				if !r.Failed && strings.Contains(r.Text, "Friday") {
					ok++
				}
			}
			if ok != n {
				return fmt.Errorf("%d of %d calls read the notes: %+v", ok, n, seen.Results)
			}
			return nil
		},
	}
}

// writeNotes writes the notes the sessions read, lines of them, in o's
// tree, and returns their path.
func writeNotes(o *operator, lines int) (string, error) {
	notes := filepath.Join(o.tree, "notes.md")
	return notes, os.WriteFile(notes, []byte(strings.Repeat("the release is on Friday\n", lines)), 0o644)
}

// framePath is where writeFrame puts the frame, in o's home.
func framePath(o *operator) string { return filepath.Join(o.home, "frame.json") }

// writeFrame writes a sealed frame admitting file.read at framePath.
func writeFrame(o *operator) error {
	f, err := frame.Seal(frame.Document{
		Workflow: frame.Workflow{ID: "bench", Version: "1"}, Node: frame.NodeRef{ID: "read"},
		Step:  record.StepRef{Workflow: "bench", State: "read", Index: 1, Attempt: 1},
		Prior: []frame.Fact{}, Obligations: []frame.Requirement{}, Reaching: []frame.Requirement{},
		Next: []frame.NodeRef{}, Handoff: frame.Handoff{Handoff: "none"}, Subjects: frame.SubjectScope{},
		Operations: []frame.Operation{{Op: "file.read"}},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(framePath(o), f.Encode(), 0o644)
}

// repeated is a script of n turns of t, then an answer.
func repeated(n int, t scripted.Turn) scripted.Script {
	s := scripted.Script{}
	for range n {
		s.Turns = append(s.Turns, t)
	}
	s.Turns = append(s.Turns, scripted.Turn{Text: "DONE"})
	return s
}

// calledOK: the side's own record shows n calls that ran without an
// error: metaharness's events (tool.result), Claude Code's stream-json
// (tool_result blocks), or codex exec's (command_execution items).
func calledOK(out []byte, n int) error {
	var ran, failed int
	for _, line := range bytes.Split(out, []byte("\n")) {
		var l struct {
			Event   string `json:"event"`
			IsError *bool  `json:"is_error"`
			Type    string `json:"type"`
			Message struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
			Item struct {
				Type     string `json:"type"`
				ExitCode *int   `json:"exit_code"`
			} `json:"item"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		switch {
		case l.Event == "tool.result":
			ran++
			if l.IsError != nil && *l.IsError {
				failed++
			}
		case l.Type == "user":
			var blocks []struct {
				Type    string `json:"type"`
				IsError bool   `json:"is_error"`
			}
			_ = json.Unmarshal(l.Message.Content, &blocks)
			for _, b := range blocks {
				if b.Type == "tool_result" {
					ran++
					if b.IsError {
						failed++
					}
				}
			}
		case l.Type == "item.completed" && l.Item.Type == "command_execution":
			ran++
			if l.Item.ExitCode == nil || *l.Item.ExitCode != 0 {
				failed++
			}
		}
	}
	if ran != n || failed > 0 {
		return fmt.Errorf("%d calls ran, %d of them failed; want %d, none", ran, failed, n)
	}
	return nil
}

func medianSample(s []sample) (wall, cpu time.Duration) {
	var ws, cs []time.Duration
	for _, x := range s {
		ws, cs = append(ws, x.wall), append(cs, x.cpu)
	}
	return median(ws), median(cs)
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	var mx, my float64
	for i := range xs {
		mx, my = mx+xs[i], my+ys[i]
	}
	mx, my = mx/float64(len(xs)), my/float64(len(xs))
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

func joinInts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ", ")
}
