package kinds

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/launcher/kind"
)

// TestTable: each row's name is unique, agrees with its descriptor's
// adapter id, and names a binary and a pin.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range table {
		d := k.Descriptor()
		if seen[d.Name] {
			t.Errorf("kind %s is in the table twice", d.Name)
		}
		seen[d.Name] = true
		if d.Capabilities == nil || d.Capabilities.Adapter.ID != d.Name {
			t.Errorf("kind %s: its capabilities name another adapter", d.Name)
		}
		if d.Binary == "" || len(d.Capabilities.VersionsPinned) == 0 {
			t.Errorf("kind %s names no binary or pin", d.Name)
		}
		if got, ok := Lookup(d.Name); !ok || got.Descriptor().Name != d.Name {
			t.Errorf("Lookup(%s) = %v, %v", d.Name, got, ok)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("an unknown kind was found")
	}
	if got := Names(); !slices.Equal(got, []string{"claude", "codex", "gemini", "b10x"}) {
		t.Errorf("Names() = %v", got)
	}
	if got := Spelled(Names()); got != "claude, codex, gemini or b10x" {
		t.Errorf("Spelled = %q", got)
	}
}

// TestDescriptorsAgree: what a descriptor says as data agrees with what
// the kind is: a kind whose capabilities carry no catalogue says why, a
// kind with no loopback environment refuses --credentials loopback, and a
// decision mode a kind lacks is refused with a reason.
func TestDescriptorsAgree(t *testing.T) {
	for _, k := range table {
		d := k.Descriptor()
		if (d.Capabilities.CatalogueRendering == nil) != (d.Catalogue.NotCarried != "") {
			t.Errorf("%s: the catalogue rendering and the carriage disagree", d.Name)
		}
		if _, ok := k.(kind.LoopbackClient); !ok && d.Rules.Credentials["loopback"] == "" {
			t.Errorf("%s has no loopback environment and does not refuse --credentials loopback", d.Name)
		}
		for mode, st := range d.Capabilities.DecisionModes {
			if st == kind.Absent && d.Rules.NoDecisions == "" {
				t.Errorf("%s lacks --decisions %s and gives no reason", d.Name, mode)
			}
		}
	}
}

// TestEachKindsMemoryShapes walks one tree with each kind's own shapes.
func TestEachKindsMemoryShapes(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"CLAUDE.md", "AGENTS.override.md",
		"a/CLAUDE.local.md", "a/.claude/CLAUDE.md", "a/.claude/rules/style.md", "a/.claude/rules/notes.txt",
		"a/copy/AGENTS.md", "a/copy/CLAUDE.md", "a/copy/sub/CLAUDE.md"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# memory\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	under := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if rel, ok := strings.CutPrefix(p, root+"/"); ok {
				out = append(out, rel)
			}
		}
		return out
	}
	for kind, want := range map[string][2][]string{
		"claude": {{"a/CLAUDE.local.md", "a/.claude/CLAUDE.md", "a/.claude/rules/style.md", "CLAUDE.md"}, {"a/copy/CLAUDE.md", "a/copy/AGENTS.md"}},
		"codex":  {{"AGENTS.override.md", "CLAUDE.md"}, {"a/copy/AGENTS.md", "a/copy/CLAUDE.md"}},
		"b10x":   {{"CLAUDE.md"}, {"a/copy/CLAUDE.md", "a/copy/AGENTS.md"}},
	} {
		k, _ := Lookup(kind)
		w, err := attest.WalkMemory(k.Descriptor().Memory.Shapes, filepath.Join(root, "a", "copy"))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want[0], under(w.Above)); d != "" {
			t.Errorf("%s above (-want +got):\n%s", kind, d)
		}
		if d := cmp.Diff(want[1], under(w.AtRoot)); d != "" {
			t.Errorf("%s at root (-want +got):\n%s", kind, d)
		}
	}
}
