// Package b10x holds everything specific to the beyond10x loop
// (b10x-harness), which metaharness observes and never drives.
package b10x

import (
	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Pin is the b10x-harness version the reference notes record last.
const Pin = "0.13.3"

// Capabilities is the b10x descriptor: a direct provider, observe only, and
// no catalogue (the loop publishes its own).
func Capabilities() *launcher.Capabilities {
	s := launcher.Str
	return &launcher.Capabilities{
		Adapter:        launcher.AdapterName{ID: "b10x", Class: "direct_provider"},
		VersionsPinned: []string{Pin},
		Tiers: launcher.Tiers{
			Registration: launcher.Unverified, Call: launcher.Unverified,
			Turn: launcher.Unverified, Kill: launcher.Unverified,
		},
		Commands: map[string]launcher.CommandSupport{
			"interrupt":      launcher.Honoured,
			"halt":           launcher.Honoured,
			"tool.decide":    launcher.RefusedWith(record.UnsupportedControl),
			"frame.set":      launcher.RefusedWith(record.UnsupportedControl),
			"message.inject": launcher.RefusedWith(record.UnsupportedControl),
			"steer":          launcher.RefusedWith(record.UnsupportedControl),
			"permission.set": launcher.RefusedWith(record.UnsupportedControl),
		},
		DecisionModes: map[string]launcher.Status{
			"observe": launcher.Unverified, "frame": launcher.Absent, "ask": launcher.Absent,
		},
		Rendering: map[string]*string{
			"file.read": s("file_read"), "file.write": s("file_write"), "file.edit": s("file_edit"),
			"dir.list": s("dir_list"), "search": s("search"), "shell": s("run"),
			"web.read": nil, "skill.load": nil, "subagent.spawn": nil, "task.todo": nil, "mcp.call": nil,
		},
		CatalogueRendering: nil,
	}
}

// Kind is the b10x loop as every verb sees it. Only its descriptor is
// built: `run b10x` refuses not-built after the spec's checks.
type Kind struct{}

var _ launcher.Kind = Kind{}

func (Kind) Descriptor() *launcher.Descriptor {
	return &launcher.Descriptor{
		Name: "b10x", Binary: "b10x-harness", Capabilities: Capabilities(),
		Install: "no b10x-harness is obtainable from here; install the pinned build (" + Pin + ") into ~/.local/bin",
		// The loop reads CLAUDE.md and AGENTS.md.
		Memory: attest.Memory{Shapes: []string{"CLAUDE.md", "AGENTS.md"}},
		Rules: launcher.Rules{
			PromptOptional: true,
			LoopFlags:      true,
			NoOwnedSurface: "the loop publishes its own catalogue in-process and has no surface to replace",
			NoDecisions:    "metaharness observes the loop and decides nothing there; pass --decisions observe",
			Credentials: map[launcher.Credentials]string{
				launcher.CredentialsOperatorLogin: "on b10x: the loop reads its own key; use api-key or none",
				launcher.CredentialsLoopback:      "on b10x: the loop reads its own key; use api-key or none",
			},
		},
		Catalogue: mcpserve.Carriage{NotCarried: "the b10x loop publishes its own catalogue in-process and carries no caller's contract; run without --catalogue on b10x, or use claude or codex"},
	}
}
