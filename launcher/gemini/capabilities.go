// Package gemini holds everything specific to Google's Gemini CLI: its
// descriptor, the pure launch plan (a scratch GEMINI_CLI_HOME whose
// settings and an admin policy leave the model exactly the run's tools and
// let no native call run that the run did not allow), the stream-json
// reader, the session (which names each call by the CLI's own id, binds the
// Gemini API's id-less calls on the wire to it, and answers the hook and
// mcp-serve), the BeforeTool hook (launcher/gemini/hook) and the look at
// the installed bundle.
package gemini

import "github.com/metaharness/metaharness/launcher/kind"

// Pin is the Gemini CLI version this build is tested against.
const Pin = "0.61.0"

// Capabilities is the gemini descriptor. The turn tier stays unverified:
// headless Gemini CLI takes one prompt per process and no text between
// turns. Kill is stopping the process group (interrupt, halt).
func Capabilities() *kind.Capabilities {
	s := kind.Str
	return &kind.Capabilities{
		Adapter:        kind.AdapterName{ID: "gemini", Class: "harness"},
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
			"file.read": s("read_file"), "file.write": s("write_file"), "file.edit": s("replace"),
			"dir.list": s("list_directory"), "search": s("grep_search"), "shell": s(shellTool),
			"web.read": s("web_fetch"), "skill.load": nil, "subagent.spawn": nil,
			"task.todo": s("write_todos"), "mcp.call": nil,
		},
		CatalogueRendering: s(OwnedPrefix + "{mcp}"),
	}
}
