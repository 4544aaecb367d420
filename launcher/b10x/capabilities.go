// Package b10x holds everything specific to the beyond10x loop
// (b10x-harness), which metaharness observes and never drives.
package b10x

import (
	"github.com/metaharness/metaharness/launcher"
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

// Vendor is the b10x loop's program as doctor sees it; `run b10x` is not
// built, so there is no launch whose flags it could put to the binary.
type Vendor struct{}

func (Vendor) Capabilities() *launcher.Capabilities { return Capabilities() }
func (Vendor) BinaryName() string                   { return "b10x-harness" }
func (Vendor) ChildPath(home string) string         { return launcher.ChildPath(home) }
