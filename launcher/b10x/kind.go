// Package b10x holds everything specific to the beyond10x loop
// (b10x-harness): the pure launch plan (Plan, pinned by the C1 vectors in
// conformance/testdata/c1/b10x), the reader of its --json record (Reader,
// pinned by the C2 vectors), the session that reads it during a run, the
// flag probe doctor runs, and the descriptor.
//
// The loop is a direct provider: it dials the model itself and carries no
// caller's catalogue. Under --decisions observe it decides its own calls
// (metaharness launches it with --approve-up-to high and records what it
// did, no tool.decided), and what it refused or blocked arrives as warnings
// (hook-refused, hook-failed, approval-denied, unpublished-tool,
// program-refused). Under frame and ask metaharness decides every call the
// loop's approver admits through the loop's own caller seam, its hooks
// file: the plan puts metaharness's before-call hook (launcher/b10x/hook)
// first, and the session answers it through the engine, held to the loop's
// record (docs/b10x-hooks.md).
package b10x

import (
	"encoding/json"
	"strings"
	"syscall"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// name is the kind on the command line.
const name = "b10x"

// Pin is the b10x-harness version the reference notes record last.
const Pin = "0.13.3"

// ContextChannel is how --context files reach the model: each file, copied
// into the scratch tree, is passed as --context and rendered by the loop
// as an operator.context layer of its instructions (<context
// kind="provided_context" trust="operator" source="…">, its text with &
// and < escaped).
const ContextChannel = "loop-context-layer"

// memory is the loop's memory files: it reads CLAUDE.md and AGENTS.md.
var memory = attest.Memory{Shapes: []string{"CLAUDE.md", "AGENTS.md"}}

// RecordFormat names the loop's --json record for project --from.
const RecordFormat = "b10x-jsonl"

// Capabilities is the b10x descriptor. What it claims is what the tests
// drive against the stand-in, which runs hooks as the loop does: the call
// tier by the before-call hook (frame, ask and observe; tool.decide answers
// it, and a replace is refused at that seam, which takes no new input),
// kill (interrupt and halt stop the loop, which takes no control line, by
// SIGINT, its own stop, then its process group). metaharness fixes none of
// the loop's offered tools and has no way into a turn, so those tiers are
// absent.
func Capabilities() *kind.Capabilities {
	s := kind.Str
	return &kind.Capabilities{
		Adapter:        kind.AdapterName{ID: "b10x", Class: "direct_provider"},
		VersionsPinned: []string{Pin},
		Tiers: kind.Tiers{
			Registration: kind.Absent, Call: kind.Delivered,
			Turn: kind.Absent, Kill: kind.Delivered,
		},
		Commands: kind.StopOnlyCommands(),
		DecisionModes: map[string]kind.Status{
			"observe": kind.Delivered, "frame": kind.Delivered, "ask": kind.Delivered,
		},
		Rendering: map[string]*string{
			"file.read": s("file_read"), "file.write": s("file_write"), "file.edit": s("file_edit"),
			"dir.list": s("dir_list"), "search": s("search"), "shell": s("run"),
			"web.read": nil, "skill.load": nil, "subagent.spawn": nil, "task.todo": nil, "mcp.call": nil,
		},
		CatalogueRendering: nil,
	}
}

// Kind is the b10x loop as every verb sees it: its spec checks, the run
// loop, C2 replays and doctor's flag probe are built.
type Kind struct{}

var (
	_ kind.Runner      = Kind{}
	_ kind.Replayer    = Kind{}
	_ kind.FlagProber  = Kind{}
	_ kind.SpecChecker = Kind{}
	_ kind.EnvChecker  = Kind{}
	_ kind.FlagsKind   = Kind{}
	_ kind.Observer    = Kind{}
)

func (Kind) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{
		Name: name, Binary: "b10x-harness", Capabilities: Capabilities(),
		Install:        "no b10x-harness is obtainable from here; install the pinned build (" + Pin + ") into ~/.local/bin",
		ContextChannel: ContextChannel, RecordFormat: RecordFormat,
		// The loop runs in metaharness's namespaces; a direct provider
		// dials its model itself, so it gets no network namespace.
		Confined:         true,
		Memory:           memory,
		VersionFromProbe: true,
		// Ctrl-C: the loop cancels between calls and writes finished
		// {"kind":"cancelled"}, so a stopped run keeps its terminal record.
		StopSignal: syscall.SIGINT,
		Rules: kind.Rules{
			PromptOptional: true,
			NoOwnedSurface: "the loop publishes its own catalogue in-process and has no surface to replace",
			Credentials: map[kind.Credentials]string{
				kind.CredentialsOperatorLogin: "on b10x: the loop reads its own key; use api-key or none",
				kind.CredentialsLoopback:      "on b10x: the loop reads its own key; use api-key or none",
			},
		},
		Catalogue: mcpserve.Carriage{NotCarried: "the b10x loop publishes its own catalogue in-process and carries no caller's contract; run without --catalogue on b10x, or use claude or codex"},
	}
}

func (Kind) CheckSpec(spec *kind.Spec) error { return CheckSpec(spec) }

// NewFlags: the loop's flags, which the CLI fills.
func (Kind) NewFlags() kind.KindFlags { return &Flags{} }

func (Kind) Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	return Plan(spec, w)
}

// HookTimeout is how long the loop waits for one hook (its HOOK_TIMEOUT):
// the engine's deadline for a call at the before-call hook is strictly
// inside it.
const HookTimeout = 60 * time.Second

func (Kind) VendorTimeout() time.Duration              { return HookTimeout }
func (Kind) NewTranscript() kind.Transcript            { return &Reader{} }
func (Kind) CloseReason(t *record.SessionEnded) string { return CloseReason(t) }

// entryOps is the rendering table read backwards: the operation each of the
// loop's entries performs and the argument naming its subject.
var entryOps = map[string]struct{ op, key string }{
	"file_read": {"file.read", "path"}, "file_write": {"file.write", "path"}, "file_edit": {"file.edit", "path"},
	"dir_list": {"dir.list", "path"}, "search": {"search", "path"}, "run": {"shell", "argv"},
}

// Resolve maps a loop call to the operation its entry performs and its
// subject as the loop names it (file:<path>, proc:<program>); any other
// entry resolves to nothing. The loop has no catalogue of the caller's.
func (Kind) Resolve(*mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return func(tool string, input json.RawMessage) frame.Resolution {
		e, ok := entryOps[tool]
		if !ok {
			return frame.Resolution{}
		}
		res := frame.Resolution{Operations: []frame.Operation{{Op: e.op}}}
		var args map[string]json.RawMessage
		if json.Unmarshal(input, &args) != nil {
			return res
		}
		if e.key == "argv" {
			var argv []string
			if json.Unmarshal(args["argv"], &argv) == nil && len(argv) > 0 {
				res.Subjects = []string{"proc:" + argv[0]}
			}
			return res
		}
		var p string
		switch {
		case json.Unmarshal(args[e.key], &p) == nil && strings.TrimSpace(p) != "":
			res.Subjects = []string{"file:" + p}
		case e.op == "dir.list" || e.op == "search":
			res.Subjects = []string{"file:."} // their path defaults to the workspace
		}
		return res
	}
}
