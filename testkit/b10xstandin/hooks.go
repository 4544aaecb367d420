package b10xstandin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// The loop's hooks, as its source runs them (docs/b10x-hooks.md): the file
// named by --hooks, read by hooks.rs's rules; each hook an argv spawned
// directly in the loop's environment minus the credential variable the run
// reads its key from, handed one JSON document and a newline on stdin;
// one deadline (HookTimeout) over the wait and the drains; stdout bound to
// MaxHookStdout, past which the answer is a failure; exit 0 proceeds, 2
// blocks (reason from {"reason"} on stdout, else stderr, else a sentence
// naming the program), anything else fails, naming the program. A point's
// hooks run in file order and the first block or failure answers.

// HookTimeout is the loop's HOOK_TIMEOUT; a script may shorten it
// (Config.HookTimeoutMS) so that a test need not wait a minute.
const HookTimeout = 60 * time.Second

// MaxHookStdout is the loop's MAX_HOOK_STDOUT_BYTES, which bounds stderr
// too.
const MaxHookStdout = 16 << 10

// maxStopContinues is the loop's MAX_STOP_HOOK_CONTINUES.
const maxStopContinues = 3

var hookPoints = []string{"before-call", "after-call", "stop", "transition"}

type hookDecl struct {
	On      string    `json:"on"`
	Tools   *[]string `json:"tools"`
	Command []string  `json:"command"`
}

// hooks is a loaded hooks file.
type hooks struct {
	decls     []hookDecl
	workspace string
	timeout   time.Duration
	env       []string // the loop's environment without the credential variable
}

