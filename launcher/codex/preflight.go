package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/internal/newfile"
	"github.com/metaharness/metaharness/launcher/kind"
)

// Preflight puts the written scratch config to the binary itself:
// `app-server --strict-config --print-startup-config`, in the launch's
// environment and directory, loads the configuration the way the session
// will and exits without serving. A config it rejects is refused naming
// the file, the line and the key, before any session starts.
func (Kind) Preflight(ctx context.Context, plan *kind.Plan) error {
	return preflight(ctx, plan)
}

func preflight(ctx context.Context, plan *kind.Plan) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, plan.Program, "app-server", "--strict-config", "--print-startup-config")
	cmd.Env, cmd.Dir = plan.Env, plan.Dir
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		AppServerVersion string `json:"appServerVersion"`
		Error            *struct {
			Message string `json:"message"`
			Data    struct {
				FilePath string `json:"filePath"`
				Line     int    `json:"line"`
				Column   int    `json:"column"`
				Detail   string `json:"detail"`
			} `json:"data"`
		} `json:"error"`
	}
	parsed := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out) == nil
	switch {
	case parsed && out.Error != nil:
		d := out.Error.Data
		what := out.Error.Message
		if d.Detail != "" {
			what = d.Detail
		}
		return exit.Refuse(RefuseConfigRejected, "%s app-server --strict-config rejected the planned config (%s:%d:%d): %s; nothing was started, and this build of metaharness writes that file, so report it",
			plan.Program, d.FilePath, d.Line, d.Column, what)
	case runErr == nil && parsed && out.AppServerVersion != "":
		return nil
	}
	first, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	return exit.Refuse(RefuseConfigRejected, "%s app-server --strict-config --print-startup-config did not load the planned config (%v; stderr %q); nothing was started",
		plan.Program, runErr, first)
}

// ProbeFlags puts the widest config the plan writes (a catalogue, loopback,
// --cwd, an effort, a context block) for the installed binary's default
// model to that binary's --strict-config, the way a run's preflight does.
func (k Kind) ProbeFlags(ctx context.Context, binary, callerHome, scratch string) ([]string, []string, error) {
	spec := &kind.Spec{Kind: "codex", Prompt: "doctor", Credentials: kind.CredentialsNone, Decisions: "frame", Hermetic: "off",
		Effort: "low", Cwd: filepath.Join(scratch, "work"), Catalogue: "doctor.yaml"}
	w := &kind.World{
		Env: map[string]string{"HOME": callerHome}, Scratch: scratch, Binary: binary, Self: filepath.Join(scratch, "metaharness"),
		DecisionSocket: filepath.Join(scratch, "decisions.sock"), CatalogueCopy: filepath.Join(scratch, "catalogue.json"),
		CatalogueTools: []string{"read_file"}, Context: "doctor",
		CatalogueDecls: []kind.ToolDecl{{Name: "read_file", Summary: "doctor", Input: json.RawMessage(`{"type":"object"}`)}},
	}
	for _, d := range []string{"home", "tmp", "work"} {
		if err := os.MkdirAll(filepath.Join(scratch, d), 0o700); err != nil {
			return nil, nil, err
		}
	}
	if err := k.Observe(ctx, spec, w); err != nil {
		return nil, []string{err.Error()}, nil
	}
	plan, err := Plan(spec, w)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range plan.Dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range plan.Files {
		if err := newfile.Write(f.Path, []byte(f.Content), os.FileMode(f.Mode)); err != nil {
			return nil, nil, err
		}
	}
	checked := []string{"app-server --strict-config on the planned config.toml for " + w.Binary + " (model " + modelOf(plan) + ")"}
	if err := preflight(ctx, plan); err != nil {
		return checked, []string{err.Error()}, nil
	}
	return checked, nil, nil
}

// modelOf is the model the plan's config names.
func modelOf(plan *kind.Plan) string {
	for _, f := range plan.Files {
		if strings.HasSuffix(f.Path, "/"+sessionFile) {
			var o Opening
			if json.Unmarshal([]byte(f.Content), &o) == nil {
				return o.ThreadStart.Model
			}
		}
	}
	return "(unknown)"
}
