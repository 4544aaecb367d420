package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/kind"
)

// observed is what Observe saw of the codex binary: World.Vendor's shape.
type observed struct {
	// DefaultModel is the slug the plan uses when --model is not given:
	// the bundled catalog's listed entry of lowest priority, which is the
	// one the pinned app-server picks with no model configured.
	DefaultModel string `json:"default_model"`
	// Model is the bundled catalog entry of the slug the run uses,
	// verbatim; absent when that slug is not in the bundle (codex then
	// runs it on fallback metadata, which offers only the run's tools).
	Model json.RawMessage `json:"model,omitempty"`
}

// entryFields are the fields of a bundled catalog entry in the pinned
// Codex. Each either leaves the tools the model is offered alone or is
// neutralised (neutralised, below) or switched off by config.toml
// (shell_type, supports_search_tool, web_search_tool_type). An entry with a
// field not listed here may offer the model something this build has not
// seen, so its slug is refused rather than run unconstrained.
var entryFields = []string{
	"additional_speed_tiers", "apply_patch_tool_type", "availability_nux", "base_instructions", "comp_hash",
	"context_window", "default_reasoning_level", "default_reasoning_summary", "default_service_tier",
	"default_verbosity", "description", "display_name", "effective_context_window_percent",
	"experimental_supported_tools", "include_apps_usage_instructions", "include_plugin_usage_instructions",
	"include_skills_usage_instructions", "input_modalities", "max_context_window", "model_messages",
	"model_specialty", "multi_agent_reasoning_effort", "multi_agent_version", "node_repl_auto_review_required",
	"node_repl_disabled", "priority", "service_tiers", "shell_type", "slug", "support_verbosity",
	"supported_in_api", "supported_reasoning_levels", "supports_experimental_context",
	"supports_image_detail_original", "supports_reasoning_effort_updates", "supports_search_tool",
	"tool_mode", "truncation_policy", "upgrade", "use_responses_lite", "visibility", "web_search_tool_type",
}

// neutralised are the entry's fields that add tools no config key removes,
// and the value the override gives each: code mode's JavaScript exec
// (tool_mode), the multi-agent tools and the experimental extras. The
// freeform apply_patch (apply_patch_tool_type) goes too unless native tools
// are on, where it is how the model edits files.
func neutralised(native bool) map[string]json.RawMessage {
	n := map[string]json.RawMessage{
		"tool_mode": json.RawMessage("null"), "multi_agent_version": json.RawMessage("null"),
		"experimental_supported_tools": json.RawMessage("[]"),
	}
	if !native {
		n["apply_patch_tool_type"] = json.RawMessage("null")
	}
	return n
}

