// Package claude holds everything specific to Claude Code: its descriptor,
// launch plan, hook seam and stream-json reader.
package claude

import "github.com/metaharness/metaharness/launcher/kind"

// Pin is the Claude Code version this build is tested against.
const Pin = "2.1.328"

// Capabilities is the claude descriptor. The turn tier stays unverified:
// headless Claude Code takes no text between turns that we have driven.
func Capabilities() *kind.Capabilities {
	s := kind.Str
	return &kind.Capabilities{
		Adapter:        kind.AdapterName{ID: "claude", Class: "harness"},
		VersionsPinned: []string{Pin},
		Tiers: kind.Tiers{
			Registration: kind.Delivered, Call: kind.Delivered,
			Turn: kind.Unverified, Kill: kind.Delivered,
		},
		Commands: kind.StopOnlyCommands(),
		DecisionModes: map[string]kind.Status{
			"frame": kind.Delivered, "ask": kind.Delivered, "observe": kind.Delivered,
		},
		Rendering: map[string]*string{
			"file.read": s("Read"), "file.write": s("Write"), "file.edit": s("Edit"),
			"dir.list": s("Glob"), "search": s("Grep"), "shell": s("Bash"),
			"web.read": s("WebFetch"), "skill.load": s("Skill"), "subagent.spawn": s("Task"),
			"task.todo": s("TodoWrite"), "mcp.call": nil,
		},
		CatalogueRendering: s("mcp__metaharness__{mcp}"),
	}
}
