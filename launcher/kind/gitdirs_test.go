package kind

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metaharness/metaharness/confine"
)

// TestBindGit: bound into a view, a linked worktree's git directory and
// the directories git writes to commit are writable, the rest of the
// common directory read-only, and H7's words say so.
func TestBindGit(t *testing.T) {
	common := "/srv/repo/.git"
	g := &GitDirs{GitDir: filepath.Join(common, "worktrees", "wt-1"), Common: common,
		Writable: []string{filepath.Join(common, "objects"), filepath.Join(common, "refs"), filepath.Join(common, "logs")}}
	c := &confine.Spec{}
	bindGit(c, &World{Git: g})
	if !slices.Equal(c.ReadOnly, []string{common}) || !slices.Contains(c.Writable, g.GitDir) || !slices.Contains(c.Writable, filepath.Join(common, "refs")) || slices.Contains(c.Writable, common) {
		t.Errorf("bound read-only %v, writable %v", c.ReadOnly, c.Writable)
	}
	words := gitWords(g)
	for _, w := range []string{g.GitDir, "read-only", "can move any branch"} {
		if !strings.Contains(words, w) {
			t.Errorf("H7's words %q do not say %q", words, w)
		}
	}
}
