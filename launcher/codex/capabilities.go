// Package codex holds everything specific to Codex, driven through
// `codex app-server`: its descriptor, launch plan and protocol reader.
package codex

import (
	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Pin is the Codex version this build is tested against.
const Pin = "0.169.0"

// Capabilities is the codex descriptor. No codex run has been driven by
// this build yet, so every tier and mode is unverified, which makes a run
// that requires one refuse rather than over-claim.
func Capabilities() *launcher.Capabilities {
	s := launcher.Str
	return &launcher.Capabilities{
		Adapter:        launcher.AdapterName{ID: "codex", Class: "harness"},
		VersionsPinned: []string{Pin},
		Tiers: launcher.Tiers{
			Registration: launcher.Unverified, Call: launcher.Unverified,
			Turn: launcher.Unverified, Kill: launcher.Unverified,
		},
		Commands: map[string]launcher.CommandSupport{
			"tool.decide":    launcher.Honoured,
			"interrupt":      launcher.Honoured,
			"halt":           launcher.Honoured,
			"frame.set":      launcher.RefusedWith(record.UnsupportedControl),
			"message.inject": launcher.RefusedWith(record.UnsupportedControl),
			"steer":          launcher.RefusedWith(record.UnsupportedControl),
			"permission.set": launcher.RefusedWith(record.UnsupportedControl),
		},
		DecisionModes: map[string]launcher.Status{
			"frame": launcher.Unverified, "ask": launcher.Unverified, "observe": launcher.Unverified,
		},
		Rendering: map[string]*string{
			"file.read": nil, "file.write": s("apply_patch"), "file.edit": s("apply_patch"),
			"dir.list": nil, "search": nil, "shell": s("exec_command"),
			"web.read": s("web_search"), "skill.load": nil, "subagent.spawn": nil,
			"task.todo": nil, "mcp.call": nil,
		},
		// Catalogue entries are declared as app-server dynamic tools under
		// their mcp rendering, so the model calls them by that name.
		CatalogueRendering: s("{mcp}"),
	}
}

// Kind is Codex as every verb sees it. Only its descriptor is built: `run
// codex` refuses not-built after the spec's checks, and doctor finds the
// binary and its pin but has no launch whose flags to probe. The run loop
// plugs in here as a launcher.Runner whose session converses with
// `codex app-server` over the child's stdin and stdout.
type Kind struct{}

var _ launcher.Kind = Kind{}

func (Kind) Descriptor() *launcher.Descriptor {
	return &launcher.Descriptor{
		Name: "codex", Binary: "codex", Capabilities: Capabilities(),
		Install:  "run scripts/install-node-tools --link in the metaharness clone: it links the pinned Codex's native binary (" + Pin + ") into ~/.local/bin",
		Upstream: "https://api.openai.com", TokenEnv: "OPENAI_API_KEY",
		// Codex reads AGENTS.md and AGENTS.override.md; the seed adds
		// CLAUDE.md. Nothing keeps those above the cwd out of its loader.
		Memory: attest.Memory{Shapes: []string{"AGENTS.md", "AGENTS.override.md", "CLAUDE.md"}},
		// Catalogue entries become app-server dynamic tools under their mcp
		// rendering, and app-server refuses these names at thread/start.
		Catalogue: mcpserve.Carriage{
			ReservedNames: []string{"mcp"}, ReservedPrefixes: []string{"mcp__"},
			ReservedWhy: "a name codex app-server reserves for MCP tools and refuses at thread/start",
		},
	}
}
