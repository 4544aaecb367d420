package treepath

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWithin: inside and outside as the kernel resolves them, through a
// link either way, for a path not there yet, and not fooled by a sibling
// whose name begins with the tree's.
func TestWithin(t *testing.T) {
	root := t.TempDir()
	tree, outside := filepath.Join(root, "tree"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(tree, "sub"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"into": filepath.Join(tree, "sub"), "tree-link": tree, "away": outside} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		p, tree string
		want    bool
	}{
		{tree, tree, true},
		{filepath.Join(tree, "sub", "new.json"), tree, true},
		{filepath.Join(root, "into", "new", "deeper.json"), tree, true},
		{filepath.Join(tree, "sub"), filepath.Join(root, "tree-link"), true},
		{filepath.Join(root, "away", "x"), tree, false},
		{filepath.Join(root, "tree.json"), tree, false},
		{filepath.Join(root, "treeish", "x"), tree, false},
		{tree, filepath.Join(tree, "sub"), false},
	} {
		if got := Within(c.p, c.tree); got != c.want {
			t.Errorf("Within(%s, %s) = %t, want %t", c.p, c.tree, got, c.want)
		}
	}
	if got := Real(filepath.Join(root, "into", "not-yet")); got != filepath.Join(Real(tree), "sub", "not-yet") {
		t.Errorf("Real of a path not there yet through a link: %s", got)
	}
}
