package launcher

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/internal/gitindex/gittest"
	"github.com/metaharness/metaharness/launcher/kind"
)

// TestGitSealPlainClone: in a plain clone the config and hooks are sealed,
// a core.hooksPath inside the tree too; what was absent is watched; at the
// end, a .git/commondir the child made (which would send the operator's
// git to a config of its making) is moved aside and named, and so is a
// submodule the index did not name before.
func TestGitSealPlainClone(t *testing.T) {
	repo := gittest.Repo(t, map[string]string{"README": "hi\n", ".husky/pre-commit": "true\n"}, true)
	gittest.Git(t, repo, "config", "core.hooksPath", ".husky")
	w := &kind.World{}
	s := observeGitSeal(repo, nil, w)
	for _, want := range []string{".git/config", ".git/hooks", ".husky"} {
		if !slices.Contains(w.GitSeal, filepath.Join(repo, want)) {
			t.Errorf("%s is not sealed: %q", want, w.GitSeal)
		}
	}
	if len(s.changes()) != 0 {
		t.Fatalf("changes before anything changed: %v", s.changes())
	}
	sub := gittest.Repo(t, map[string]string{"x": "y\n"}, true)
	gittest.Git(t, repo, "update-index", "--add", "--cacheinfo", "160000,"+strings.TrimSpace(gittest.Git(t, sub, "rev-parse", "HEAD"))+",evil")
	commondir := filepath.Join(repo, ".git", "commondir")
	if err := os.WriteFile(commondir, []byte("/tmp/elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes := s.changes()
	var words []string
	for _, c := range changes {
		if c.Code != attest.GitSealBroken {
			t.Errorf("code %s", c.Code)
		}
		words = append(words, c.Message)
	}
	all := strings.Join(words, "\n")
	if len(changes) != 2 || !strings.Contains(all, commondir+" is not what it was when the run began (then absent, now file") ||
		!strings.Contains(all, "moved it aside to "+commondir+".metaharness-quarantine") || !strings.Contains(all, "names a submodule evil") {
		t.Errorf("changes:\n%s", all)
	}
	if _, err := os.Lstat(commondir); err == nil {
		t.Error("the commondir the child made is still where git reads it")
	}
}

// TestGitSealLinkedWorktree: a linked worktree's .git file and its git
// directory's links back and config are sealed; a link in the seal is
// named as one no bind holds.
func TestGitSealLinkedWorktree(t *testing.T) {
	_, wt := linkedWorktree(t)
	g, err := findGitDirs(wt)
	if err != nil {
		t.Fatal(err)
	}
	w := &kind.World{}
	observeGitSeal(wt, g, w)
	for _, want := range []string{filepath.Join(wt, ".git"), filepath.Join(g.GitDir, "commondir"), filepath.Join(g.GitDir, "gitdir")} {
		if !slices.Contains(w.GitSeal, want) {
			t.Errorf("%s is not sealed: %q", want, w.GitSeal)
		}
	}
	if err := os.Symlink("/tmp/hooks-elsewhere", filepath.Join(g.GitDir, "hooks")); err != nil {
		t.Fatal(err)
	}
	w = &kind.World{}
	observeGitSeal(wt, g, w)
	if !slices.Equal(w.GitUnsealable, []string{filepath.Join(g.GitDir, "hooks")}) {
		t.Errorf("unsealable %q", w.GitUnsealable)
	}
	if observeGitSeal(t.TempDir(), nil, &kind.World{}) != nil {
		t.Error("a tree with no .git has a seal")
	}
}
