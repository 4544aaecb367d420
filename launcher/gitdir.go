package launcher

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/metaharness/metaharness/internal/treepath"
	"github.com/metaharness/metaharness/launcher/kind"
)

// WarnGitDirNotBound: the --cwd is a git worktree whose .git file points
// at a git directory outside it that metaharness does not bind into the
// child's view; git cannot work there, and the warning says why.
const WarnGitDirNotBound = "GIT_DIR_NOT_BOUND"

// gitWrites are the directories of a common directory git writes when it
// commits in a linked worktree: new objects, the branch's ref and its log.
var gitWrites = []string{"objects", "refs", "logs"}

// findGitDirs reads the git directories of the worktree at cwd. It returns
// nil and no error when cwd's .git is not a file (no git, or a .git
// directory inside cwd, which the cwd's grant covers) or names a directory
// inside cwd, and an error
// naming why when the file leads to nothing metaharness will bind: the
// child writes cwd, so the file, and the back-links it names, are only
// trusted when they agree with each other the way git leaves them.
func findGitDirs(cwd string) (*kind.GitDirs, error) {
	dotgit := filepath.Join(cwd, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	target, err := gitLink(dotgit, "gitdir: ")
	if err != nil {
		return nil, err
	}
	gitDir, err := realDir(target, filepath.Dir(dotgit))
	if err != nil {
		return nil, fmt.Errorf("%s names %s, which is no directory here (%v)", dotgit, target, err)
	}
	if treepath.Within(gitDir, cwd) {
		return nil, nil
	}
	if err := looksLikeGitDir(gitDir, "HEAD"); err != nil {
		return nil, fmt.Errorf("%s names %s: %v", dotgit, gitDir, err)
	}
	common, err := gitLink(filepath.Join(gitDir, "commondir"), "")
	if os.IsNotExist(err) {
		// A whole repository (a submodule's, git init --separate-git-dir)
		// names no worktree back, so nothing tells it from one the child
		// pointed the file at.
		return nil, fmt.Errorf("%s names %s, a whole repository with no link back to this worktree, so metaharness cannot tell it from one the child pointed the file at; run the session in a linked worktree (git worktree add) or a clone", dotgit, gitDir)
	}
	commonDir, err := realDir(common, gitDir)
	if err != nil {
		return nil, fmt.Errorf("%s/commondir names %s, which is no directory here (%v)", gitDir, common, err)
	}
	// git's own back-link: the worktree's directory is one of the common
	// directory's worktrees, and it names this .git file.
	if filepath.Dir(gitDir) != filepath.Join(commonDir, "worktrees") {
		return nil, fmt.Errorf("%s is not one of the worktrees of its common directory %s", gitDir, commonDir)
	}
	back, err := gitLink(filepath.Join(gitDir, "gitdir"), "")
	if err != nil {
		return nil, err
	}
	if !filepath.IsAbs(back) {
		back = filepath.Join(gitDir, back) // git worktree add --relative-paths
	}
	if real, err := filepath.EvalSymlinks(back); err != nil || real != treepath.Real(dotgit) {
		return nil, fmt.Errorf("%s/gitdir names %s, not this worktree's %s", gitDir, back, dotgit)
	}
	if err := looksLikeGitDir(commonDir, "HEAD", "objects", "refs"); err != nil {
		return nil, fmt.Errorf("the common directory %s: %v", commonDir, err)
	}
	g := &kind.GitDirs{GitDir: gitDir, Common: commonDir, Writable: []string{}}
	for _, d := range gitWrites {
		// A directory of its own, never a link that could lead the grant
		// elsewhere.
		if fi, err := os.Lstat(filepath.Join(commonDir, d)); err == nil && fi.IsDir() {
			g.Writable = append(g.Writable, filepath.Join(commonDir, d))
		}
	}
	return g, nil
}

// gitLink reads a one-line file of git's (a .git file, commondir, gitdir)
// and returns what follows prefix on its first line.
func gitLink(path, prefix string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if len(b) > 4096 {
		return "", fmt.Errorf("%s is longer than a git link file", path)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	rest, ok := strings.CutPrefix(strings.TrimRight(string(line), "\r"), prefix)
	if !ok || rest == "" {
		return "", fmt.Errorf("%s does not start %q", path, prefix+"PATH")
	}
	return rest, nil
}

// realDir is p, relative to base when not absolute, with its links
// resolved; an error when it is no directory.
func realDir(p, base string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

// looksLikeGitDir refuses a directory that lacks what git keeps in one.
func looksLikeGitDir(dir string, names ...string) error {
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("it holds no %s, as a git directory does", n)
		}
	}
	return nil
}
