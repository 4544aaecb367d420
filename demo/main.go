// Command demo runs the built-in governed session (conformance/live): the
// real vendor (Claude Code, Codex through app-server, or Gemini CLI) against the
// scripted model, through the loopback proxy, with a tool contract, a sealed
// frame and an audit; then it prints a readable summary of the event
// stream, the audit report and the steps the session proves. Everything
// stays on loopback.
//
//	go run ./demo -metaharness BIN -kind claude|codex|gemini -vendor PATH
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/conformance/live"
	"github.com/metaharness/metaharness/record"
)

func main() {
	bin := flag.String("metaharness", "metaharness", "the metaharness binary to run")
	kind := flag.String("kind", "claude", "the kind whose session to show: claude, codex or gemini")
	vendor := flag.String("vendor", "", "the pinned vendor binary (Claude Code, Codex's native binary, or Gemini CLI's bundle)")
	flag.Parse()
	code, err := demo(*bin, *kind, *vendor)
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func demo(bin, kind, vendor string) (int, error) {
	if vendor == "" {
		return 0, errors.New("-vendor names no vendor binary; scripts/demo installs the pinned one and passes it")
	}
	// The operator's world: a home whose ~/.local/bin holds the vendor.
	home, err := os.MkdirTemp("", "metaharness-demo-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(home)
	if err := os.MkdirAll(filepath.Join(home, ".local", "bin"), 0o755); err != nil {
		return 0, err
	}
	if err := os.Symlink(vendor, filepath.Join(home, ".local", "bin", kind)); err != nil {
		return 0, err
	}
	o, err := live.Run(context.Background(), kind, bin, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"})
	if err != nil {
		return 0, err
	}
	fmt.Printf("== metaharness %s\n\n", strings.Join(quoteArgs(o.Args), " "))
	fmt.Printf("== the final answer (stdout, --output final)\n%s\n", indent(o.Stdout))
	summarize(o.Events)
	fmt.Printf("== the audit report (stderr)\n%s\n", indent(o.Stderr))
	fmt.Printf("== what the session proves (the steps `metaharness conformance %s --live` checks)\n", kind)
	failed := 0
	for _, st := range o.Steps() {
		if st.Detail == "" {
			fmt.Printf("  PASS %s\n", st.Name)
		} else {
			failed++
			fmt.Printf("  FAIL %s — %s\n", st.Name, st.Detail)
		}
	}
	fmt.Printf("\n== metaharness exited %d\n", o.Code)
	if failed > 0 && o.Code == 0 {
		return 1, nil
	}
	return o.Code, nil
}

// summarize prints one readable line per event.
func summarize(events []*record.EventLine) {
	fmt.Println("== the event stream (--events)")
	for _, l := range events {
		fmt.Printf("  %3d %-16s %s\n", l.Seq, l.Name(), describe(l.Event))
	}
	fmt.Println()
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
