// Command demo runs one governed session on embedded defaults: real Claude
// Code against the scripted model, through the loopback proxy, with a tool
// contract, a sealed frame and an audit; then it prints a readable summary
// of the event stream and the attestation. Everything stays on loopback.
//
//	go run ./demo -metaharness BIN -claude PATH
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/record"
)

var (
	//go:embed tools.yaml
	toolsYAML []byte
	//go:embed model.json
	modelScript []byte
)

// demoToken stands for the real API token: the proxy holds it, the child
// never does, and the scripted model checks it arrived.
const demoToken = "demo-token-not-a-secret"

func main() {
	bin := flag.String("metaharness", "metaharness", "the metaharness binary to run")
	claude := flag.String("claude", "", "the pinned Claude Code binary")
	flag.Parse()
	code, err := demo(*bin, *claude)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func demo(bin, claude string) (int, error) {
	if claude == "" {
		return 0, errors.New("-claude names no Claude Code binary; scripts/demo installs the pinned one and passes it")
	}
	root, err := os.MkdirTemp("", "metaharness-demo-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(root)

	// The operator's world: a home whose ~/.local/bin holds Claude Code,
	// a workspace copy with one file, the contract and the sealed frame.
	home, ws := filepath.Join(root, "home"), filepath.Join(root, "workspace")
	for _, d := range []string{filepath.Join(home, ".local", "bin"), ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	if err := os.Symlink(claude, filepath.Join(home, ".local", "bin", "claude")); err != nil {
		return 0, err
	}
	files := map[string][]byte{
		filepath.Join(ws, "NOTES.md"):     []byte("# Release notes\nThe release ships on Friday.\n"),
		filepath.Join(root, "tools.yaml"): toolsYAML,
		filepath.Join(root, "frame.json"): sealedFrame(),
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return 0, err
		}
	}
	script, err := scripted.ParseScript(modelScript)
	if err != nil {
		return 0, err
	}
	model := scripted.NewAnthropicServer(script)
	defer model.Close()

	events := filepath.Join(root, "events.jsonl")
	args := []string{"run", "claude",
		"--credentials", "loopback", "--model-endpoint", model.URL(), "--token-env", "DEMO_MODEL_TOKEN",
		"--catalogue", filepath.Join(root, "tools.yaml"), "--frame", filepath.Join(root, "frame.json"),
		"--cwd", ws, "--scratch-cwd", "--hermetic", "--audit",
		"--output", "final", "--events", events,
		"-p", "Read NOTES.md and tell me when the release ships; fix any typo you find."}
	fmt.Printf("== metaharness %s\n\n", strings.Join(quoteArgs(args), " "))
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "DEMO_MODEL_TOKEN=" + demoToken}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return 0, err
	}
	code := cmd.ProcessState.ExitCode()

	fmt.Printf("== the final answer (stdout, --output final)\n%s\n", indent(stdout.String()))
	if err := summarize(events); err != nil {
		return 0, err
	}
	fmt.Printf("== the audit report (stderr)\n%s\n", indent(stderr.String()))
	reqs := model.Requests()
	for _, r := range reqs {
		if r.Credential() != demoToken {
			return 0, fmt.Errorf("the scripted model's request %d carried %q, not the token the proxy holds", r.Seq, r.Credential())
		}
	}
	fmt.Printf("== the scripted model saw %d request(s), each with the token the loopback proxy holds; the child held only a placeholder\n", len(reqs))
	fmt.Printf("== metaharness exited %d\n", code)
	return code, nil
}

// sealedFrame is one step that admits reading only.
func sealedFrame() []byte {
	f, err := frame.Seal(frame.Document{
		Workflow: frame.Workflow{ID: "release", Version: "1"}, Node: frame.NodeRef{ID: "read-notes"},
		Step:  record.StepRef{Workflow: "release", State: "read-notes", Index: 1, Attempt: 1},
		Prior: []frame.Fact{}, Obligations: []frame.Requirement{{Text: "change nothing"}}, Reaching: []frame.Requirement{},
		Next: []frame.NodeRef{}, Handoff: frame.Handoff{Handoff: "none"}, Subjects: frame.SubjectScope{},
		Operations: []frame.Operation{{Op: "file.read"}},
	})
	if err != nil {
		panic(err) // the embedded frame is valid
	}
	return f.Encode()
}

// summarize prints one readable line per event.
func summarize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Printf("== the event stream (%s)\n", path)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		l, err := record.ParseEvent(sc.Bytes())
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		fmt.Printf("  %3d %-16s %s\n", l.Seq, l.Name(), describe(l.Event))
	}
	fmt.Println()
	return sc.Err()
}

func describe(ev record.Event) string {
	switch e := ev.(type) {
	case *record.SessionStarted:
		h := e.Hermetic
		return fmt.Sprintf("%s %s, offered %s; attested %d imposed, %d declared, %d unavailable",
			e.Adapter, deref(e.HarnessVersion), strings.Join(e.OfferedTools, ", "), len(h.Imposed), len(h.Declared), len(h.Unavailable))
	case *record.TurnStarted:
		return fmt.Sprintf("turn %d under frame %.12s…", e.Turn, deref(e.FrameDigest))
	case *record.Text:
		return fmt.Sprintf("%q", e.Text)
	case *record.ToolRequested:
		return fmt.Sprintf("%s %s → %s %s (seam %s)", e.Name, e.Input, strings.Join(e.Operations, ","), strings.Join(e.Subjects, ","), e.Seam)
	case *record.ToolDecided:
		s := e.Decision.Decision + " by " + e.DecidedBy
		if e.Decision.Reason != "" {
			s += ": " + e.Decision.Reason
		}
		return s
	case *record.ToolResult:
		return fmt.Sprintf("error=%v %.90s", e.IsError != nil && *e.IsError, string(e.Content))
	case *record.Warning:
		return e.Code + ": " + e.Message
	case *record.TurnEnded:
		return fmt.Sprintf("turn %d, %s", e.Turn, deref(e.StopReason))
	case *record.UsageEvent:
		return fmt.Sprintf("%s: %d in, %d out", deref(e.RequestID), derefU(e.Usage.InputTokens), derefU(e.Usage.OutputTokens))
	case *record.SessionEnded:
		c := e.Census
		return fmt.Sprintf("%s, %d turn(s); census allowed=%d denied=%d", deref(e.TerminalReason), derefU(e.NumTurns), c.Allowed, c.Denied)
	case *record.StreamClosed:
		return fmt.Sprintf("%d event(s) before it, reason %s", e.Events, e.Reason)
	}
	b, _ := json.Marshal(ev)
	return fmt.Sprintf("%.100s", b)
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func derefU(u *uint64) uint64 {
	if u == nil {
		return 0
	}
	return *u
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	return "  " + strings.ReplaceAll(s, "\n", "\n  ") + "\n"
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ;'\"") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}
