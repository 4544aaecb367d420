// Package live is the built-in governed session that `make demo` shows and
// `conformance KIND --live` judges: the installed vendor (Claude Code,
// Codex through app-server, or Gemini CLI) against the scripted model
// speaking its API,
// through the loopback proxy, with a tool contract, a sealed frame
// admitting reading only, --scratch-cwd and an audit. No credential, and
// nothing leaves loopback.
package live

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kinds"
	"github.com/metaharness/metaharness/record"
)

var (
	//go:embed tools.yaml
	toolsYAML []byte
	//go:embed model.json
	modelScript []byte
)

// Task is the session's task; notes is the one file of its workspace.
const (
	Task  = "Read NOTES.md and tell me when the release ships; fix any typo you find."
	notes = "# Release notes\nThe release ships on Friday.\n"
)

// TokenEnv names the variable the run's proxy reads its token from. The
// token is made up for each session: the scripted model checks it arrived,
// the child never holds it.
const TokenEnv = "METAHARNESS_LIVE_TOKEN"

// Outcome is one session as the caller, the event stream and the scripted
// model saw it.
type Outcome struct {
	Args      []string // metaharness's argv after the program
	Code      int
	Stdout    string // the final answer (--output final)
	Stderr    string // the audit report
	Events    []*record.EventLine
	EventsRaw []byte
	Requests  []scripted.Request
	Token     string
	NotesLeft string // NOTES.md after the run
	lastTurn  string // the model's scripted last words
	// readTool and writeTool are the contract's two entries as the kind's
	// model calls them.
	readTool, writeTool string
}

// Carried says why kind has no live session, nil when it has one: the
// session puts the vendor in front of the scripted model through the
// loopback proxy, so only a kind the proxy can point at a model API the
// scripted servers speak has one.
func Carried(kind string) error {
	k, ok := kinds.Lookup(kind)
	if !ok {
		return fmt.Errorf("no kind %q", kind)
	}
	switch api := k.Descriptor().ModelAPI; api {
	case scripted.AnthropicMessages, scripted.OpenAIResponses, scripted.GeminiAPI:
		return nil
	case "":
		return fmt.Errorf("%s dials its model API itself, so no loopback proxy stands between it and a scripted model", kind)
	default:
		return fmt.Errorf("%s speaks %s, which the scripted model does not", kind, api)
	}
}

// Run drives self (the metaharness binary) through the session as `run
// kind` with env, whose HOME decides which vendor binary runs
// (~/.local/bin first, as for any run). The scripted model speaks the
// kind's model API and calls the contract's entries by the names the kind
// gives them. Its scratch world is removed before Run returns.
func Run(ctx context.Context, kind, self string, env []string) (*Outcome, error) {
	k, ok := kinds.Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("no kind %q", kind)
	}
	d := k.Descriptor()
	root, err := os.MkdirTemp("", "metaharness-live-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return nil, err
	}
	frameDoc, err := sealedFrame()
	if err != nil {
		return nil, err
	}
	for p, b := range map[string][]byte{
		filepath.Join(ws, "NOTES.md"):     []byte(notes),
		filepath.Join(root, "tools.yaml"): toolsYAML,
		filepath.Join(root, "frame.json"): frameDoc,
	} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	script, err := scripted.ParseScript(modelScript)
	if err != nil {
		return nil, err
	}
	for _, t := range script.Turns {
		if t.ToolCall != nil {
			t.ToolCall.Name = d.CatalogueName(t.ToolCall.Name)
		}
	}
	model, err := scripted.New(d.ModelAPI, script)
	if err != nil {
		return nil, fmt.Errorf("the live session of %s: %w", kind, err)
	}
	defer model.Close()

	id := make([]byte, 12)
	_, _ = rand.Read(id)
	o := &Outcome{Token: "live-token-" + hex.EncodeToString(id), lastTurn: script.Turns[len(script.Turns)-1].Text,
		readTool: d.CatalogueName("read_file"), writeTool: d.CatalogueName("write_file")}
	events := filepath.Join(root, "events.jsonl")
	o.Args = []string{"run", kind,
		"--credentials", "loopback", "--model-endpoint", model.URL(), "--token-env", TokenEnv,
		"--catalogue", filepath.Join(root, "tools.yaml"), "--frame", filepath.Join(root, "frame.json"),
		"--cwd", ws, "--scratch-cwd", "--hermetic", "--audit",
		"--output", "final", "--events", events, "-p", Task}
	cmd := exec.CommandContext(ctx, self, o.Args...)
	cmd.Env = append(withoutKey(env, TokenEnv), TokenEnv+"="+o.Token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, fmt.Errorf("starting %s: %w", self, err)
	}
	o.Code, o.Stdout, o.Stderr = cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	o.Requests = model.Requests()
	if b, err := os.ReadFile(filepath.Join(ws, "NOTES.md")); err == nil {
		o.NotesLeft = string(b)
	}
	if o.EventsRaw, err = os.ReadFile(events); err == nil {
		for _, line := range bytes.Split(bytes.TrimSpace(o.EventsRaw), []byte("\n")) {
			if l, err := record.ParseEvent(line); err == nil {
				o.Events = append(o.Events, l)
			}
		}
	}
	return o, nil
}

