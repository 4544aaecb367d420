package attest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tree makes files (relative to a fresh root) and returns the root, with
// symlinks resolved so that expected paths match what the walk reports.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		p := filepath.Join(root, f)
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# memory\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// under keeps the paths inside root: whatever lies above the test's temp
// directory on this machine is not the test's business.
func under(root string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, root+"/") {
			out = append(out, strings.TrimPrefix(p, root+"/"))
		}
	}
	return out
}

// Loader rules shaped like the ones the kinds declare (launcher/<kind>;
// launcher/kinds walks the kinds' own): one whose launch keeps memory files
// above out, two whose loaders read them.
var (
	keepsOut = Memory{
		Shapes:  []string{"CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", ".claude/rules/*.md", "AGENTS.md"},
		KeptOut: `--setting-sources "" and a fresh scratch config home keep memory files out`,
		AtRoot:  `not loaded under --setting-sources ""`,
	}
	readsAbove = Memory{Shapes: []string{"AGENTS.md", "AGENTS.override.md", "CLAUDE.md"}}
	readsBoth  = Memory{Shapes: []string{"CLAUDE.md", "AGENTS.md"}}
)

func TestWalkMemoryFindsEveryShapeAboveAndAtRoot(t *testing.T) {
	root := tree(t,
		"CLAUDE.md", "AGENTS.override.md",
		"a/CLAUDE.local.md", "a/.claude/CLAUDE.md", "a/.claude/rules/style.md", "a/.claude/rules/notes.txt",
		"a/AGENTS.md/", // a directory named like a memory file is not one
		"a/copy/AGENTS.md", "a/copy/CLAUDE.md", "a/copy/sub/CLAUDE.md")
	copyDir := filepath.Join(root, "a", "copy")
	for _, c := range []struct {
		kind          string
		memory        Memory
		above, atRoot []string
	}{
		{"keeps out", keepsOut, []string{"a/CLAUDE.local.md", "a/.claude/CLAUDE.md", "a/.claude/rules/style.md", "CLAUDE.md"}, []string{"a/copy/CLAUDE.md", "a/copy/AGENTS.md"}},
		{"reads above", readsAbove, []string{"AGENTS.override.md", "CLAUDE.md"}, []string{"a/copy/AGENTS.md", "a/copy/CLAUDE.md"}},
		{"reads both", readsBoth, []string{"CLAUDE.md"}, []string{"a/copy/CLAUDE.md", "a/copy/AGENTS.md"}},
	} {
		w, err := WalkMemory(c.memory.Shapes, copyDir)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(c.above, under(root, w.Above)); d != "" {
			t.Errorf("%s above (-want +got):\n%s", c.kind, d)
		}
		if d := cmp.Diff(c.atRoot, under(root, w.AtRoot)); d != "" {
			t.Errorf("%s at root (-want +got):\n%s", c.kind, d)
		}
		if w.From != copyDir {
			t.Errorf("From %s, want %s", w.From, copyDir)
		}
	}
}

// TestWalkMemoryFollowsBothSpellings: the vendor's getcwd is the resolved
// directory, the caller's spelling may pass through a link; both ancestries
// are walked.
func TestWalkMemoryFollowsBothSpellings(t *testing.T) {
	root := tree(t, "real/ws/", "real/CLAUDE.md", "links/AGENTS.md")
	link := filepath.Join(root, "links", "ws")
	if err := os.Symlink(filepath.Join(root, "real", "ws"), link); err != nil {
		t.Fatal(err)
	}
	w, err := WalkMemory(readsBoth.Shapes, link)
	if err != nil {
		t.Fatal(err)
	}
	got := under(root, w.Above)
	slices.Sort(got)
	if d := cmp.Diff([]string{"links/AGENTS.md", "real/CLAUDE.md"}, got); d != "" {
		t.Errorf("above (-want +got):\n%s", d)
	}
}

func TestWalkMemoryRefusesWhatIsNotADirectory(t *testing.T) {
	root := tree(t, "file")
	for _, dir := range []string{filepath.Join(root, "file"), filepath.Join(root, "missing")} {
		if _, err := WalkMemory(keepsOut.Shapes, dir); err == nil || !strings.Contains(err.Error(), dir) {
			t.Errorf("WalkMemory(%s) = %v, want an error naming it", dir, err)
		}
	}
}

