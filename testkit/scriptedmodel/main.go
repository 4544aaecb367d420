// Command scriptedmodel serves the scripted model (conformance/scripted) on
// 127.0.0.1, so that a first run of metaharness needs no key and no network:
//
//	go run ./testkit/scriptedmodel API SCRIPT [-- COMMAND [ARG…]]
//
// API is the dialect it speaks: anthropic-messages (what Claude Code asks),
// openai-responses (what Codex asks) or gemini-generate-content (what
// Gemini CLI asks). SCRIPT is a JSON file of turns, one
// answered per model request (see conformance/scripted: {"turns":[{"text":…},
// {"tool_call":{"name":…,"input":{…}}}],"final":…}).
//
// Alone, it prints its URL (http://127.0.0.1:PORT, the --model-endpoint to
// give a run) as one line on stdout and serves until SIGINT or SIGTERM.
// With a COMMAND after --, it runs that command once it serves, every
// argument spelled {url} replaced by its URL (and $SCRIPTED_MODEL_URL set),
// and ends with the command's exit status: one process to start inside
// scripts/loopback-only, whose network namespace a second shell would not
// share. Either way each model request is one line on stderr as it is
// answered, and the requests it saw are counted there at the end.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/metaharness/metaharness/conformance/scripted"
)

// urlArg is the command argument replaced by the server's URL.
const urlArg = "{url}"

const usage = `usage: go run ./testkit/scriptedmodel API SCRIPT [-- COMMAND [ARG…]]
  API     anthropic-messages (Claude Code), openai-responses (Codex) or
          gemini-generate-content (Gemini CLI)
  SCRIPT  a JSON file of the model's turns, e.g. examples/first-run/hello.json
  COMMAND run once the model serves, {url} replaced by its URL; without it,
          the URL is printed on stdout and the model serves until SIGINT or SIGTERM`

func main() {
	code, err := serve(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "scriptedmodel:", err)
	}
	os.Exit(code)
}

func serve(args []string) (int, error) {
	var command []string
	for i, a := range args {
		if a == "--" {
			args, command = args[:i], args[i+1:]
			break
		}
	}
	if len(args) != 2 || (command != nil && len(command) == 0) {
		return 2, errors.New("wants an API and a script file, then optionally -- and a command\n" + usage)
	}
	api, path := args[0], args[1]
	script, err := scripted.LoadScript(path)
	if err != nil {
		return 2, err
	}
	// Before the server starts, so that a signal between its start and the
	// wait below is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	srv, err := scripted.New(api, script, scripted.OnRequest(func(r scripted.Request) {
		fmt.Fprintf(os.Stderr, "scriptedmodel: request %d: %s %s: %s\n", r.Seq, r.Method, r.Path, answered(r, len(script.Turns)))
	}))
	if err != nil {
		return 2, err
	}
	defer func() {
		fmt.Fprintf(os.Stderr, "scriptedmodel: %d request(s), %d of them model requests\n", len(srv.Requests()), modelRequests(srv.Requests()))
		srv.Close()
	}()
	if command == nil {
		fmt.Println(srv.URL())
		<-sigs
		return 0, nil
	}
	fmt.Fprintf(os.Stderr, "scriptedmodel: %s at %s\n", api, srv.URL())
	return runCommand(command, srv.URL(), sigs)
}

// runCommand runs the command in this process group (a terminal's Ctrl-C
// reaches it as it would without this program) and hands on any signal sent
// to this process alone.
func runCommand(command []string, url string, sigs <-chan os.Signal) (int, error) {
	argv := make([]string, len(command))
	for i, a := range command {
		if a == urlArg {
			a = url
		}
		argv[i] = a
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "SCRIPTED_MODEL_URL="+url)
	if err := cmd.Start(); err != nil {
		return 2, fmt.Errorf("starting the command: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var exitErr *exec.ExitError
			switch {
			case err == nil:
				return 0, nil
			case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
				return exitErr.ExitCode(), nil
			}
			return 2, fmt.Errorf("the command: %w", err)
		}
	}
}

// answered says which turn a model request got.
func answered(r scripted.Request, turns int) string {
	what := fmt.Sprintf("turn %d of %d", r.Turn+1, turns)
	switch r.Turn {
	case scripted.PastEnd:
		what = "past the script's end, its final answer"
	case scripted.SideCall:
		what = "a side call for JSON, answered from its schema"
	}
	if r.Status != 200 {
		what += fmt.Sprintf(" (status %d)", r.Status)
	}
	return what
}

func modelRequests(reqs []scripted.Request) int {
	n := 0
	for _, r := range reqs {
		if r.Turn != scripted.NotAnswered {
			n++
		}
	}
	return n
}
