// Package claude holds everything specific to Claude Code: its descriptor,
// launch plan, hook seam and stream-json reader.
package claude

import (
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/record"
)

// Pin is the Claude Code version this build is tested against.
const Pin = "2.1.328"

// Capabilities is the claude descriptor. The turn tier stays unverified:
// headless Claude Code takes no text between turns that we have driven.
func Capabilities() *launcher.Capabilities {
	s := launcher.Str
	return &launcher.Capabilities{
		Adapter:        launcher.AdapterName{ID: "claude", Class: "harness"},
		VersionsPinned: []string{Pin},
		Tiers: launcher.Tiers{
			Registration: launcher.Delivered, Call: launcher.Delivered,
			Turn: launcher.Unverified, Kill: launcher.Delivered,
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
			"frame": launcher.Delivered, "ask": launcher.Delivered, "observe": launcher.Delivered,
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