// TestAttestWorkdirThroughTheFloor builds H7 and H11 the way the launcher
// will, records them in an opening record, and reads the verdicts back.
func TestAttestWorkdirThroughTheFloor(t *testing.T) {
	above := MemoryWalk{From: "/c", Above: []string{"/CLAUDE.md"}}
	atRoot := MemoryWalk{From: "/c", AtRoot: []string{"/c/AGENTS.md"}}
	cases := []struct {
		name           string
		wd             Workdir
		h7, h11        string
		h7Has, h11Has  string
		ambient        []string
		strictExitCode int
	}{
		{"scratch cwd, nothing above", Workdir{Kind: "claude", Memory: keepsOut, Dir: "/c"}, OK, OK, "planned directory", "found no memory file", nil, 0},
		{"--cwd", Workdir{Kind: "codex", Memory: readsAbove, Dir: "/c", Operator: true, Walk: atRoot}, Gap, Gap,
			"could write to the operator's tree", "the walk found: /c/AGENTS.md", nil, 1},
		{"--scratch-cwd claude, memory above: reported, ok", Workdir{Kind: "claude", Memory: keepsOut, Dir: "/c", Operator: true, ScratchCwd: true, Walk: above}, OK, OK,
			"declared: --scratch-cwd", "reports above it: /CLAUDE.md", nil, 0},
		{"--scratch-cwd codex, memory above: a gap", Workdir{Kind: "codex", Memory: readsAbove, Dir: "/c", Operator: true, ScratchCwd: true, Walk: above}, OK, Gap,
			"declared", "codex loader reads memory files above /c", nil, 1},
		{"--scratch-cwd b10x, memory above: a gap", Workdir{Kind: "b10x", Memory: readsBoth, Dir: "/c", Operator: true, ScratchCwd: true, Walk: above}, OK, Gap,
			"declared", "found: /CLAUDE.md", nil, 1},
		{"--scratch-cwd, memory at the root: the copy's own", Workdir{Kind: "codex", Memory: readsAbove, Dir: "/c", Operator: true, ScratchCwd: true, Walk: atRoot}, OK, OK,
			"declared", "found no memory file", []string{"memory file /c/AGENTS.md at the root of /c: the tree's own, read by the vendor"}, 0},
		{"--scratch-cwd claude, memory at the root: the copy's own, not loaded", Workdir{Kind: "claude", Memory: keepsOut, Dir: "/c", Operator: true, ScratchCwd: true, Walk: atRoot}, OK, OK,
			"declared", "found no memory file", []string{`memory file /c/AGENTS.md at the root of /c: the tree's own, not loaded under --setting-sources ""`}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := cleanStarted()
			s.Cwd = sp("/c")
			claim := NewClaim(ModeStrict, "frame")
			for _, r := range s.Hermetic.Imposed {
				var id RowID
				if err := id.UnmarshalText([]byte(r.Row)); err != nil {
					t.Fatal(err)
				}
				if id != H7 && id != H11 {
					claim.Impose(id, r.How)
				}
			}
			AttestWorkdir(c.wd, claim)
			AttestWorkdir(c.wd, NewClaim("", "")) // no shared state between calls
			att := claim.Attestation()
			s.Hermetic = &att
			l := cleanLaunch()
			l.PlannedCwd = "/c"
			e := Evaluate(stream(s, ended()), l)
			h7, h11 := rowOf(t, e, H7), rowOf(t, e, H11)
			if h7.Verdict != c.h7 || !strings.Contains(h7.Detail, c.h7Has) {
				t.Errorf("H7 %s — %s\nwant %s with %q", h7.Verdict, h7.Detail, c.h7, c.h7Has)
			}
			if h11.Verdict != c.h11 || !strings.Contains(h11.Detail, c.h11Has) {
				t.Errorf("H11 %s — %s\nwant %s with %q", h11.Verdict, h11.Detail, c.h11, c.h11Has)
			}
			if d := cmp.Diff(c.ambient, att.AmbientInputs); d != "" {
				t.Errorf("ambient inputs (-want +got):\n%s", d)
			}
			if got := int(e.Exit(true, nil)); got != c.strictExitCode {
				t.Errorf("strict exit %d, want %d", got, c.strictExitCode)
			}
		})
	}
}

// TestWalkThenAttest joins the two halves on a real tree: a copy with a
// memory file above and one at its root.
func TestWalkThenAttest(t *testing.T) {
	root := tree(t, "AGENTS.md", "copy/AGENTS.md")
	dir := filepath.Join(root, "copy")
	w, err := WalkMemory(readsAbove.Shapes, dir)
	if err != nil {
		t.Fatal(err)
	}
	claim := NewClaim("", "")
	AttestWorkdir(Workdir{Kind: "codex", Memory: readsAbove, Dir: dir, Operator: true, ScratchCwd: true, Walk: w}, claim)
	att := claim.Attestation()
	if len(att.Unavailable) != 1 || att.Unavailable[0].Row != H11.String() || !strings.Contains(att.Unavailable[0].Why, filepath.Join(root, "AGENTS.md")) {
		t.Errorf("H11 should be unavailable naming %s/AGENTS.md: %+v", root, att.Unavailable)
	}
	if len(att.AmbientInputs) != 1 || !strings.Contains(att.AmbientInputs[0], filepath.Join(dir, "AGENTS.md")) {
		t.Errorf("ambient inputs %q should name the copy's own AGENTS.md", att.AmbientInputs)
	}
}
