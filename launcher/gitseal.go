package launcher

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaharness/metaharness/attest"
	"github.com/metaharness/metaharness/internal/gitindex"
	"github.com/metaharness/metaharness/internal/treepath"
	"github.com/metaharness/metaharness/launcher/kind"
	"github.com/metaharness/metaharness/record"
)

// gitSeal is what the operator's git runs or obeys in a --cwd tree, as it
// was when the run began: the child may write the tree, and whatever git
// executes for the operator after the run (a hook, core.fsmonitor in a
// config, a worktree's links to another git directory, a submodule's own
// git directory) must not be the child's. The child's view binds each
// path that is there read-only (kind.World.GitSeal); the wind-up holds
// every one, and each that was not there, to its state at the start, and
// the index to the submodules it named, and says what changed
// (attest.GitSealBroken, a gap on H7); what the child made where nothing
// was it moves aside, so that git reads what it read before.
type gitSeal struct {
	paths    []string          // every path watched, sealed or not
	was      map[string]string // each path's state at the start
	index    string            // the worktree's index file
	gitlinks []string          // the submodules the index named at the start
}

// gitSealFiles are, in a git directory, what git reads and runs for
// whoever uses the worktree.
var gitSealFiles = []string{"config", "config.worktree", "hooks", "commondir", "gitdir"}

// maxSealDepth bounds the walk for submodules' git directories under
// .git/modules (a submodule's own are beneath it).
const maxSealDepth = 8

// observeGitSeal finds what the operator's git runs or obeys in the --cwd
// tree cwd (g: its linked worktree's git directories, nil for a plain
// clone or none), notes each one's state, and puts into w the paths the
// child's view binds read-only and those it cannot. Nil when cwd is no
// git worktree.
func observeGitSeal(cwd string, g *kind.GitDirs, w *kind.World) *gitSeal {
	dotgit := filepath.Join(cwd, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return nil
	}
	s := &gitSeal{was: map[string]string{}}
	var gitDirs []string
	switch {
	case g != nil:
		s.paths = append(s.paths, dotgit)
		gitDirs = append(gitDirs, g.GitDir)
		s.index = filepath.Join(g.GitDir, "index")
	case fi.IsDir():
		gitDirs = append(gitDirs, dotgit)
		gitDirs = append(gitDirs, moduleGitDirs(filepath.Join(dotgit, "modules"), 0)...)
		s.index = filepath.Join(dotgit, "index")
	default:
		// A .git file naming a git directory metaharness does not bind
		// (GIT_DIR_NOT_BOUND): the file itself is all the child can change.
		s.paths = append(s.paths, dotgit)
	}
	for _, d := range gitDirs {
		for _, f := range gitSealFiles {
			s.paths = append(s.paths, filepath.Join(d, f))
		}
	}
	configs := []string{}
	for _, d := range gitDirs {
		configs = append(configs, filepath.Join(d, "config"), filepath.Join(d, "config.worktree"))
	}
	if g != nil {
		configs = append(configs, filepath.Join(g.Common, "config"))
	}
	for _, c := range configs {
		if h := hooksPath(c, cwd); h != "" && treepath.Within(h, cwd) {
			s.paths = append(s.paths, h)
		}
	}
	s.paths = slices.Compact(s.paths)
	for _, p := range s.paths {
		s.was[p] = stateOf(p)
		if fi, err := os.Lstat(p); err == nil {
			if fi.Mode()&fs.ModeSymlink != 0 {
				w.GitUnsealable = append(w.GitUnsealable, p)
			} else {
				w.GitSeal = append(w.GitSeal, p)
			}
		}
	}
	s.gitlinks = gitlinks(s.index)
	return s
}

// moduleGitDirs are the submodules' git directories under dir
// (.git/modules), each one holding a config, to depth maxSealDepth.
func moduleGitDirs(dir string, depth int) []string {
	if depth > maxSealDepth {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		if _, err := os.Lstat(filepath.Join(d, "config")); err == nil {
			out = append(out, d)
		}
		out = append(out, moduleGitDirs(d, depth+1)...)
	}
	return out
}

