package gemini

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/gemini/hook"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Kind is Gemini CLI, run headless (-p, -o stream-json) on the pinned
// bundle: the run loop, C2 replays and doctor's flag probe are built.
type Kind struct{}

var (
	_ kind.Runner      = Kind{}
	_ kind.Replayer    = Kind{}
	_ kind.Observer    = Kind{}
	_ kind.FlagProber  = Kind{}
	_ kind.SpecChecker = Kind{}
)

// OwnedPrefix is how the owned surface's server's tools are named to the
// model: mcp_<server>_<tool>, the server metaharness.
const OwnedPrefix = "mcp_" + ServerName + "_"

// ServerName is the owned surface's MCP server in the scratch settings (no
// _ in it: Gemini CLI's policy parser splits a tool's name at the first _
// after mcp_).
const ServerName = "metaharness"

// shellTool is Gemini CLI's shell.
const shellTool = hook.ShellTool

// RecordFormat names Gemini CLI's -o stream-json record for project --from.
const RecordFormat = "gemini-stream-json"

// maxFunctionName is the longest function name Gemini CLI passes on: a
// longer MCP tool name is cut in its middle, so the model would call a name
// the contract never published.
const maxFunctionName = 63

// memory: Gemini CLI reads GEMINI.md from its home config, the cwd and the
// cwd's ancestors up to the nearest directory holding a boundary marker
// (.git); the scratch settings name no marker, which stops the walk at the
// cwd itself (TestRunGeminiMemoryCanary holds the pinned CLI to it). The
// cwd's own is read: nothing switches memory off in 0.61.0.
var memory = attest.Memory{
	Shapes:  []string{"GEMINI.md"},
	KeptOut: "context.memoryBoundaryMarkers [] in the scratch settings stops Gemini CLI's upward walk at the cwd (a canary test holds the pinned CLI to it)",
}

// Descriptor: the Gemini API behind the loopback proxy, with the key the
// caller exports for it in x-goog-api-key; --context in the scratch home's
// GEMINI.md.
func (Kind) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{
		Name: "gemini", Binary: "gemini", Capabilities: Capabilities(),
		Install:        "run scripts/install-node-tools --link in the metaharness clone: it links the pinned Gemini CLI's bundle (" + Pin + ") into ~/.local/bin, and the run starts it with the pinned Node beside it in the cache",
		ContextChannel: ContextChannel,
		Upstream:       "https://generativelanguage.googleapis.com", TokenEnv: KeyEnv, UpstreamHeader: loopback.GoogAPIKeyHeader,
		ModelAPI:         loopback.GeminiAPI,
		RecordFormat:     RecordFormat,
		Memory:           memory,
		Confined:         true,
		VersionFromProbe: true,
		Rules: kind.Rules{
			OwnedPrograms: true,
			Credentials: map[kind.Credentials]string{
				kind.CredentialsOperatorLogin: "is not built for gemini: a Google login (oauth-personal) lives in the operator's ~/.gemini and waits for custody rules; use loopback, api-key or none",
			},
		},
		Catalogue: mcpserve.Carriage{
			MaxPublished: maxFunctionName - len(OwnedPrefix),
			MaxWhy:       "Gemini CLI cuts a function name past " + strconv.Itoa(maxFunctionName) + " characters, and it names the entry " + OwnedPrefix + "<name>",
		},
	}
}

func (Kind) Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) { return Plan(spec, w) }

// CheckSpec refuses, before anything starts, what the plan refuses of the
// spec alone.
func (Kind) CheckSpec(spec *kind.Spec) error { return refuseSpec(spec) }

// VendorTimeout is the hook's timeout in the scratch settings; the run's
// deadline for an unanswered call is five seconds shorter.
func (Kind) VendorTimeout() time.Duration { return HookTimeout }

func (Kind) NewTranscript() kind.Transcript            { return &Reader{} }
func (Kind) CloseReason(t *record.SessionEnded) string { return CloseReason(t) }

// nativeOps is the rendering table read backwards, with the native tools
// that render no operation of their own but perform one (glob lists,
// read_many_files reads): the operation each performs and the input key
// naming its subject.
var nativeOps = map[string]kind.NativeOp{
	"read_file": {Op: "file.read", Key: "file_path"}, "read_many_files": {Op: "file.read"},
	"write_file": {Op: "file.write", Key: "file_path"}, "replace": {Op: "file.edit", Key: "file_path"},
	"list_directory": {Op: "dir.list", Key: "dir_path"}, "glob": {Op: "dir.list", Key: "dir_path"},
	"grep_search": {Op: "search", Key: "dir_path"}, shellTool: {Op: "shell", Key: "command"},
	"web_fetch": {Op: "web.read"}, "write_todos": {Op: "task.todo"},
}

// nativeTools are the native tools a run without a catalogue or the owned
// surface registers (tools.core), each an operation of the rendering.
var nativeTools = []string{"read_file", "read_many_files", "write_file", "replace", "list_directory", "glob", "grep_search", shellTool, "web_fetch", "write_todos"}

// Resolve maps a Gemini CLI tool call to operations and subjects: the
// owned server's entries through the contract, other MCP tools
// (mcp_<server>_<tool>) to mcp.call, native tools through the table
// (kind.Resolver).
func (Kind) Resolve(cat *mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return kind.Resolver(cat, OwnedPrefix, mcpTool, nativeOps)
}

// mcpTool splits an MCP tool's name, mcp_<server>_<tool>, as Gemini CLI
// names another server's tool (a server name holding _ is read up to it).
func mcpTool(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp_")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "_")
	return server, tool, ok && server != "" && tool != ""
}
