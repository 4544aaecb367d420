package claude

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Kind is Claude Code as every verb sees it: the run loop, C2 replays and
// doctor's flag probe are built.
type Kind struct{}

var (
	_ kind.Runner     = Kind{}
	_ kind.Replayer   = Kind{}
	_ kind.FlagProber = Kind{}
)

// Descriptor: the Anthropic API behind the loopback proxy, with the key the
// caller exports for it; --context on the system prompt.
func (Kind) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{
		Name: "claude", Binary: "claude", Capabilities: Capabilities(),
		Install:        "run scripts/install-node-tools --link in the metaharness clone: it links the pinned Claude Code (" + Pin + ") into ~/.local/bin",
		ContextChannel: ContextChannel,
		Upstream:       "https://api.anthropic.com", TokenEnv: "ANTHROPIC_API_KEY",
		ModelAPI:     "anthropic-messages",
		RecordFormat: "claude-stream-json",
		Confined:     true,
		Memory:       memory,
		Rules: kind.Rules{
			OwnedPrograms: true,
			Credentials: map[kind.Credentials]string{
				kind.CredentialsOperatorLogin: "is not built for claude: copying the operator's login into the scratch home waits for its custody rules; use loopback, api-key or none",
			},
		},
	}
}

// memory: Claude Code reads CLAUDE.md, CLAUDE.local.md, .claude/CLAUDE.md
// and the rule files under .claude/rules; AGENTS.md is listed too, because
// reporting one more shape costs nothing (the row stays ok). Both claims
// below are held to TestRunClaudeMemoryCanary: without --setting-sources ""
// the pinned loader reads files above and at the root, with it neither.
var memory = attest.Memory{
	Shapes:  []string{"CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", ".claude/rules/*.md", "AGENTS.md"},
	KeptOut: `--setting-sources "" and a fresh scratch config home keep memory files out (a canary test holds the pinned Claude Code to it)`,
	AtRoot:  `not loaded under --setting-sources ""`,
}

func (Kind) Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	return Plan(spec, w)
}

func (Kind) VendorTimeout() time.Duration              { return HookTimeoutSeconds * time.Second }
func (Kind) NewTranscript() kind.Transcript            { return &Reader{} }
func (Kind) CloseReason(t *record.SessionEnded) string { return CloseReason(t) }

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
func (Kind) Resolve(cat *mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
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