// hooksPath is core.hooksPath as config sets it, resolved against the
// worktree root cwd when relative, "" when it sets none. It reads the
// file's own [core] section only: an include is not followed.
func hooksPath(config, cwd string) string {
	b, err := os.ReadFile(config)
	if err != nil || len(b) > 1<<20 {
		return ""
	}
	var in, found string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(l, "["):
			in = strings.ToLower(strings.TrimSpace(strings.Trim(l, "[]")))
		case in == "core":
			k, v, ok := strings.Cut(l, "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "hooksPath") {
				found = strings.Trim(strings.TrimSpace(v), `"`)
			}
		}
	}
	if found == "" {
		return ""
	}
	if strings.HasPrefix(found, "~/") {
		return "" // the operator's own home, outside any tree the child writes
	}
	if !filepath.IsAbs(found) {
		found = filepath.Join(cwd, found)
	}
	return filepath.Clean(found)
}

// stateOf is a path's state in words that compare: absent, a link and its
// text, a file's digest, or a directory's entries and their states.
func stateOf(p string) string {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "absent"
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return "link to " + t
	case fi.IsDir():
		h := sha256.New()
		_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil || q == p {
				return nil
			}
			rel, _ := filepath.Rel(p, q)
			fmt.Fprintf(h, "%s\x00%s\x00", rel, stateOf(q))
			if d.IsDir() {
				return fs.SkipDir // stateOf took it whole
			}
			return nil
		})
		return "directory " + hex.EncodeToString(h.Sum(nil))
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			return "unreadable"
		}
		sum := sha256.Sum256(b)
		return fmt.Sprintf("file %o %s", fi.Mode().Perm(), hex.EncodeToString(sum[:]))
	}
	return "other " + fi.Mode().String()
}

// gitlinks are the submodules index names (entries of mode 160000).
func gitlinks(index string) []string {
	b, err := os.ReadFile(index)
	if err != nil {
		return nil
	}
	ix, err := gitindex.Parse(b)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ix.Entries {
		if e.Mode == 0o160000 {
			out = append(out, e.Name)
		}
	}
	return out
}

// changes are a warning for each path that is not what it was at the
// start, and for each submodule the index names now and did not then.
func (s *gitSeal) changes() []*record.Warning {
	if s == nil {
		return nil
	}
	var out []*record.Warning
	for _, p := range s.paths {
		now := stateOf(p)
		if now == s.was[p] {
			continue
		}
		msg := fmt.Sprintf("%s is not what it was when the run began (then %s, now %s): the operator's git runs or obeys it", p, s.was[p], now)
		if s.was[p] == "absent" {
			// Made by the child where nothing was (a plain clone's
			// .git/commondir, which sends git to a config of its making;
			// a hooks directory): moved aside, so that git finds what it
			// found before.
			aside := p + ".metaharness-quarantine"
			if err := os.Rename(p, aside); err == nil {
				msg += "; the run moved it aside to " + aside + ", so git no longer reads it: read it before you remove it"
			} else {
				msg += "; the run could not move it aside (" + err.Error() + "): do not run git in the worktree before removing it"
			}
		} else {
			msg += "; do not run git in the worktree before reading it"
		}
		out = append(out, &record.Warning{Code: attest.GitSealBroken, Message: msg})
	}
	for _, m := range gitlinks(s.index) {
		if !slices.Contains(s.gitlinks, m) {
			out = append(out, &record.Warning{Code: attest.GitSealBroken, Message: fmt.Sprintf(
				"the index names a submodule %s it did not name when the run began: git status in the worktree would run git in it, with whatever git directory and config the child made there; do not run git in the worktree before removing it", m)})
		}
	}
	return out
}
