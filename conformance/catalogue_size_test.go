package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/exit"
	"github.com/metaharness/metaharness/launcher/claude"
	"github.com/metaharness/metaharness/launcher/codex"
	"github.com/metaharness/metaharness/launcher/contextfile"
	"github.com/metaharness/metaharness/launcher/kind"
)

// planWithEntries plans the vector at path with its catalogue replaced by n
// entries, each published under a name of the longest length a rendering
// may have (64 characters) and declared with a three-field schema.
func planWithEntries(t *testing.T, path string, n int) (*kind.Plan, *C1Refusal) {
	t.Helper()
	v, err := LoadC1(path)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]any
	if err := json.Unmarshal(v.World, &w); err != nil {
		t.Fatal(err)
	}
	var tools []string
	var decls []kind.ToolDecl
	for i := range n {
		name := fmt.Sprintf("tool%d_", i)
		name += strings.Repeat("x", 64-len(name))
		tools = append(tools, name)
		decls = append(decls, kind.ToolDecl{Name: name, Summary: "Read a file of the team's tree, from the workspace root.",
			Input: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"The file's path."},"offset":{"type":"integer"},"limit":{"type":"integer"}},"required":["path"],"additionalProperties":false}`)})
	}
	w["catalogue_tools"], w["catalogue_decls"] = tools, decls
	if v.World, err = json.Marshal(w); err != nil {
		t.Fatal(err)
	}
	plan, refusal, err := PlanC1(v)
	if err != nil {
		t.Fatal(err)
	}
	return plan, refusal
}

// argvFits is the check the run makes before anything is written or
// spawned: every argument within MAX_ARG_STRLEN.
func argvFits(p *kind.Plan) error {
	return contextfile.CheckArgSizes(append([]string{p.Program}, p.Args...), nil)
}

// TestLaunchWithAThousandEntries: a catalogue of 1000 entries, each under
// a 64-character name, fits both kinds' launches. Claude Code is told each
// name in --allowedTools, one argument that stays within Linux's 131072
// bytes up to 1579 such names (18 bytes of prefix, the name, a comma) and
// is refused, naming the flag, at 1580; its settings and MCP config do not
// grow. Codex is told them at thread/start in the session file, and its
// argv, environment and config.toml are the same as with one entry.
func TestLaunchWithAThousandEntries(t *testing.T) {
	const claudeVector, codexVector = "testdata/c1/claude/c1-catalogue.json", "testdata/c1/codex/c1-cwd.json"
	t.Run("claude", func(t *testing.T) {
		one, _ := planWithEntries(t, claudeVector, 1)
		many, _ := planWithEntries(t, claudeVector, 1000)
		if err := argvFits(many); err != nil {
			t.Fatal(err)
		}
		i := slices.Index(many.Args, "--allowedTools")
		if i < 0 {
			t.Fatal("no --allowedTools in the launch")
		}
		allowed := many.Args[i+1]
		if n := strings.Count(allowed, ",") + 1; n != 1000 || !strings.HasPrefix(allowed, claude.OwnedPrefix) {
			t.Errorf("--allowedTools lists %d tools, want 1000 under %s", n, claude.OwnedPrefix)
		}
		if len(allowed)+1 != 1000*(len(claude.OwnedPrefix)+64+1) {
			t.Errorf("--allowedTools is %d bytes with its NUL", len(allowed)+1)
		}
		if !slices.Equal(fileSizes(one), fileSizes(many)) {
			t.Errorf("the launch's files grew with the entries: %v, then %v", fileSizes(one), fileSizes(many))
		}
		most := contextfile.MaxArgStrlen / (len(claude.OwnedPrefix) + 64 + 1)
		if p, _ := planWithEntries(t, claudeVector, most); argvFits(p) != nil {
			t.Errorf("%d entries: %v", most, argvFits(p))
		}
		p, _ := planWithEntries(t, claudeVector, most+1)
		var r *exit.Refusal
		if err := argvFits(p); !errors.As(err, &r) || r.Name != contextfile.RefuseArgumentTooLong || !strings.Contains(r.Message, "(the value of --allowedTools)") {
			t.Errorf("%d entries: %v, want %s naming --allowedTools", most+1, err, contextfile.RefuseArgumentTooLong)
		}
	})
	t.Run("codex", func(t *testing.T) {
		one, _ := planWithEntries(t, codexVector, 1)
		many, _ := planWithEntries(t, codexVector, 1000)
		if err := argvFits(many); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one.Args, many.Args) || !slices.Equal(one.Env, many.Env) {
			t.Error("codex's argv or environment changed with the entries")
		}
		for i, f := range many.Files {
			if !strings.HasSuffix(f.Path, "/codex-session.json") {
				if f.Content != one.Files[i].Content {
					t.Errorf("%s changed with the entries", f.Path)
				}
				continue
			}
			var session codex.Opening
			if err := json.Unmarshal([]byte(f.Content), &session); err != nil || len(session.ThreadStart.DynamicTools) != 1000 {
				t.Errorf("the session declares %d dynamic tools (%v), want 1000", len(session.ThreadStart.DynamicTools), err)
			}
		}
	})
}

func fileSizes(p *kind.Plan) []int {
	var out []int
	for _, f := range p.Files {
		out = append(out, len(f.Content))
	}
	return out
}
