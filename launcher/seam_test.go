package launcher

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// conversingKind runs cat as a child the run converses with: its plan asks
// for a stdin pipe, and its session writes a request there and reads the
// answer back from stdout, as a JSON-RPC kind does.
type conversingKind struct{ t *testing.T }

func (conversingKind) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{Name: "echo", Binary: "cat", Capabilities: &kind.Capabilities{
		Adapter:        kind.AdapterName{ID: "echo", Class: "harness"},
		Commands:       map[string]kind.CommandSupport{"tool.decide": kind.Honoured, "interrupt": kind.Honoured, "halt": kind.Honoured},
		DecisionModes:  map[string]kind.Status{"frame": kind.Delivered},
		VersionsPinned: []string{"any"},
	}}
}

func (conversingKind) Plan(s *kind.Spec, w *kind.World) (*kind.Plan, error) {
	return &kind.Plan{Program: w.Binary, Env: []string{"PATH=/usr/bin:/bin"}, Dir: filepath.Join(w.Scratch, "work"), StdinPipe: true,
		Attestation: record.Attestation{Mode: string(s.Hermetic), Decisions: string(s.Decisions)}}, nil
}
func (conversingKind) VendorTimeout() time.Duration            { return time.Minute }
func (conversingKind) CloseReason(*record.SessionEnded) string { return record.ReasonCompleted }
func (conversingKind) Resolve(*mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return func(string, json.RawMessage) frame.Resolution { return frame.Resolution{} }
}
func (k conversingKind) NewSession(_ *kind.Spec, _ *kind.Plan, run kind.Services) kind.Session {
	return &conversation{t: k.t, run: run}
}

type conversation struct {
	t   *testing.T
	run kind.Services
}

func (c *conversation) Control(record.Command) error { return nil }

func (c *conversation) Drive(ctx context.Context, p kind.Pipes) *record.SessionEnded {
	if p.Stdin == nil {
		c.t.Error("a plan with StdinPipe gave the session no stdin")
		return nil
	}
	br := bufio.NewReader(p.Stdout)
	req := `{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n"
	_, _ = io.WriteString(p.Transcript, req)
	if _, err := io.WriteString(p.Stdin, req); err != nil {
		c.t.Errorf("writing the child's stdin: %v", err)
	}
	answer, err := br.ReadString('\n')
	if err != nil || answer != req {
		c.t.Errorf("the child answered %q, %v", answer, err)
	}
	_, _ = io.WriteString(p.Transcript, answer)
	c.run.Started("", &record.SessionStarted{Adapter: "echo", AdapterClass: "harness"})
	if _, _, err := c.run.Perform(ctx, "read_file", json.RawMessage(`{}`), "c1"); err == nil {
		c.t.Error("Perform without a catalogue performed something")
	}
	_ = p.Stdin.Close() // cat ends at the end of its input
	if rest, _ := io.ReadAll(br); len(rest) != 0 {
		c.t.Errorf("the child wrote more: %q", rest)
	}
	return &record.SessionEnded{FinalAnswer: &record.FinalAnswer{Text: "done"}}
}

// TestRunCarriesAConversingChild drives the run loop with a kind of the
// second shape (the run writes the child's stdin), through the seam a codex
// session plugs into: the stream opens and ends, the conversation is the
// transcript, and the child's end is the session's.
func TestRunCarriesAConversingChild(t *testing.T) {
	retain := t.TempDir()
	spec := &kind.Spec{Kind: "echo", Prompt: "p", Decisions: frame.ModeFrame, Credentials: kind.CredentialsNone, Hermetic: kind.HermeticOff, RetainDir: retain}
	var out strings.Builder
	code, err := Run(context.Background(), spec, conversingKind{t}, IO{Stdout: &out, Stderr: io.Discard, Env: map[string]string{}})
	if err != nil || code == exit.Refused {
		t.Fatalf("exit %d: %v", code, err)
	}
	for _, want := range []string{`"event":"session.started"`, `"event":"session.ended","final_answer":{"text":"done"`, `"event":"stream.closed"`, `"reason":"completed"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the stream lacks %s:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(retain, "transcript.jsonl"))
	if err != nil || strings.Count(string(b), `"method":"initialize"`) != 2 {
		t.Errorf("the transcript holds %q (%v), want the request and its echo", b, err)
	}
}
