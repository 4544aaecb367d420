package claude

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Adapter is the claude kind for the run loop.
type Adapter struct{}

var _ launcher.Adapter = Adapter{}

func (Adapter) Capabilities() *launcher.Capabilities { return Capabilities() }
func (Adapter) BinaryName() string                   { return "claude" }
func (Adapter) ChildPath(home string) string         { return launcher.ChildPath(home) }
func (Adapter) NewTranscript() launcher.Transcript   { return &Reader{} }
func (Adapter) OwnedTool(published string) string    { return OwnedPrefix + published }
func (Adapter) HookTimeout() time.Duration           { return HookTimeoutSeconds * time.Second }
func (Adapter) ContextChannel() string               { return ContextChannel }

func (Adapter) CloseReason(t *record.SessionEnded) string { return CloseReason(t) }

func (Adapter) Plan(spec *launcher.Spec, w *launcher.World) (*launcher.Plan, error) {
	return Plan(spec, w)
}

// LoopbackDefaults: the Anthropic API, with the key the caller exports for it.
func (Adapter) LoopbackDefaults() (string, string) {
	return "https://api.anthropic.com", "ANTHROPIC_API_KEY"
}

// nativeOps is the rendering table read backwards: the operation each
// native tool performs and the input key naming its subject.
var nativeOps = map[string]struct{ op, key string }{
	"Read": {"file.read", "file_path"}, "Write": {"file.write", "file_path"},
	"Edit": {"file.edit", "file_path"}, "MultiEdit": {"file.edit", "file_path"},
	"NotebookEdit": {"file.edit", "notebook_path"},
	"Glob":         {"dir.list", "path"}, "Grep": {"search", "path"},
	"Bash": {"shell", "command"}, "WebFetch": {"web.read", ""},
	"Skill": {"skill.load", ""}, "Task": {"subagent.spawn", ""}, "TodoWrite": {"task.todo", ""},
}

// Resolve maps a Claude Code tool call to operations and subjects: the
// catalogue's own entries through the contract, other MCP tools to
// mcp.call, native tools through the rendering table. Anything else
// resolves to nothing, which a frame denies as uncovered.
func (Adapter) Resolve(cat *mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return func(tool string, input json.RawMessage) frame.Resolution {
		if published, ok := strings.CutPrefix(tool, OwnedPrefix); ok {
			if cat == nil {
				return frame.Resolution{}
			}
			e, ok := cat.Lookup(published)
			if !ok {
				return frame.Resolution{}
			}
			op := mcpserve.OperationOf(e.Name)
			if op == "" {
				return frame.Resolution{}
			}
			return frame.Resolution{Operations: []frame.Operation{{Op: op}}, Subjects: mcpserve.Subjects(e.Name, input)}
		}
		if rest, ok := strings.CutPrefix(tool, "mcp__"); ok {
			server, name, ok := strings.Cut(rest, "__")
			if !ok {
				return frame.Resolution{}
			}
			return frame.Resolution{Operations: []frame.Operation{{Op: frame.MCPCall, Server: server, Tool: name}}}
		}
		n, ok := nativeOps[tool]
		if !ok {
			return frame.Resolution{}
		}
		res := frame.Resolution{Operations: []frame.Operation{{Op: n.op}}}
		if n.key != "" {
			res.Subjects = nativeSubject(n.op, n.key, input)
		}
		return res
	}
}

// nativeSubject names what a native call acts on, as the model wrote it:
// file:<path> for file tools, proc:<first word> for Bash.
func nativeSubject(op, key string, input json.RawMessage) []string {
	var args map[string]json.RawMessage
	if json.Unmarshal(input, &args) != nil {
		return nil
	}
	var v string
	if json.Unmarshal(args[key], &v) != nil || v == "" {
		if op == "dir.list" || op == "search" {
			return []string{"file:."}
		}
		return nil
	}
	switch op {
	case "shell":
		if f := strings.Fields(v); len(f) > 0 {
			return []string{"proc:" + f[0]}
		}
		return nil
	}
	return []string{"file:" + v}
}
