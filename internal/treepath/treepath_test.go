package treepath

import (
	"os"
	"path/filepath"
	"strings"
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

// TestHops: a chain's every link at its own place and its end, through a
// linked directory on the way and a relative link; a part not there yet
// ends the walk; a loop is an error.
func TestHops(t *testing.T) {
	root := Real(t.TempDir())
	for _, d := range []string{"bin", "d/real", "opt"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "d/real/claude.exe"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for link, to := range map[string]string{
		"bin/claude":   filepath.Join(root, "d/claude"), // absolute, into d
		"d/claude":     "real/claude.exe",               // relative, its middle
		"opt/bin":      "../bin",                        // a linked directory on the way
		"bin/loop":     "loop",
		"bin/dangling": "gone/x",
	} {
		if err := os.Symlink(to, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Hops(filepath.Join(root, "opt/bin/claude"))
	want := []string{filepath.Join(root, "opt/bin"), filepath.Join(root, "bin/claude"), filepath.Join(root, "d/claude"), filepath.Join(root, "d/real/claude.exe")}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Hops = %q %v, want %q", got, err, want)
	}
	if got, err := Hops(filepath.Join(root, "bin/dangling")); err != nil || len(got) != 2 || got[1] != filepath.Join(root, "bin/gone/x") {
		t.Errorf("a dangling link: %q %v", got, err)
	}
	if _, err := Hops(filepath.Join(root, "bin/loop")); err == nil {
		t.Error("a loop of links was walked")
	}
}