// catalogOverride is the model_catalog_json the plan writes: the bundled
// entry with the neutralised fields overridden, as {"models":[entry]}. A
// field outside entryFields is refused by name.
func catalogOverride(slug string, entry json.RawMessage, native bool) (string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(entry, &fields); err != nil {
		return "", fmt.Errorf("internal: the bundled catalog entry of %s is not a JSON object: %w", slug, err)
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(entryFields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return "", exit.Refuse(RefuseModelUnconstrained, "--model %s: its catalog entry in the installed codex carries %s, which codex %s did not have, so this build cannot tell what it offers the model beside the run's tools; run the pinned codex or another model",
			slug, strings.Join(unknown, ", "), Pin)
	}
	for k, v := range neutralised(native) {
		fields[k] = v
	}
	b, err := json.Marshal(map[string]any{"models": []any{fields}})
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

// maxModelsOutput bounds what `debug models --bundled` may print (0.169.0
// prints about 750 KB).
const maxModelsOutput = 16 << 20

// Observe finds the native binary behind an npm wrapper, then reads the
// bundled model catalog (`codex debug models --bundled`, no network, no
// credential) for the slug the run will use. Both are facts about the
// installed binary, taken before the plan so that the plan stays pure.
func (Kind) Observe(ctx context.Context, spec *kind.Spec, w *kind.World) error {
	native, err := nativeBinary(w.Binary)
	if err != nil {
		return err
	}
	// The binary where it is installed: it finds its bundled bwrap and rg
	// beside itself, and a confined child sees its install, not the link.
	if w.Binary, err = filepath.EvalSymlinks(native); err != nil {
		return err
	}
	probe := filepath.Join(w.Scratch, "codex-probe")
	if err := os.Mkdir(probe, 0o700); err != nil {
		return exit.Wrap(kind.RefuseScratchWrite, err, "creating %s", probe)
	}
	defer os.RemoveAll(probe)
	models, err := bundledModels(ctx, w.Binary, []string{"PATH=" + kind.ChildPath(w.Env["HOME"]), "HOME=" + probe, "CODEX_HOME=" + probe})
	if err != nil {
		return err
	}
	obs, err := observe(models, spec.Model)
	if err != nil {
		return err
	}
	w.Vendor, err = json.Marshal(obs)
	return err
}

// observe picks the default slug and the run's entry out of the bundle.
func observe(models []json.RawMessage, model string) (*observed, error) {
	obs := &observed{}
	best := 0
	for _, m := range models {
		var e struct {
			Slug       string `json:"slug"`
			Priority   int    `json:"priority"`
			Visibility string `json:"visibility"`
		}
		if json.Unmarshal(m, &e) != nil || e.Slug == "" {
			return nil, exit.Refuse(RefuseModelsUnreadable, "`codex debug models --bundled` listed an entry with no slug; the installed codex does not look like %s", Pin)
		}
		if e.Visibility == "list" && (obs.DefaultModel == "" || e.Priority < best) {
			obs.DefaultModel, best = e.Slug, e.Priority
		}
	}
	if model == "" {
		model = obs.DefaultModel
	}
	for _, m := range models {
		var e struct {
			Slug string `json:"slug"`
		}
		_ = json.Unmarshal(m, &e)
		if e.Slug == model {
			obs.Model = m
		}
	}
	if obs.DefaultModel == "" {
		return nil, exit.Refuse(RefuseModelsUnreadable, "`codex debug models --bundled` listed no model, so the default slug cannot be planned; pass --model")
	}
	return obs, nil
}

func bundledModels(ctx context.Context, binary string, env []string) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "debug", "models", "--bundled")
	cmd.Env = env
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, exit.Wrap(RefuseModelsUnreadable, err, "running %s debug models --bundled", binary)
	}
	data, readErr := io.ReadAll(io.LimitReader(out, maxModelsOutput+1))
	waitErr := cmd.Wait()
	if readErr != nil || waitErr != nil || len(data) > maxModelsOutput {
		first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		return nil, exit.Refuse(RefuseModelsUnreadable, "%s debug models --bundled did not print the bundled catalog (%v %v, %d bytes; stderr %q); the catalog override that keeps the model to the run's tools is made from it",
			binary, waitErr, readErr, len(data), first)
	}
	var doc struct {
		Models []json.RawMessage `json:"models"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, exit.Wrap(RefuseModelsUnreadable, err, "%s debug models --bundled printed something other than {\"models\":[…]}", binary)
	}
	return doc.Models, nil
}

// nativeBinary is binary itself, unless it is the npm package's node
// wrapper (bin/codex.js, or any node script), whose native binary for this
// platform npm installs beside it.
func nativeBinary(binary string) (string, error) {
	f, err := os.Open(binary)
	if err != nil {
		return "", err
	}
	head := make([]byte, 128)
	n, _ := io.ReadFull(f, head)
	f.Close()
	first, _, _ := strings.Cut(string(head[:n]), "\n")
	real, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(real, "/bin/codex.js") && (!strings.HasPrefix(first, "#!") || !strings.Contains(first, "node")) {
		return binary, nil
	}
	pkg := filepath.Dir(filepath.Dir(real)) // …/@openai/codex
	rel := filepath.Join("@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
	for _, c := range []string{
		filepath.Join(pkg, "node_modules", rel),             // nested install
		filepath.Join(filepath.Dir(filepath.Dir(pkg)), rel), // hoisted beside it
	} {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		}
	}
	return "", exit.Refuse(RefuseNativeBinaryMissing, "%s is codex's node wrapper (%s), and its native binary is not where npm installs it; run scripts/install-node-tools --link, which links the native binary into ~/.local/bin", binary, real)
}
