package b10x

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/frame"
	"github.com/metaharness/metaharness/internal/inputfile"
	"github.com/metaharness/metaharness/internal/jsonscan"
	"github.com/metaharness/metaharness/launcher/b10x/hook"
	"github.com/metaharness/metaharness/launcher/kind"
)

// The loop's hooks file (docs/b10x-hooks.md): under --decisions frame and
// ask the plan writes one of its own, whose first declaration is
// metaharness's before-call hook for every tool and whose rest is the
// caller's --hooks file, every declaration in its order. The loop runs a
// point's hooks in file order and the first block or failure is the
// answer, so every call the loop's approver admits is decided by
// metaharness before any other program sees it, and a caller's hook after
// it can only narrow further.

// HooksVersion is the one version of the file the loop reads.
const HooksVersion = 1

// HookPoints are the points a declaration may name; tools filters only the
// first two, which are about a call.
var HookPoints = []string{"before-call", "after-call", "stop", "transition"}

// maxHooksFile bounds the caller's hooks file: a list of argvs.
const maxHooksFile = 1 << 20

// HooksFile is a hooks file as the loop reads it.
type HooksFile struct {
	Version int        `json:"version"`
	Hooks   []HookDecl `json:"hooks"`
}

// HookDecl is one declaration: the point, the invoked entries it is about
// (absent: every call) and the argv the loop spawns.
type HookDecl struct {
	On      string   `json:"on"`
	Tools   []string `json:"tools,omitempty"`
	Command []string `json:"command"`
}

// Observed is what the kind reads before planning (World.Vendor): the
// caller's hook declarations, which the plan merges behind its own.
type Observed struct {
	CallerHooks []HookDecl `json:"caller_hooks"`
}

// decides reports whether metaharness decides the loop's calls in spec's
// mode, through its hook.
func decides(spec *kind.Spec) bool {
	return spec.Decisions == frame.ModeFrame || spec.Decisions == frame.ModeAsk
}

// Observe reads the caller's --hooks file when metaharness merges it
// (frame and ask), held to the rules the loop refuses a file by, so that
// the merged file is one the loop reads: a refusal names the path.
func (Kind) Observe(_ context.Context, spec *kind.Spec, w *kind.World) error {
	path := flagsOf(spec).Hooks
	if !decides(spec) || path == "" {
		return nil
	}
	b, err := inputfile.Read(path, maxHooksFile)
	if err != nil {
		return exit.Within(RefuseHooksFileInvalid, err, "--hooks: %v, and under --decisions %s metaharness reads it to merge it behind its own hook; name a readable regular file of at most %d bytes", err, spec.Decisions, maxHooksFile)
	}
	hooks, err := ParseHooks(b)
	if err != nil {
		return exit.Refuse(RefuseHooksFileInvalid, "--hooks %s is not a hooks file the loop reads (%v), and under --decisions %s metaharness merges it behind its own hook; fix the file, or run without --hooks", path, err, spec.Decisions)
	}
	w.Vendor, _ = json.Marshal(Observed{CallerHooks: hooks})
	return nil
}

// ParseHooks reads a hooks file by the loop's rules (its hooks.rs parse):
// version 1; unknown keys refused; a known point; a non-empty argv; a
// tools list, when given, not empty and only on a call's point.
func ParseHooks(b []byte) ([]HookDecl, error) {
	var f struct {
		Version *int        `json:"version"`
		Hooks   *[]HookDecl `json:"hooks"`
	}
	if err := jsonscan.Decode(b, &f, jsonscan.Options{RefuseUnknown: true}); err != nil {
		return nil, err
	}
	switch {
	case f.Version == nil:
		return nil, fmt.Errorf("it declares no version")
	case *f.Version != HooksVersion:
		return nil, fmt.Errorf("it declares version %d and the loop reads version %d", *f.Version, HooksVersion)
	case f.Hooks == nil:
		return nil, fmt.Errorf("it has no hooks list")
	}
	for i, h := range *f.Hooks {
		n := i + 1
		switch {
		case !slices.Contains(HookPoints, h.On):
			return nil, fmt.Errorf("hook %d fires %q, which is not one of the loop's points (%s)", n, h.On, strings.Join(HookPoints, ", "))
		case len(h.Command) == 0:
			return nil, fmt.Errorf("hook %d declares an empty command; it must name a program, as an argv", n)
		case h.Tools != nil && len(h.Tools) == 0:
			return nil, fmt.Errorf("hook %d declares an empty tools list, which would match no call; omit it to mean every call", n)
		case h.Tools != nil && (h.On == "stop" || h.On == "transition"):
			return nil, fmt.Errorf("hook %d is a %s hook and declares tools, which only a call's point reads", n, h.On)
		}
	}
	return *f.Hooks, nil
}

// hooksPath is where the plan writes the merged file.
func hooksPath(w *kind.World) string { return filepath.Join(w.Scratch, "hooks.json") }

// mergedHooks is the file the loop is given under frame and ask:
// metaharness's hook first, then what the caller's file declared.
func mergedHooks(w *kind.World) (string, []HookDecl, error) {
	var seen Observed
	if len(w.Vendor) > 0 {
		if err := json.Unmarshal(w.Vendor, &seen); err != nil {
			return "", nil, fmt.Errorf("the observed hooks: %w", err)
		}
	}
	ours := HookDecl{On: "before-call", Command: append([]string{w.Self}, hook.Args(w.DecisionSocket)...)}
	b, err := json.Marshal(HooksFile{Version: HooksVersion, Hooks: append([]HookDecl{ours}, seen.CallerHooks...)})
	if err != nil {
		return "", nil, err
	}
	return string(b) + "\n", seen.CallerHooks, nil
}
