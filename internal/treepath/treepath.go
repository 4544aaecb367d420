// Package treepath says whether a path lies in a tree, compared as the
// kernel resolves them, so that a symbolic link cannot hide a path inside a
// tree (a record file or an audit spec in the tree the child may write, a
// git directory inside the worktree) or make one seem inside that is not.
package treepath

import (
	"path/filepath"
	"strings"
)

// Real is p made absolute with every symbolic link on the part of it that
// exists resolved: a file not there yet is judged by the directory it would
// be made in. A path that cannot be made absolute is returned cleaned.
func Real(p string) string {
	p, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}

// Within reports whether p is tree or lies below it, both Real.
func Within(p, tree string) bool {
	p, tree = Real(p), Real(tree)
	return p == tree || strings.HasPrefix(p, strings.TrimSuffix(tree, "/")+"/")
}
