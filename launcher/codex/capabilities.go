// Package codex holds everything specific to Codex, driven through
// `codex app-server` on its native binary: its descriptor, the pure launch
// plan (a scratch CODEX_HOME whose config.toml and model catalog override
// leave the model exactly the run's tools), the JSON-RPC conversation the
// run holds with app-server, and the reader that maps that conversation to
// events, live and in replay.
package codex

import (
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// Pin is the Codex version this build is tested against.
const Pin = "0.169.0"

// Capabilities is the codex descriptor. Each delivered tier, command and
// mode is driven on the pinned binary by a test in cmd/metaharness
// (run_codex_real_test.go): registration by the catalogue as dynamic tools
// and the tools array the model receives, call by frame, ask and observe
// decisions at both seams, turn by steer and message.inject (turn/steer),
// kill by interrupt (turn/interrupt) and halt. frame.set stays refused: a
// codex session runs the task's one turn, so a frame for the next turn
// would never be in force.
func Capabilities() *kind.Capabilities {
	s := kind.Str
	return &kind.Capabilities{
		Adapter:        kind.AdapterName{ID: "codex", Class: "harness"},
		VersionsPinned: []string{Pin},
		Tiers: kind.Tiers{
			Registration: kind.Delivered, Call: kind.Delivered,
			Turn: kind.Delivered, Kill: kind.Delivered,
		},
		Commands: map[string]kind.CommandSupport{
			"tool.decide":    kind.Honoured,
			"interrupt":      kind.Honoured,
			"halt":           kind.Honoured,
			"steer":          kind.Honoured,
			"message.inject": kind.Honoured,
			"frame.set":      kind.RefusedWith(record.UnsupportedControl),
			"permission.set": kind.RefusedWith(record.UnsupportedControl),
		},
		DecisionModes: map[string]kind.Status{
			"frame": kind.Delivered, "ask": kind.Delivered, "observe": kind.Delivered,
		},
		Rendering: map[string]*string{
			"file.read": nil, "file.write": s(PatchTool), "file.edit": s(PatchTool),
			"dir.list": nil, "search": nil, "shell": s(ShellTool),
			"web.read": nil, "skill.load": nil, "subagent.spawn": nil,
			"task.todo": nil, "mcp.call": nil,
		},
		// Catalogue entries are declared as app-server dynamic tools under
		// their mcp rendering, so the model calls them by that name.
		CatalogueRendering: s("{mcp}"),
	}
}
