// Package treepath says whether a path lies in a tree, compared as the
// kernel resolves them, so that a symbolic link cannot hide a path inside a
// tree (a record file or an audit spec in the tree the child may write, a
// git directory inside the worktree) or make one seem inside that is not.
package treepath

import (
	"fmt"
	"os"
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

// Hops are the paths the kernel reads, resolving p, that decide where it
// leads: every symbolic link on the way, at its own place (its directory
// resolved, the link itself not), and the file it ends at. Whoever may
// write any of them may send p elsewhere: a link in the middle of a chain
// counts as much as its first and last. A part not there yet ends the
// walk with the path it would have. An error: more links than the kernel
// follows, or a link that cannot be read.
func Hops(p string) ([]string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return nil, err
	}
	var hops []string
	cur, rest := "/", strings.Split(strings.TrimPrefix(p, "/"), "/")
	for links := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			return append(hops, filepath.Join(append([]string{next}, rest...)...)), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > 40 { // the kernel's own bound on one lookup
			return nil, fmt.Errorf("%s: too many levels of symbolic links", p)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return nil, err
		}
		hops = append(hops, next)
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(strings.TrimPrefix(target, "/"), "/"), rest...)
	}
	return append(hops, cur), nil
}
