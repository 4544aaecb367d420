package frame

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Write classes of a scope rule.
const (
	WriteAllowed     = "allowed"
	WritePartialOnly = "partial-only" // file.edit of what exists, never file.write
	WriteDenied      = "denied"
)

// ScopeRule says how writes under the paths its glob matches are treated.
// The glob is relative to the workspace, segments separated by "/": "*", "?"
// and "[…]" match within one segment as path.Match does, and a segment that
// is exactly "**" matches any number of segments, none included.
type ScopeRule struct {
	Paths string `json:"paths"`
	Write string `json:"write" jsonschema:"enum=allowed,enum=partial-only,enum=denied"`
}

// SubjectScope is where a frame's write operations may act: ordered rules,
// the first whose glob matches a path decides, and a path no rule matches is
// allowed. An empty scope restricts nothing. It governs file.write and
// file.edit only; what a shell may touch is a matter of admitting shell.
type SubjectScope []ScopeRule

func (s SubjectScope) validate() error {
	for i, r := range s {
		if _, err := compileGlob(r.Paths); err != nil {
			return fmt.Errorf("[%d].paths %q: %v", i, r.Paths, err)
		}
		switch r.Write {
		case WriteAllowed, WritePartialOnly, WriteDenied:
		default:
			return fmt.Errorf("[%d].write %q is not allowed, partial-only or denied", i, r.Write)
		}
	}
	return nil
}

// Class returns the write class of a workspace-relative path and the index
// of the rule that decided it (-1: no rule matched, so allowed). A path that
// is absolute or climbs with ".." is an error: it names a place outside what
// the scope can speak for.
func (s SubjectScope) Class(p string) (class string, rule int, err error) {
	segs, err := pathSegments(p)
	if err != nil {
		return "", -1, err
	}
	for i, r := range s {
		g, err := compileGlob(r.Paths)
		if err != nil {
			return "", -1, err // validated at load; cannot happen for a sealed frame
		}
		if g.match(segs) {
			return r.Write, i, nil
		}
	}
	return WriteAllowed, -1, nil
}

type glob []string

func compileGlob(p string) (glob, error) {
	if strings.TrimSpace(p) == "" {
		return nil, errors.New("the glob is blank")
	}
	if strings.HasPrefix(p, "/") {
		return nil, errors.New("the glob is absolute; globs are relative to the workspace")
	}
	segs := strings.Split(p, "/")
	for _, s := range segs {
		switch {
		case s == "" || s == ".":
			return nil, errors.New(`the glob has an empty or "." segment`)
		case s == "..":
			return nil, errors.New(`the glob climbs with ".."`)
		case s == "**":
		case strings.Contains(s, "**"):
			return nil, errors.New(`"**" must be a whole segment`)
		default:
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("segment %q: %v", s, err)
			}
		}
	}
	return glob(segs), nil
}

// match runs in time proportional to len(g)·len(segs), however many "**"
// the glob holds: done[j] says whether the glob so far can end at segs[:j].
func (g glob) match(segs []string) bool {
	done := make([]bool, len(segs)+1)
	done[0] = true
	for _, p := range g {
		next := make([]bool, len(segs)+1)
		for j := range done {
			if !done[j] {
				continue
			}
			if p == "**" {
				for k := j; k <= len(segs); k++ {
					next[k] = true
				}
				break
			}
			if j < len(segs) {
				if ok, _ := path.Match(p, segs[j]); ok {
					next[j+1] = true
				}
			}
		}
		done = next
	}
	return done[len(segs)]
}

// pathSegments splits a subject path as written into segments, reading "./"
// and repeated slashes away. It never resolves ".." or symlinks: a path that
// climbs is refused instead.
func pathSegments(p string) ([]string, error) {
	if strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("the path %q is absolute; a frame with a subject scope admits writes only to workspace-relative paths", p)
	}
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			return nil, fmt.Errorf("the path %q climbs with \"..\"; a frame with a subject scope admits writes only to paths that stay inside the workspace", p)
		default:
			segs = append(segs, s)
		}
	}
	return segs, nil
}
