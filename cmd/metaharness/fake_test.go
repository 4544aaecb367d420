package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
)

// vendorCmd is the script command `vendor NAME…`: it puts the test binary
// at $HOME/.local/bin/NAME, where a run looks its vendor up, so that it
// runs as the stand-in TestMain registers under that name
// (testkit/fakevendor). A hard link where it can, else a copy: the
// child may be confined to see the vendor binary and not what a symbolic
// link points at.
func vendorCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: vendor NAME...")
	}
	for _, name := range args {
		ts.Check(placeSelf(filepath.Join(ts.Getenv("HOME"), ".local", "bin"), name))
	}
}

// placeSelf puts the test binary at dir/name: a hard link where it can,
// else a copy.
func placeSelf(dir, name string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Link(self, filepath.Join(dir, name)); err == nil {
		return nil
	}
	return copyExecutable(self, filepath.Join(dir, name))
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// embedderMain is the program `embedder RULE… -- PROGRAM ARGS…`: an
// embedder that runs PROGRAM (metaharness), passes its stdout and stderr
// through, and answers its event stream on its stdin, one rule after the
// other. A rule is EVENT=ACTION: when the next event named EVENT arrives
// (for tool.requested, the next that requires a decision, which is the
// call waiting at its seam), ACTION is done:
//
//	allow, deny:REASON   a tool.decide for that event's call
//	replace:INPUT        a tool.decide replacing that call's input (JSON)
//	interrupt, halt      that command
//	SIGTERM, SIGINT, SIGHUP   that signal to PROGRAM
//
// ACTION may be several, joined by ';', done in that order for one event.
//
// stdin stays open until PROGRAM's stdout ends, then it is closed; the
// embedder exits with PROGRAM's status.
func embedderMain() {
	os.Exit(embedder(os.Args[1:]))
}

func embedder(args []string) int {
	var rules [][2]string
	for len(args) > 0 && args[0] != "--" {
		event, action, ok := strings.Cut(args[0], "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "embedder: rule %q is not EVENT=ACTION\n", args[0])
			return 2
		}
		rules = append(rules, [2]string{event, action})
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: embedder RULE... -- PROGRAM ARGS...")
		return 2
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedder:", err)
		return 2
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedder:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "embedder:", err)
		return 2
	}
	sent := 0
	br := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		os.Stdout.Write(line)
		if len(rules) > 0 {
			if done := answer(line, rules[0], stdin, cmd.Process, &sent); done {
				rules = rules[1:]
			}
		}
		if err != nil {
			break
		}
	}
	stdin.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "embedder:", err)
		return 2
	}
	if len(rules) > 0 {
		fmt.Fprintf(os.Stderr, "embedder: %d rule(s) never fired, the first %s=%s\n", len(rules), rules[0][0], rules[0][1])
	}
	return 0
}

// answer applies rule to one event line and reports whether it fired.
func answer(line []byte, rule [2]string, stdin io.Writer, p *os.Process, sent *int) bool {
	var ev struct {
		Event            string `json:"event"`
		CallID           string `json:"call_id"`
		DecisionRequired bool   `json:"decision_required"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Event != rule[0] || (ev.Event == "tool.requested" && !ev.DecisionRequired) {
		return false
	}
	for _, action := range strings.Split(rule[1], ";") {
		act(action, ev.CallID, stdin, p, sent)
	}
	return true
}

// act does one action of a rule, for call (the event's call_id).
func act(action, call string, stdin io.Writer, p *os.Process, sent *int) {
	*sent++
	id := fmt.Sprintf("embedder-%d", *sent)
	var cmd map[string]any
	signals := map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT, "SIGHUP": syscall.SIGHUP}
	if sig, ok := signals[action]; ok {
		_ = p.Signal(sig)
		return
	}
	switch {
	case action == "interrupt" || action == "halt":
		cmd = map[string]any{"command": action, "reason": nil}
	case action == "allow" || strings.HasPrefix(action, "deny:") || strings.HasPrefix(action, "replace:"):
		d := map[string]any{"decision": "allow"}
		if reason, ok := strings.CutPrefix(action, "deny:"); ok {
			d = map[string]any{"decision": "deny", "reason": reason}
		}
		if input, ok := strings.CutPrefix(action, "replace:"); ok {
			d = map[string]any{"decision": "replace", "input": json.RawMessage(input)}
		}
		cmd = map[string]any{"command": "tool.decide", "call_id": call, "decision": d}
	default:
		fmt.Fprintf(os.Stderr, "embedder: no action %q\n", action)
		return
	}
	cmd["format"], cmd["id"] = "metaharness.command/1", id
	b, _ := json.Marshal(cmd)
	_, _ = stdin.Write(append(b, '\n'))
}