// Step is one judged fact of a session.
type Step struct {
	Name   string
	Detail string // why it failed; "" when it held
}

// Steps judges the outcome, in the order a reader would check it.
func (o *Outcome) Steps() []Step {
	var steps []Step
	check := func(name string, ok bool, format string, args ...any) {
		s := Step{Name: name}
		if !ok {
			s.Detail = fmt.Sprintf(format, args...)
		}
		steps = append(steps, s)
	}
	lastLine := func(s string) string {
		s = strings.TrimSpace(s)
		return s[strings.LastIndex(s, "\n")+1:]
	}
	check("the run exited 0 with the control verdict ok", o.Code == 0 && strings.Contains(o.Stderr, "control verdict: ok"),
		"exit %d; stderr ends %q", o.Code, lastLine(o.Stderr))
	c := record.CheckCompleteness(o.Events)
	check("the event stream is complete, stream.closed last", c.State == record.Complete, "%s: %s", c.State, c.Detail)

	decided := map[string]*record.ToolDecided{}
	names := map[string]string{}
	for _, l := range o.Events {
		switch e := l.Event.(type) {
		case *record.ToolRequested:
			names[e.CallID] = e.Name
		case *record.ToolDecided:
			decided[names[e.CallID]] = e
		}
	}
	var results []scripted.ToolResult
	for _, r := range o.Requests {
		results = append(results, r.ToolResults...)
	}
	read := decided[o.readTool]
	check("the frame admitted read_file, and the file reached the model",
		read != nil && read.Decision.Decision == record.Allow && anyResult(results, "ships on Friday"),
		"decision %s; the model was handed no result holding the file", describe(read))
	write := decided[o.writeTool]
	check("write_file, outside the frame, was denied, and the model was told why",
		write != nil && write.Decision.Decision == record.Deny && write.Decision.Reason != "" &&
			anyResult(results, write.Decision.Reason) && o.NotesLeft == notes,
		"decision %s; NOTES.md now %q", describe(write), o.NotesLeft)
	wrong := 0
	for _, r := range o.Requests {
		if r.Credential() != o.Token {
			wrong++
		}
	}
	check("the model saw only the token the loopback proxy holds", len(o.Requests) > 0 && wrong == 0,
		"%d request(s), %d without the proxy's token", len(o.Requests), wrong)
	check("the final answer is the model's last turn", o.lastTurn != "" && strings.TrimSpace(o.Stdout) == o.lastTurn, "stdout %q", o.Stdout)
	return steps
}

// anyResult reports whether a tool result the model was handed holds the
// text. (Only the Messages API flags an error result; on the Responses API
// the text is all the model gets.)
func anyResult(rs []scripted.ToolResult, holding string) bool {
	for _, r := range rs {
		if strings.Contains(r.Content, holding) {
			return true
		}
	}
	return false
}

func describe(d *record.ToolDecided) string {
	if d == nil {
		return "none recorded"
	}
	return fmt.Sprintf("%s by %s (%s)", d.Decision.Decision, d.DecidedBy, d.Decision.Reason)
}

// sealedFrame is one step that admits reading only.
func sealedFrame() ([]byte, error) {
	f, err := frame.Seal(frame.Document{
		Workflow: frame.Workflow{ID: "release", Version: "1"}, Node: frame.NodeRef{ID: "read-notes"},
		Step:  record.StepRef{Workflow: "release", State: "read-notes", Index: 1, Attempt: 1},
		Prior: []frame.Fact{}, Obligations: []frame.Requirement{{Text: "change nothing"}}, Reaching: []frame.Requirement{},
		Next: []frame.NodeRef{}, Handoff: frame.Handoff{Handoff: "none"}, Subjects: frame.SubjectScope{},
		Operations: []frame.Operation{{Op: "file.read"}},
	})
	if err != nil {
		return nil, err
	}
	return f.Encode(), nil
}

func withoutKey(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// Refused says why a session that metaharness refused (exit 2) never got
// going: the refusal line on its stderr. "" when it was not refused.
func (o *Outcome) Refused() string {
	if o.Code != 2 {
		return ""
	}
	for _, l := range strings.Split(o.Stderr, "\n") {
		if strings.HasPrefix(l, "metaharness: ") {
			return l
		}
	}
	return strings.TrimSpace(o.Stderr)
}
