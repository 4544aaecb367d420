package codex

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/loopback"
	"github.com/metaharness/metaharness/mcpserve"
	"github.com/metaharness/metaharness/record"
)

// Kind is Codex, driven through `codex app-server` on its native binary:
// the run loop (a session the run converses with over JSON-RPC), C2
// replays of that conversation, and doctor's probe of the planned config
// are built.
type Kind struct{}

var (
	_ kind.Runner      = Kind{}
	_ kind.Replayer    = Kind{}
	_ kind.Observer    = Kind{}
	_ kind.Preflighter = Kind{}
	_ kind.FlagProber  = Kind{}
	_ kind.SpecChecker = Kind{}
)

// memory: codex reads AGENTS.md (AGENTS.override.md in its place) in the
// cwd and, under a .git root, in every directory from that root down; the
// seed names CLAUDE.md too. Nothing in the launch keeps those above the cwd
// out of its loader, so one found there is a gap (SPEC §5.2).
var memory = attest.Memory{Shapes: []string{"AGENTS.md", "AGENTS.override.md", "CLAUDE.md"}}

func (Kind) Descriptor() *kind.Descriptor {
	return &kind.Descriptor{
		Name: "codex", Binary: "codex", Capabilities: Capabilities(),
		Install:        "run scripts/install-node-tools --link in the metaharness clone: it links the pinned Codex's native binary (" + Pin + ") into ~/.local/bin",
		ContextChannel: ContextChannel,
		Upstream:       "https://api.openai.com", TokenEnv: "OPENAI_API_KEY", UpstreamHeader: loopback.BearerHeader,
		TokenFile:    TokenFile,
		ModelAPI:     "openai-responses",
		RecordFormat: RecordFormat,
		Memory:       memory,
		Confined:     true,
		Rules: kind.Rules{Credentials: map[kind.Credentials]string{
			kind.CredentialsOperatorLogin: "is not built for codex: copying the operator's auth.json into the scratch CODEX_HOME waits for its custody rules (and a ChatGPT-plan login is never carried); use loopback with --token-env or --token-file, api-key or none",
		}},
		// Catalogue entries become app-server dynamic tools under their mcp
		// rendering, and app-server refuses these names at thread/start.
		Catalogue: mcpserve.Carriage{
			ReservedNames: []string{"mcp"}, ReservedPrefixes: []string{"mcp__"},
			ReservedWhy: "a name codex app-server reserves for MCP tools and refuses at thread/start",
		},
	}
}

func (Kind) Plan(spec *kind.Spec, w *kind.World) (*kind.Plan, error) {
	return Plan(spec, w)
}

// CheckSpec refuses, before anything starts, the flags app-server has no
// knob for; the plan refuses them too, so a C1 vector shows it.
func (Kind) CheckSpec(spec *kind.Spec) error { return refuseFlags(spec) }

// VendorTimeout: app-server waits for an answer to an approval or a tool
// call without bound; the run bounds it as it does Claude Code's hook, so
// that an unanswered call is denied by metaharness's own deadline (55 s).
func (Kind) VendorTimeout() time.Duration { return 60 * time.Second }

func (Kind) NewTranscript() kind.Transcript { return NewReader() }

// CloseReason: completed when the task's turn completed, error for a turn
// that failed or was interrupted, and when no turn ended.
func (Kind) CloseReason(t *record.SessionEnded) string {
	if t != nil && t.IsError != nil && !*t.IsError {
		return record.ReasonCompleted
	}
	return record.ReasonError
}

// Resolve maps a codex call to operations and subjects: a catalogue entry
// through the contract (codex calls it by its published name), a native
// command to shell, a patch to file.write (a file added or deleted) and
// file.edit (one updated). Anything else resolves to nothing, which a frame
// denies as uncovered.
func (Kind) Resolve(cat *mcpserve.Contract) func(string, json.RawMessage) frame.Resolution {
	return func(tool string, input json.RawMessage) frame.Resolution {
		switch tool {
		case ShellTool:
			var in struct {
				Command string `json:"command"`
			}
			res := frame.Resolution{Operations: []frame.Operation{{Op: "shell"}}}
			if json.Unmarshal(input, &in) == nil {
				if f := strings.Fields(innerCommand(in.Command)); len(f) > 0 {
					res.Subjects = []string{"proc:" + f[0]}
				}
			}
			return res
		case PatchTool:
			var in struct {
				Changes []struct {
					Path string `json:"path"`
					Kind string `json:"kind"`
				} `json:"changes"`
			}
			_ = json.Unmarshal(input, &in)
			res := frame.Resolution{}
			for _, c := range in.Changes {
				op := "file.edit"
				if c.Kind != "update" {
					op = "file.write"
				}
				if !hasOp(res.Operations, op) {
					res.Operations = append(res.Operations, frame.Operation{Op: op})
				}
				res.Subjects = append(res.Subjects, "file:"+c.Path)
			}
			if len(res.Operations) == 0 {
				res.Operations = []frame.Operation{{Op: "file.edit"}}
			}
			return res
		}
		return kind.ResolveEntry(cat, tool, input)
	}
}

func hasOp(ops []frame.Operation, op string) bool {
	for _, o := range ops {
		if o.Op == op {
			return true
		}
	}
	return false
}

// innerCommand is the command a shell wrapper runs: codex presents
// `/bin/bash -lc 'touch f'`, whose program is touch.
func innerCommand(cmd string) string {
	for _, sh := range []string{"/bin/bash -lc ", "/bin/bash -c ", "bash -lc ", "/bin/sh -c ", "sh -c "} {
		if rest, ok := strings.CutPrefix(cmd, sh); ok {
			return strings.Trim(rest, `'"`)
		}
	}
	return cmd
}
