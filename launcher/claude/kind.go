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
var nativeOps = map[string]kind.NativeOp{
	"Read": {Op: "file.read", Key: "file_path"}, "Write": {Op: "file.write", Key: "file_path"},
	"Edit": {Op: "file.edit", Key: "file_path"}, "MultiEdit": {Op: "file.edit", Key: "file_path"},
	"NotebookEdit": {Op: "file.edit", Key: "notebook_path"},
	"Glob":         {Op: "dir.list", Key: "path"}, "Grep": {Op: "search", Key: "path"},
	"Bash": {Op: "shell", Key: "command"}, "WebFetch": {Op: "web.read"},
	"Skill": {Op: "skill.load"}, "Task": {Op: "subagent.spawn"}, "TodoWrite": {Op: "task.todo"},
}

// Resolve maps a Claude Code tool call to operations and subjects: the
// catalogue's own entries through the contract, other MCP tools
// (mcp__<server>__<tool>) to mcp.call, native tools through the rendering
// table (kind.Resolver).
func (Kind) Resolve(cat *mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return kind.Resolver(cat, OwnedPrefix, mcpTool, nativeOps)
}

// mcpTool splits an MCP tool's name, mcp__<server>__<tool>.
func mcpTool(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "__")
}