// loadHooks reads the --hooks file; the error is the loop's refusal.
func loadHooks(path string) ([]hookDecl, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the hooks file `%s`: %s", path, osError(err))
	}
	named := func(format string, a ...any) error {
		return fmt.Errorf("the hooks file `%s`: %s", path, fmt.Sprintf(format, a...))
	}
	var doc struct {
		Version *int        `json:"version"`
		Hooks   *[]hookDecl `json:"hooks"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, named("%v", err)
	}
	switch {
	case doc.Version == nil:
		return nil, named("missing field `version`")
	case doc.Hooks == nil:
		return nil, named("missing field `hooks`")
	case *doc.Version != 1:
		return nil, named("declares version %d and this build reads version 1", *doc.Version)
	}
	for i, h := range *doc.Hooks {
		n := i + 1
		switch {
		case !slices.Contains(hookPoints, h.On):
			return nil, named("hook %d fires `%s`, which is not a hook point; this build knows `before-call`, `after-call`, `stop` and `transition`", n, h.On)
		case len(h.Command) == 0:
			return nil, named("hook %d declares an empty `command`; it must name a program, as an argv rather than a shell string", n)
		case h.Tools != nil && len(*h.Tools) == 0:
			return nil, named("hook %d declares an empty `tools` list, which would match no call — omit it to mean every call", n)
		case h.Tools != nil && (h.On == "stop" || h.On == "transition"):
			return nil, named("hook %d is a `%s` hook and declares `tools`; nothing would ever match — omit it", n, h.On)
		}
	}
	return *doc.Hooks, nil
}

// spoken is what one hook said.
type spoken struct {
	kind   string // proceed, block, failed
	reason string // block, failed
	note   string // proceed at after-call
}

// matching are the hooks of point about entry ("" for a point with no
// call), in file order.
func (h *hooks) matching(point, entry string) []hookDecl {
	var out []hookDecl
	for _, d := range h.decls {
		if d.On == point && (d.Tools == nil || slices.Contains(*d.Tools, entry)) {
			out = append(out, d)
		}
	}
	return out
}

// decide runs the hooks in turn, and the first that does not proceed is
// the answer.
func (h *hooks) decide(decls []hookDecl, doc []byte) spoken {
	for _, d := range decls {
		if s := h.speak(d, doc); s.kind != "proceed" {
			return s
		}
	}
	return spoken{kind: "proceed"}
}

// drained is one output stream of a hook, read to the bound.
type drained struct {
	text  string
	over  bool
	total int
}

func drain(r io.Reader) drained {
	var kept bytes.Buffer
	n, _ := io.Copy(&kept, io.LimitReader(r, MaxHookStdout+1))
	d := drained{total: int(n)}
	if n > MaxHookStdout {
		d.over = true
		rest, _ := io.Copy(io.Discard, r)
		d.total += int(rest)
		kept.Truncate(MaxHookStdout)
	}
	d.text = strings.ToValidUTF8(kept.String(), "\uFFFD")
	return d
}

func (d drained) cut() string {
	if !d.over {
		return ""
	}
	return fmt.Sprintf(" …cut at %d bytes of %d", MaxHookStdout, d.total)
}

// speak spawns one hook, writes it the document, and reads its answer
// within one deadline.
func (h *hooks) speak(d hookDecl, doc []byte) spoken {
	program := d.Command[0]
	failed := func(format string, a ...any) spoken { return spoken{kind: "failed", reason: fmt.Sprintf(format, a...)} }
	deadline := time.Now().Add(h.timeout)
	inR, inW, err := os.Pipe()
	if err != nil {
		return failed("the hook `%s` could not be started: %v", program, err)
	}
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	cmd := exec.Command(program, d.Command[1:]...)
	cmd.Env = h.env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return failed("the hook `%s` could not be started: %v", program, err)
	}
	go func() {
		_, _ = inW.Write(append(append([]byte{}, doc...), '\n'))
		inW.Close()
	}()
	outs, errs := make(chan drained, 1), make(chan drained, 1)
	go func() { outs <- drain(outR); outR.Close() }()
	go func() { errs <- drain(errR); errR.Close() }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-exited:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-exited
		return failed("the hook `%s` was still running after %d ms and was killed", program, h.timeout.Milliseconds())
	}
	var stdout, stderr drained
	for got := 0; got < 2; got++ {
		select {
		case stdout = <-outs:
		case stderr = <-errs:
		case <-timer.C:
			return failed("the hook `%s` exited but left its output open past %d ms — something it started still holds the pipe — so it was abandoned rather than waited for", program, h.timeout.Milliseconds())
		}
	}
	if stdout.over {
		return failed("the hook `%s` wrote more than %d bytes on stdout, and a cut answer reads exactly like a whole one", program, MaxHookStdout)
	}
	var said struct {
		Note   *string `json:"note"`
		Reason *string `json:"reason"`
	}
	_ = json.Unmarshal([]byte(strings.TrimSpace(stdout.text)), &said)
	switch code := cmd.ProcessState.ExitCode(); code {
	case 0:
		s := spoken{kind: "proceed"}
		if said.Note != nil {
			s.note = *said.Note
		}
		return s
	case 2:
		reason := fmt.Sprintf("hook `%s` blocked without a reason", program)
		switch t := strings.TrimSpace(stderr.text); {
		case said.Reason != nil:
			reason = *said.Reason
		case t != "":
			reason = t + stderr.cut()
		}
		return spoken{kind: "block", reason: reason}
	case -1:
		return failed("the hook `%s` was killed by a signal%s", program, describe(stderr))
	default:
		return failed("the hook `%s` exited %d, which is neither 0 nor 2%s", program, code, describe(stderr))
	}
}

// describe is a failing hook's stderr on one line.
func describe(d drained) string {
	var lines []string
	for _, l := range strings.Split(d.text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return ": " + strings.Join(lines, " ") + d.cut()
}

// hookEnv is the loop's environment for its hooks: its own, without the
// variable --api-key-env or --oauth-token-env named.
func hookEnv(a args) []string {
	var drop []string
	for _, f := range []string{"api-key-env", "oauth-token-env"} {
		if a.has(f) {
			drop = append(drop, a.get(f))
		}
	}
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, k) {
			out = append(out, kv)
		}
	}
	return out
}
