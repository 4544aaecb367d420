package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// unprovenKind is a kind whose descriptor marks ask mode unverified.
type unprovenKind struct{}

func (unprovenKind) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{Name: "claude", Binary: "none", Capabilities: &kind.Capabilities{
		Adapter:        kind.AdapterName{ID: "claude", Class: "harness"},
		Commands:       map[string]kind.CommandSupport{"tool.decide": kind.Honoured, "interrupt": kind.Honoured, "halt": kind.Honoured},
		DecisionModes:  map[string]kind.Status{"frame": kind.Delivered, "ask": kind.Unverified},
		VersionsPinned: []string{"1"},
	}}
}
func (unprovenKind) Plan(*kind.Spec, *kind.World) (*kind.Plan, error) {
	return nil, errors.New("never planned")
}
func (unprovenKind) VendorTimeout() time.Duration                                  { return time.Minute }
func (unprovenKind) CloseReason(*record.SessionEnded) string                       { return record.ReasonError }
func (unprovenKind) NewSession(*kind.Spec, *kind.Plan, kind.Services) kind.Session { return nil }
func (unprovenKind) Resolve(*mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return nil
}

// TestRunRefusesAnUnverifiedMode: a decision mode the kind has not driven
// is refused before anything starts, rather than over-claimed.
func TestRunRefusesAnUnverifiedMode(t *testing.T) {
	spec := &kind.Spec{Kind: "claude", Prompt: "p", Decisions: "ask", Credentials: "none", Hermetic: "off"}
	var out strings.Builder
	code, err := Run(context.Background(), spec, unprovenKind{}, IO{Stdout: &out, Stderr: io.Discard, Env: map[string]string{}})
	var r *exit.Refusal
	if code != exit.Refused || !errors.As(err, &r) || r.Name != "decisions-unverified" {
		t.Fatalf("code %d, err %v; want the decisions-unverified refusal", code, err)
	}
	if out.Len() != 0 {
		t.Errorf("a refusal before any event wrote a stream: %q", out.String())
	}
}

// TestReadCommandsNumbersEveryLine: blank lines and a dropped long line are
// counted, so a later line is reported under its own number, and the long
// one is reported with its code.
func TestReadCommandsNumbersEveryLine(t *testing.T) {
	var stderr strings.Builder
	eng, err := frame.New(frame.Config{Mode: frame.ModeAsk, Events: record.NewWriter(io.Discard, "r"), Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	in := "\n  \n" + strings.Repeat("x", maxCommandLine+1) + "\nnot json\n"
	r := &run{io: IO{Stdin: strings.NewReader(in), Stderr: &stderr}}
	r.readCommands(eng)
	got := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(got) != 2 || !strings.HasPrefix(got[0], "metaharness: command-too-long: stdin line 3 is longer than") ||
		!strings.HasPrefix(got[1], "metaharness: command-unparseable: stdin line 4 is not a command") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}
